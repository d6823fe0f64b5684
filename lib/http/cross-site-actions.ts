import { ApiError, toErrorResponse } from "@/lib/api/errors";
import { logRequest } from "./log";
import { newRequestId } from "./request-id";

/**
 * Server actions (the sign-in and settings forms) are POSTs to a page that Next.js runs only when the `Origin` header
 * names the host the request was sent to (`X-Forwarded-Host`, else `Host`): its protection against cross-site request
 * forgery. A mismatch is refused, but as a thrown error — `500` and a stack in the log, for every forged form a
 * scanner posts. proxy.ts answers those requests first with `403 forbidden` and the API's error body.
 *
 * The test mirrors Next's (node_modules/next/dist/server/app-render/action-handler.ts, `handleAction`): a POST with a
 * `Next-Action` header or a multipart body whose `Origin` is present and names another host (or is `null`, or is
 * not a URL). No `Origin` at all is let through, as Next does (browsers send it on every cross-site POST). Next's
 * `serverActions.allowedOrigins` is not configured here; setting it would need the same list in this test.
 */
export function refuseCrossSiteAction(request: Request): Response | null {
  if (request.method !== "POST") return null;
  const contentType = request.headers.get("content-type");
  // Next never runs a URL-encoded post as an action (nor checks its origin).
  if (contentType === "application/x-www-form-urlencoded") return null;
  const possibleAction =
    request.headers.has("next-action") || (contentType?.startsWith("multipart/form-data") ?? false);
  const origin = request.headers.get("origin");
  if (!possibleAction || origin === null) return null;
  const host = request.headers.get("x-forwarded-host")?.split(",")[0]?.trim() || request.headers.get("host");
  if (host && originHost(origin) === host) return null;

  const receivedAt = Date.now();
  const requestId = newRequestId();
  const error = new ApiError(
    "forbidden",
    "This form was posted from another site: the service accepts its forms only from its own pages. Open the page on this site and submit it there.",
  );
  const response = toErrorResponse(error, requestId, { "Cache-Control": "no-store" });
  logRequest({
    requestId,
    method: request.method,
    path: new URL(request.url).pathname.slice(0, 200),
    status: response.status,
    ms: Date.now() - receivedAt,
    code: error.code,
  });
  return response;
}

/** The `host` of an `Origin` value the way Next.js reads it: `null` stays `null`, anything unparsable matches nothing. */
function originHost(origin: string): string | undefined {
  if (origin === "null") return "null";
  try {
    return new URL(origin).host;
  } catch {
    return undefined;
  }
}
