/**
 * The API key of a request, by SPEC's precedence (Authentication): header `x-api-key`, else
 * `Authorization: Bearer <key>`, else — only when `queryUrl` is given, which `/api/mcp` alone does, because URLs
 * end up in logs — the `api_key` query parameter. The first carrier present is the one used: a wrong `x-api-key`
 * is not rescued by a good Bearer token. An empty header counts as absent.
 */
export function readApiKey(headers: Headers, queryUrl?: string): string | null {
  const header = headers.get("x-api-key")?.trim();
  if (header) return header;
  const authorization = headers.get("authorization")?.trim();
  if (authorization) {
    const match = /^Bearer[ \t]+(\S+)$/i.exec(authorization);
    return match ? match[1]! : null;
  }
  if (queryUrl === undefined) return null;
  try {
    return new URL(queryUrl).searchParams.get("api_key")?.trim() || null;
  } catch {
    return null;
  }
}

/** Whether the request carries an `Authorization` header with a scheme other than Bearer (for a clearer 401). */
export function hasNonBearerAuthorization(headers: Headers): boolean {
  const authorization = headers.get("authorization")?.trim();
  return Boolean(authorization) && !/^Bearer[ \t]/i.test(authorization!);
}
