import type { Store } from "@/lib/store";
import { ALL_SCOPES, LAST_USED_INTERVAL_MS, oauthUrls } from "./config";
import { ACCESS_TOKEN_PREFIX, hashSecret, isSecret } from "./values";

/** The account and grant behind a valid access token. */
export interface AccessTokenIdentity {
  userId: string;
  grantId: string;
  clientId: string;
  scopes: string[];
}

/** Whether a Bearer value is one of our access tokens (not an API key), by its shape alone. */
export function isAccessToken(value: string): boolean {
  return value.startsWith(ACCESS_TOKEN_PREFIX);
}

/**
 * The identity behind an access token presented to `resource`, or why it is refused (the `error_description` of the
 * `401`): malformed, unknown, expired, its app's access revoked, or issued for another resource (RFC 8707: a token is
 * good only where it was meant to be used). One store read, plus the grant's check (which records its use).
 */
export async function authenticateAccessToken(
  store: Store,
  token: string,
  resource: string,
): Promise<AccessTokenIdentity | { refused: string }> {
  if (!isSecret(token, ACCESS_TOKEN_PREFIX)) return { refused: "The access token is malformed" };
  const record = await store.oauth.resolveAccessToken(hashSecret(token), Date.now(), LAST_USED_INTERVAL_MS);
  if (!record) return { refused: "The access token is unknown, expired or revoked: refresh it or sign in again" };
  if (record.resource !== resource) {
    return {
      refused: `The access token was issued for another resource (${record.resource.slice(0, 200)}), not ${resource}`,
    };
  }
  return { userId: record.userId, grantId: record.grantId, clientId: record.clientId, scopes: record.scopes };
}

/** Whether the grant an SSE stream was opened with is still there (the stream closes once it is revoked). */
export async function isGrantActive(store: Store, userId: string, grantId: string): Promise<boolean> {
  return store.oauth.isGrantActive(userId, grantId);
}

/** A `"`-free rendering of a challenge parameter (RFC 9110 quoted-string; descriptions are ours, but be safe). */
const quoted = (value: string) => `"${value.replace(/["\\\r\n]/g, " ")}"`;

/**
 * The `WWW-Authenticate` challenge of the MCP endpoint (RFC 6750 §3, RFC 9728 §5.1): where its metadata is and the
 * scopes to ask for; with `error` and `error_description` when a token was presented and refused
 * (`invalid_token`), or lacks a scope (`insufficient_scope`, with the scopes it needs).
 */
export function bearerChallenge(
  origin: string,
  problem?: { error: "invalid_token" | "insufficient_scope"; description: string; scopes?: readonly string[] },
): string {
  const parts = [
    `resource_metadata=${quoted(oauthUrls(origin).resourceMetadata)}`,
    `scope=${quoted((problem?.scopes ?? ALL_SCOPES).join(" "))}`,
  ];
  if (problem) parts.push(`error=${quoted(problem.error)}`, `error_description=${quoted(problem.description)}`);
  return `Bearer ${parts.join(", ")}`;
}
