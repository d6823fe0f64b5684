import { z } from "zod";
import { errorCatalogue, errorCodes, type ErrorCode } from "@/lib/api/error-catalogue";

export type { ErrorCode } from "@/lib/api/error-catalogue";

/** Error code → HTTP status, from the catalogue (lib/api/error-catalogue.ts). */
export const errorStatus = Object.fromEntries(errorCodes.map((code) => [code, errorCatalogue[code].status])) as {
  readonly [Code in ErrorCode]: (typeof errorCatalogue)[Code]["status"];
};

export const errorCodeSchema = z.enum(errorCodes as [ErrorCode, ...ErrorCode[]]);

export const errorBodySchema = z.object({
  success: z.literal(false),
  error: z.object({ code: errorCodeSchema, message: z.string() }),
  requestId: z.string(),
});
export type ErrorBody = z.infer<typeof errorBodySchema>;

interface ApiErrorOptions {
  /** Extra response headers, e.g. `Retry-After` or `Allow`. */
  headers?: Record<string, string>;
  cause?: unknown;
  /** See `ApiError.field`. */
  field?: string;
}

/**
 * The brand of an `ApiError`. Next bundles this module into several chunks (routes, `instrumentation.ts`, the
 * engine), each with its own copy of the class, so `instanceof` fails across them: a deadline error thrown by the
 * pool that instrumentation created answered `500` instead of `504`. Errors are recognised by this registered
 * symbol instead, which every copy shares.
 */
const API_ERROR_BRAND = Symbol.for("ocr-service.api-error");

/** A failure with a catalogued error code (lib/api/error-catalogue.ts). Thrown anywhere; turned into HTTP only by `toErrorResponse`. */
export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly headers: Record<string, string>;
  /**
   * The request field the message is about and names, as REST calls it (`image`, `imageUrl`, `options.pages`):
   * the MCP tool, whose arguments are named otherwise, says it in its own terms (lib/mcp/tool-terms.ts).
   */
  readonly field: string | undefined;
  readonly [API_ERROR_BRAND] = true;

  constructor(code: ErrorCode, message: string, options: ApiErrorOptions = {}) {
    super(message, { cause: options.cause });
    this.name = "ApiError";
    this.code = code;
    this.headers = options.headers ?? {};
    this.field = options.field;
  }

  get status(): number {
    return errorStatus[this.code];
  }
}

/** True for an `ApiError` from any copy of this module (see `API_ERROR_BRAND`); never use `instanceof ApiError`. */
export function isApiError(error: unknown): error is ApiError {
  if (typeof error !== "object" || error === null) return false;
  const candidate = error as { [API_ERROR_BRAND]?: unknown; code?: unknown };
  return (
    candidate[API_ERROR_BRAND] === true &&
    typeof candidate.code === "string" &&
    Object.hasOwn(errorStatus, candidate.code)
  );
}

/** Seconds a client should wait after a `503` that names no better figure. */
const DEFAULT_RETRY_AFTER_S = 5;

/** One readable line for a schema violation: `options.format: Invalid option: expected one of …`. */
export function describeZodError(error: z.ZodError): string {
  const issue = error.issues[0];
  if (!issue) return "Invalid request";
  const path = issue.path.map(String).join(".");
  const more = error.issues.length > 1 ? ` (and ${error.issues.length - 1} more)` : "";
  return `${path ? `${path}: ` : ""}${issue.message}${more}`;
}

/** Normalize anything thrown into an ApiError; unknown errors become a generic `internal_error`. */
export function toApiError(error: unknown): ApiError {
  if (isApiError(error)) return error;
  if (error instanceof z.ZodError) {
    const field = error.issues[0]?.path.map(String).join(".") || undefined;
    return new ApiError("invalid_request", describeZodError(error), { cause: error, field });
  }
  return new ApiError("internal_error", "Internal error", { cause: error });
}

/**
 * `error` marked as being about request field `field` (`ApiError.field`) when it is an ApiError that names no field
 * yet: for callers that know which field they handed to code that does not (lib/input decodes "the file").
 */
export function aboutField(error: unknown, field: string): unknown {
  if (!isApiError(error) || error.field !== undefined) return error;
  return new ApiError(error.code, error.message, { headers: error.headers, cause: error.cause, field });
}

function errorBody(error: ApiError, requestId: string): ErrorBody {
  return { success: false, error: { code: error.code, message: error.message }, requestId };
}

/** The only place errors become HTTP responses. Details of unexpected errors go to the log, never the body. */
export function toErrorResponse(error: unknown, requestId: string, headers: HeadersInit = {}): Response {
  const apiError = toApiError(error);
  if (apiError.code === "internal_error") {
    const cause = apiError.cause ?? error;
    console.error(`[${requestId}] internal error:`, cause instanceof Error ? (cause.stack ?? cause.message) : cause);
  }
  const responseHeaders = new Headers(headers);
  for (const [name, value] of Object.entries(apiError.headers)) responseHeaders.set(name, value);
  // Every 503 (`overloaded`, `unavailable`) says when to come back.
  if (apiError.status === 503 && !responseHeaders.has("retry-after"))
    responseHeaders.set("retry-after", String(DEFAULT_RETRY_AFTER_S));
  responseHeaders.set("x-request-id", requestId);
  if (apiError.code === "unauthorized" && !responseHeaders.has("www-authenticate")) {
    responseHeaders.set("www-authenticate", 'Bearer realm="ocr"');
  }
  return Response.json(errorBody(apiError, requestId), { status: apiError.status, headers: responseHeaders });
}

/** The `504 timeout` of work that the request's deadline overtook (one wording wherever it is detected). */
export function deadlineError(): ApiError {
  return new ApiError("timeout", "The request deadline passed before the document was read");
}

/** An ApiError's code, or undefined: for `errorLabel` (lib/error-log.ts) where only our own codes may be logged. */
export function apiCode(error: unknown): string | undefined {
  return isApiError(error) ? error.code : undefined;
}
