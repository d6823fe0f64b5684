/**
 * The API key of a REST request: header `x-api-key`, else `Authorization: Bearer <key>` (SPEC.md, Authentication).
 * The first carrier present is the one used: a wrong `x-api-key` is not rescued by a good Bearer token. The
 * `api_key` query parameter is deliberately not read here (only `/api/mcp` accepts it: URLs end up in logs).
 * An empty header counts as absent.
 */
export function readApiKey(headers: Headers): string | null {
  const header = headers.get("x-api-key")?.trim();
  if (header) return header;
  const authorization = headers.get("authorization")?.trim();
  if (!authorization) return null;
  const match = /^Bearer[ \t]+(\S+)$/i.exec(authorization);
  return match ? match[1]! : null;
}

/** Whether the request carries an `Authorization` header with a scheme other than Bearer (for a clearer 401). */
export function hasNonBearerAuthorization(headers: Headers): boolean {
  const authorization = headers.get("authorization")?.trim();
  return Boolean(authorization) && !/^Bearer[ \t]/i.test(authorization!);
}
