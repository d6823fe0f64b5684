"use server";

// CSRF: see app/actions/auth.ts (Next's Origin check on every action, and the SameSite=Lax session cookie). The
// consent form's fields are checked again from scratch (lib/oauth answerAuthorization): they come from the browser.

import { revalidatePath } from "next/cache";
import { headers } from "next/headers";
import { redirect } from "next/navigation";
import { getCurrentAccount } from "@/lib/accounts/current";
import { addressLimitKey, clientAddress, clientAddressOptions } from "@/lib/client-ip";
import { answerAuthorization, revokeConnectedApp, serviceOrigin } from "@/lib/oauth";
import { configuredAllowList } from "@/lib/input";
import { services } from "@/lib/services";

/** The authorization request's parameters the consent form carries back. */
const REQUEST_FIELDS = [
  "client_id",
  "redirect_uri",
  "response_type",
  "state",
  "scope",
  "code_challenge",
  "code_challenge_method",
  "resource",
];

/** The consent page's answer: back to the app with a code (Allow) or `access_denied` (Deny). */
export async function consentAction(formData: FormData): Promise<void> {
  const params = new URLSearchParams();
  for (const name of REQUEST_FIELDS) {
    const value = formData.get(name);
    if (typeof value === "string") params.set(name, value);
  }
  const account = await getCurrentAccount();
  if (!account) redirect(`/signin?next=${encodeURIComponent(`/oauth/authorize?${params}`)}`);
  const { env, store } = services();
  const requestHeaders = await headers();
  const answer = await answerAuthorization(store, params, {
    userId: account.id,
    origin: serviceOrigin(env, requestHeaders),
    allowed: formData.get("decision") === "allow",
    allowHosts: configuredAllowList(env),
    address: addressLimitKey(clientAddress(requestHeaders, clientAddressOptions(env))),
  });
  if (answer.kind === "redirect") redirect(answer.location);
  // A request that no longer holds is shown as the authorization page shows it; so is a denial the browser is not sent
  // back with by itself (its address is not loopback: lib/oauth denyAuthorization).
  const denied = formData.get("decision") !== "allow" ? "&denied=1" : "";
  redirect(`/oauth/authorize?${params}${denied}`);
}

/** Settings → Connected apps → Revoke: the app's tokens stop working at once. */
export async function revokeAppAction(formData: FormData): Promise<void> {
  const account = await getCurrentAccount();
  if (!account) redirect("/signin");
  // Only the signed-in user's own apps: the store looks the grant up under account.id.
  await revokeConnectedApp(services().store, {
    userId: account.id,
    grantId: String(formData.get("grantId") ?? ""),
  });
  revalidatePath("/settings");
}
