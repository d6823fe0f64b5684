/**
 * The API key of a request, by the documented precedence (docs/api.md#authentication): header `x-api-key`, else
 * `Authorization: Bearer <key>`, else — only when `queryUrl` is given, which `/api/mcp` alone does, because URLs
 * end up in logs — the `api_key` query parameter. The first carrier present is the one used: a wrong `x-api-key`
 * is not rescued by a good Bearer token. An empty header counts as absent.
 */
export function readApiKey(headers: Headers, queryUrl?: string): string | null {
  return readCredential(headers, queryUrl)?.value ?? null;
}

/** Where a credential came from: it decides how its refusal is answered on `/api/mcp` (see `withApiKey`). */
export type CredentialCarrier = "x-api-key" | "bearer" | "query";

/**
 * `readApiKey` with the carrier it was found in. An `Authorization` header that is present but not `Bearer <value>`
 * yields null (the first carrier present is the one used).
 */
export function readCredential(
  headers: Headers,
  queryUrl?: string,
): { value: string; carrier: CredentialCarrier } | null {
  const header = headers.get("x-api-key")?.trim();
  if (header) return { value: header, carrier: "x-api-key" };
  const authorization = headers.get("authorization")?.trim();
  if (authorization) {
    const match = /^Bearer[ \t]+(\S+)$/i.exec(authorization);
    return match ? { value: match[1]!, carrier: "bearer" } : null;
  }
  if (queryUrl === undefined) return null;
  try {
    const value = new URL(queryUrl).searchParams.get("api_key")?.trim();
    return value ? { value, carrier: "query" } : null;
  } catch {
    return null;
  }
}

/**
 * Why a request has no usable key, as the `401` says it: an `Authorization` header that is not `Bearer <key>`
 * (another scheme, `Bearer` with nothing after it, or more than one token) is named as such rather than reported as
 * a missing key, so a client's header bug is found at once.
 */
export function missingKeyMessage(headers: Headers, signIn = false): string {
  const authorization = headers.get("authorization")?.trim();
  if (authorization) {
    const [scheme = "", ...rest] = authorization.split(/[ \t]+/);
    if (!/^Bearer$/i.test(scheme)) {
      return `Unsupported Authorization scheme "${scheme.slice(0, 20)}": send Authorization: Bearer <key> or x-api-key: <key>`;
    }
    if (rest.length === 0)
      return 'Malformed Authorization header: the key is missing after "Bearer" (send Authorization: Bearer <key>)';
    return 'Malformed Authorization header: expected exactly "Bearer <key>", with one key and nothing after it';
  }
  if (signIn) {
    return "Missing credentials: sign in (MCP clients that support OAuth start it from this 401), or send an API key as x-api-key: <key> or Authorization: Bearer <key>";
  }
  return "Missing API key: send it as x-api-key: <key> or Authorization: Bearer <key>";
}
