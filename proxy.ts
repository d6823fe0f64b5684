import { NextResponse, type NextRequest } from "next/server";
import { refuseCrossSiteAction } from "@/lib/http/cross-site-actions";
import { refuseMalformedPath } from "@/lib/http/malformed-path";
import { isHttps, newNonce, pageCsp } from "@/lib/http/security-headers";

/**
 * Pages get a Content-Security-Policy with a fresh nonce per request. Next.js reads the nonce from the request's
 * own CSP header and puts it on every script it renders, so the header is set on the request as well as on the
 * response (node_modules/next/dist/docs/01-app/02-guides/content-security-policy.md); pages render dynamically for
 * it (app/layout.tsx). The other security headers, and the CSP of API routes, are static: next.config.ts.
 *
 * A server-action POST from another site is answered here, `403` (lib/http/cross-site-actions.ts), before Next.js
 * refuses it with a `500`.
 */
export function proxy(request: NextRequest): Response {
  // Next.js decodes a dynamic segment before the route runs and answers a malformed one (`%ZZ`) with a bare `500`.
  const malformed = refuseMalformedPath(request);
  if (malformed) return malformed;
  // The job routes are matched only for that check: their answers pass untouched.
  if (request.nextUrl.pathname.startsWith("/api/")) return NextResponse.next();
  const refused = refuseCrossSiteAction(request);
  if (refused) return refused;
  const nonce = newNonce();
  const csp = pageCsp(nonce, {
    development: process.env.NODE_ENV === "development",
    https: isHttps(request.nextUrl, request.headers),
  });
  const headers = new Headers(request.headers);
  headers.set("content-security-policy", csp);
  const response = NextResponse.next({ request: { headers } });
  response.headers.set("Content-Security-Policy", csp);
  return response;
}

export const config = {
  // Pages, and the job routes with an id (GET and DELETE, no body) for the path check: other API routes (their bodies
  // and streams pass untouched), build assets and the favicon are left out.
  matcher: ["/((?!api/|_next/static|_next/image|favicon.ico).*)", "/api/ocr/jobs/:id/:rest*"],
};
