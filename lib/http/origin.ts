import { isSecureRequest } from "@/lib/accounts";

/** `host` or `host:port`: a DNS name, an IPv4 address or a bracketed IPv6 address — nothing a shell would read. */
const HOST =
  /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/;

/**
 * This server's origin as the browser reached it (the /docs and settings examples, lib/api-docs/examples.ts), from the request's `Host` and `X-Forwarded-Proto` headers (not
 * from configuration: the snippets must work against the deployment the user is looking at, preview or local). The
 * scheme follows the session cookie's rule (lib/accounts/sessions.ts): https unless the request is plain http to a
 * loopback host — a signed-in user elsewhere is on https, or the Secure cookie would not have been kept. Null when
 * the host is missing or not a plain host name (the snippets are pasted into shells: nothing else goes in them).
 */
export function requestOrigin(headers: { get(name: string): string | null }): string | null {
  const host = headers.get("host")?.trim() ?? "";
  if (!HOST.test(host)) return null;
  const protocol = headers.get("x-forwarded-proto")?.split(",")[0]?.trim().toLowerCase() ?? null;
  return `${isSecureRequest({ protocol, host }) ? "https" : "http"}://${host.toLowerCase()}`;
}
