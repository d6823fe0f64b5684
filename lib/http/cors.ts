/*
 * CORS for `/api/*` (docs/api.md#cors): any origin, because keys in headers (not cookies) authenticate, so a
 * page on another origin can only do what the key it already holds allows.
 */

/** Request headers a browser may send (docs/api.md#cors). */
export const CORS_ALLOW_HEADERS = [
  "content-type",
  "authorization",
  "x-api-key",
  "mcp-session-id",
  "mcp-protocol-version",
  "last-event-id",
  "idempotency-key",
  "prefer",
] as const;

/** Response headers a browser script may read (docs/api.md#headers; `ratelimit-*` spelled out, the header takes no wildcards). */
export const CORS_EXPOSE_HEADERS = [
  "mcp-session-id",
  "x-request-id",
  "ratelimit-limit",
  "ratelimit-remaining",
  "ratelimit-reset",
  "retry-after",
  "x-credits-remaining",
  "location",
  "link",
  "preference-applied",
] as const;

/** How long a browser may cache a preflight answer (seconds). */
const CORS_MAX_AGE = 86_400;

/** The headers every `/api/*` response carries. */
export function corsHeaders(): Record<string, string> {
  return {
    "Access-Control-Allow-Origin": "*",
    "Access-Control-Expose-Headers": CORS_EXPOSE_HEADERS.join(", "),
  };
}

/** The extra headers of a preflight answer for a path that serves `methods`. */
export function preflightHeaders(methods: readonly string[]): Record<string, string> {
  return {
    ...corsHeaders(),
    "Access-Control-Allow-Methods": methods.join(", "),
    "Access-Control-Allow-Headers": CORS_ALLOW_HEADERS.join(", "),
    "Access-Control-Max-Age": String(CORS_MAX_AGE),
  };
}

/** Set every header of `extra` on `headers` (later calls win). */
export function setHeaders(headers: Headers, extra: Record<string, string>): Headers {
  for (const [name, value] of Object.entries(extra)) headers.set(name, value);
  return headers;
}
