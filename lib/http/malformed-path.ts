import { ApiError, toErrorResponse } from "@/lib/api/errors";
import { logRequest } from "./log";
import { newRequestId } from "./request-id";
import { API_CSP, COMMON_SECURITY_HEADERS } from "./security-headers";

/**
 * A path whose percent-encoding is malformed (`/api/ocr/jobs/%ZZ`, `/settings/jobs/%ZZ/result`): Next.js fails to
 * decode its dynamic segment before any route runs and answers a bare `500` — no error body, request id or security
 * headers. proxy.ts answers it first: `400 invalid_request` with the API's error body and the headers every answer
 * carries. Null for a path that decodes.
 */
export function refuseMalformedPath(request: Request): Response | null {
  const pathname = new URL(request.url).pathname;
  try {
    decodeURIComponent(pathname);
    return null;
  } catch {
    // fall through: refused below
  }
  const receivedAt = Date.now();
  const requestId = newRequestId();
  const error = new ApiError(
    "invalid_request",
    "The path is not valid percent-encoding (a % must be followed by two hex digits)",
  );
  const response = toErrorResponse(error, requestId, {
    ...COMMON_SECURITY_HEADERS,
    "Content-Security-Policy": API_CSP,
    "Cache-Control": "no-store",
    "x-request-id": requestId,
    // As every API answer (no credentials are involved: it is an error).
    "Access-Control-Allow-Origin": "*",
    "Access-Control-Expose-Headers": "x-request-id",
  });
  logRequest({
    requestId,
    method: request.method,
    path: pathname.slice(0, 200),
    status: response.status,
    ms: Date.now() - receivedAt,
    code: error.code,
  });
  return response;
}
