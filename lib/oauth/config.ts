import { isSecureRequest } from "@/lib/accounts";
import type { Env } from "@/lib/env";
import { configuredOrigin } from "@/lib/service-origin";

/*
 * The authorization server's lifetimes, scopes and addresses (docs/mcp.md#sign-in-with-oauth, docs/security.md).
 */

/** An authorization code is redeemed by the client right after the redirect: one minute is plenty (RFC 6749 §4.1.2). */
export const CODE_TTL_S = 60;
/** Access tokens are short-lived; clients refresh them. */
export const ACCESS_TOKEN_TTL_S = 3_600;
/** A refresh token is rotated at every use; an app unused this long signs in again. */
export const REFRESH_TOKEN_TTL_S = 30 * 24 * 3_600;
/** A registration (RFC 7591) never authorized by anyone is forgotten after a day. */
export const UNUSED_REGISTRATION_TTL_MS = 24 * 3_600_000;
/** A Client ID Metadata Document is fetched again after an hour. */
export const CLIENT_METADATA_CACHE_MS = 3_600_000;
/** Registrations accepted per client address per hour. */
export const REGISTRATIONS_PER_ADDRESS_PER_HOUR = 20;
/** A grant's last use is written at most this often. */
export const LAST_USED_INTERVAL_MS = 60_000;
/**
 * Largest Client ID Metadata Document read (and so, about, the most one cached document holds): real ones are well
 * under a kilobyte (a name, a few redirect URIs).
 */
export const CLIENT_METADATA_MAX_BYTES = 5_120;
/**
 * Client ID Metadata Documents fetched per client address per hour (lookups the cache answers are free): a sign-in
 * needs one. Each costs an outbound fetch and a cached document, asked for by whoever sends `/oauth/authorize` — no
 * sign-in needed (issue 39).
 */
export const CLIENT_METADATA_FETCHES_PER_ADDRESS_PER_HOUR = 30;
/**
 * Documents newly cached per hour, all clients together (each kept an hour: so at most about twice this many at any
 * time, of at most `CLIENT_METADATA_MAX_BYTES` each — ~20 MB). Past it a document is used without being kept.
 */
export const MAX_CACHED_CLIENT_DOCUMENTS_PER_HOUR = 2_000;
/** Budget for fetching one. */
export const CLIENT_METADATA_TIMEOUT_MS = 5_000;

/** The scopes, and what the consent page says each lets an app do. */
export const SCOPES = {
  "documents:read": "Read documents with your credits (extract_text, and the text of the jobs it starts)",
  "jobs:manage": "List and cancel your jobs (MCP tasks/list and tasks/cancel)",
} as const;
export type Scope = keyof typeof SCOPES;
export const ALL_SCOPES = Object.keys(SCOPES) as Scope[];

/** The service's OAuth addresses under `origin` (scheme and host, no trailing slash). */
export function oauthUrls(origin: string) {
  return {
    issuer: origin,
    /** The protected resource (RFC 8707, RFC 9728): the MCP endpoint. */
    resource: `${origin}/api/mcp`,
    resourceMetadata: `${origin}/.well-known/oauth-protected-resource/api/mcp`,
    authorization: `${origin}/oauth/authorize`,
    token: `${origin}/oauth/token`,
    registration: `${origin}/oauth/register`,
    revocation: `${origin}/oauth/revoke`,
    documentation: `${origin}/docs#mcp`,
  };
}

/** `host` or `host:port`: a DNS name, an IPv4 address or a bracketed IPv6 address. */
const HOST =
  /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/;

/**
 * This service's origin for a request (a route's `Request`, or a page's headers): `SERVICE_URL` when the operator set
 * it (lib/service-origin.ts). Otherwise the name the browser or client addressed — `X-Forwarded-Host`, else `Host`
 * (else the URL's) — and https unless the request is plain http to a loopback host — the session cookie's rule
 * (lib/accounts/sessions.ts): off this machine the site works only over https. The issuer, the resource and the
 * metadata documents are built from it, so a deployment answers for its own name (previews, custom domains); a token
 * is bound to the resource it was issued for and refused under any other name.
 *
 * `X-Forwarded-Host` first, so that every step of a sign-in sees one origin (issue 39): Next.js sets it to the
 * request's `Host` when none came, and a page Next renders after a server action's redirect (sign-in → back to
 * `/oauth/authorize`) is fetched by Next itself from the address the server listens on — `Host: 0.0.0.0:3000` under
 * `npm start` — with the original request's headers, `X-Forwarded-Host` among them. A proxy in front sets it to the
 * public name. docs/deploy.md#oauth: a self-hosted server behind anything else sets `SERVICE_URL`.
 *
 * The request-derived fallback is safe because it only names things back to the client that sent the headers: it
 * goes into metadata documents (`Vary` on the headers), challenges and the audience a token is checked against (a
 * token issued under a forged name is refused under the real one), never into a call the server makes nor anything
 * it signs (lib/jobs/workers.ts takes `selfOrigin()` from configuration only).
 */
export function serviceOrigin(env: Env, source: Request | Headers): string {
  const configured = configuredOrigin(env);
  if (configured) return configured;
  const headers = source instanceof Headers ? source : source.headers;
  const url = source instanceof Headers ? null : new URL(source.url);
  const forwarded = headers.get("x-forwarded-host")?.split(",")[0]?.trim() ?? "";
  const header = HOST.test(forwarded) ? forwarded : (headers.get("host")?.trim() ?? "");
  const host = HOST.test(header) ? header.toLowerCase() : (url?.host ?? "localhost");
  const protocol =
    headers.get("x-forwarded-proto")?.split(",")[0]?.trim().toLowerCase() ?? url?.protocol.slice(0, -1) ?? null;
  return `${isSecureRequest({ protocol, host }) ? "https" : "http"}://${host}`;
}

/**
 * Where the sign-in page may send the browser back to (`/signin?next=…`): only the authorization page of this site,
 * as a path — never another site, `//host`, a backslash trick or a scheme (no open redirect). Null otherwise.
 */
export function signInReturnPath(value: unknown): string | null {
  if (typeof value !== "string" || value.length > 8_192) return null;
  if (!/^\/oauth\/authorize(\?[^\\\s]*)?$/.test(value)) return null;
  return value;
}
