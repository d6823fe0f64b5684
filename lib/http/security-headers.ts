/**
 * Security headers of every response (docs/security.md). Pages get a Content-Security-Policy with a fresh nonce per
 * request (proxy.ts sets it on the request too, which is how Next.js finds the nonce for its own scripts); API routes
 * get one that allows nothing to run or frame them. Everything else is the same on every path.
 */

/** Browser features no page of ours uses: denied to the page and to anything it could embed. */
const PERMISSIONS_POLICY = [
  "accelerometer=()",
  "autoplay=()",
  "browsing-topics=()",
  "camera=()",
  "display-capture=()",
  "geolocation=()",
  "gyroscope=()",
  "magnetometer=()",
  "microphone=()",
  "midi=()",
  "payment=()",
  "usb=()",
].join(", ");

/** HSTS for a year; without includeSubDomains, since a deployment does not own its parent domain's other hosts. */
export const HSTS = "max-age=31536000";

/** The CSP of API responses (JSON, SSE): nothing may run, load or frame. */
export const API_CSP = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

/**
 * The CSP of a page: scripts only with this request's nonce (`strict-dynamic` lets Next's own chunks load theirs),
 * styles and everything else from this origin, no plugins, no framing, forms post only here. Over https, insecure
 * subresource URLs are upgraded. Development only: `'unsafe-eval'` for scripts (React's error stacks) and inline
 * styles (Next's dev overlay styles its elements inline, hundreds of violations otherwise); production is strict.
 */
export function pageCsp(nonce: string, { development, https }: { development: boolean; https: boolean }): string {
  return [
    "default-src 'self'",
    `script-src 'self' 'nonce-${nonce}' 'strict-dynamic'${development ? " 'unsafe-eval'" : ""}`,
    development ? "style-src 'self' 'unsafe-inline'" : `style-src 'self' 'nonce-${nonce}'`,
    "img-src 'self' data: blob:",
    "font-src 'self'",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
    ...(https ? ["upgrade-insecure-requests"] : []),
  ].join("; ");
}

/** Headers every response carries, whatever its path (and `Strict-Transport-Security: HSTS` over https). */
export const COMMON_SECURITY_HEADERS: Readonly<Record<string, string>> = {
  "X-Content-Type-Options": "nosniff",
  "X-Frame-Options": "DENY",
  "Referrer-Policy": "strict-origin-when-cross-origin",
  "Permissions-Policy": PERMISSIONS_POLICY,
  "Cross-Origin-Opener-Policy": "same-origin",
};

/** Whether the request reached us over https: its own URL, or the scheme a proxy in front reports. */
export function isHttps(url: URL, headers: Headers): boolean {
  if (url.protocol === "https:") return true;
  return headers.get("x-forwarded-proto")?.split(",")[0]?.trim().toLowerCase() === "https";
}

/** A fresh nonce: 16 random bytes, base64. */
export function newNonce(): string {
  return Buffer.from(crypto.getRandomValues(new Uint8Array(16))).toString("base64");
}
