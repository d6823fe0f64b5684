import "server-only"; // reads and sets the session cookie: never in a client bundle (Next fails the build)
import { cookies, headers } from "next/headers";
import { clientAddress, clientAddressOptions } from "@/lib/client-ip";
import { getEnv } from "@/lib/env";
import { getStore } from "@/lib/store";
import type { Account } from "./accounts";

/*
 * The edge between a page or server action and the layers below, as `withApiKey` is for a route: Next hands a server
 * component no request object (its cookies and headers come from next/headers), so this module takes the process's
 * store and configuration here, once per call, and passes them down to lib/accounts/sessions.ts and lib/client-ip.ts.
 */
import {
  SESSION_COOKIE,
  createSession,
  deleteSession,
  getSessionAccount,
  isSecureRequest,
  sessionCookieOptions,
} from "./sessions";

/** The signed-in account of the current request (server components and server actions), or null. */
export async function getCurrentAccount(): Promise<Account | null> {
  const jar = await cookies();
  return getSessionAccount(getStore(), jar.get(SESSION_COOKIE)?.value);
}

/** Start a session for `userId` and set its cookie (server actions only: cookies are read-only while rendering). */
export async function startSession(userId: string): Promise<void> {
  const session = await createSession(getStore(), userId);
  const jar = await cookies();
  jar.set(SESSION_COOKIE, session.id, sessionCookieOptions({ expiresAt: session.expiresAt, secure: await isSecure() }));
}

/** Delete the current session in the store and its cookie. */
export async function endSession(): Promise<void> {
  const jar = await cookies();
  const sessionId = jar.get(SESSION_COOKIE)?.value;
  jar.delete(SESSION_COOKIE);
  await deleteSession(getStore(), sessionId);
}

async function isSecure(): Promise<boolean> {
  const list = await headers();
  return isSecureRequest({
    protocol: list.get("x-forwarded-proto")?.split(",")[0]?.trim() ?? null,
    host: list.get("x-forwarded-host") ?? list.get("host"),
  });
}

/** The client's address for the sign-up and sign-in limits: the one trusted address (lib/client-ip.ts). */
export async function getClientAddress(): Promise<string | undefined> {
  return clientAddress(await headers(), clientAddressOptions(getEnv()));
}
