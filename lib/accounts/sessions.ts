import "server-only"; // creates and resolves session tokens: never in a client bundle (Next fails the build)
import { createHash, randomBytes } from "node:crypto";
import type { Store } from "@/lib/store";
import { getAccount, type Account } from "./accounts";

export const SESSION_COOKIE = "ocr_session";
/** Sessions last 30 days from sign-in. */
export const SESSION_TTL_MS = 30 * 24 * 60 * 60 * 1000;

/** Session ids are 32 random bytes; the store only ever sees their SHA-256, so a store dump holds no sessions. */
const storageKey = (sessionId: string) => createHash("sha256").update(sessionId).digest("hex");
const SESSION_ID = /^[A-Za-z0-9_-]{43}$/;

interface NewSession {
  /** Goes into the cookie and nowhere else (never logged). */
  id: string;
  expiresAt: Date;
}

export async function createSession(store: Store, userId: string, ttlMs = SESSION_TTL_MS): Promise<NewSession> {
  const id = randomBytes(32).toString("base64url");
  const now = new Date();
  const expiresAt = new Date(now.getTime() + ttlMs);
  await store.accounts.createSession(
    storageKey(id),
    { userId, createdAt: now.toISOString(), expiresAt: expiresAt.toISOString() },
    ttlMs,
  );
  return { id, expiresAt };
}

/** The account behind a session id, or null (unknown, expired, signed out, malformed). */
export async function getSessionAccount(store: Store, sessionId: string | undefined): Promise<Account | null> {
  if (!sessionId || !SESSION_ID.test(sessionId)) return null;
  const session = await store.accounts.getSession(storageKey(sessionId));
  if (!session || Date.parse(session.expiresAt) <= Date.now()) return null;
  return getAccount(store, session.userId);
}

export async function deleteSession(store: Store, sessionId: string | undefined): Promise<void> {
  if (!sessionId || !SESSION_ID.test(sessionId)) return;
  await store.accounts.deleteSession(storageKey(sessionId));
}

/**
 * Cookie attributes for the session: HttpOnly, SameSite=Lax, path `/`, an expiry, and Secure everywhere except
 * plain-http development on this machine (browsers drop Secure cookies set over http by non-localhost hosts).
 */
export function sessionCookieOptions({ expiresAt, secure }: { expiresAt: Date; secure: boolean }) {
  return { httpOnly: true, secure, sameSite: "lax" as const, path: "/", expires: expiresAt };
}

/** Secure unless the request is plain http to a loopback host (`next dev` on localhost, the browser test). */
export function isSecureRequest({ protocol, host }: { protocol: string | null; host: string | null }): boolean {
  if (protocol === "https") return true;
  const hostname = (host ?? "").replace(/:\d+$/, "").replace(/^\[|\]$/g, "");
  const loopback =
    hostname === "localhost" || hostname === "::1" || hostname.startsWith("127.") || hostname.endsWith(".localhost");
  return !loopback;
}
