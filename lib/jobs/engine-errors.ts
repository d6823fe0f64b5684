import { ApiError, deadlineError, type ErrorCode } from "@/lib/api/errors";
import { isOcrError, type OcrError, type OcrErrorCode } from "@/lib/ocr/model";
import { isScopeEnded } from "@/lib/request-scope";

/** What of the request the wording of an engine failure depends on (it names request fields; the engine does not). */
export interface EngineRequestOptions {
  /** `options.pages`: a page limit reads differently for a selection than for a whole document. */
  pages?: string;
  /** The request submits an asynchronous job (its limits are the jobs'; no pointer to the jobs route). */
  job?: boolean;
}

/** Where a document too long for one request goes. */
const JOB_HINT =
  "send it as an asynchronous job instead (POST /api/ocr/jobs, or this route with Prefer: respond-async)";

/** Engine code → the API's code (lib/api/error-catalogue.ts, which gives the HTTP status). */
const apiCodes: { readonly [Code in OcrErrorCode]: ErrorCode } = {
  empty_file: "invalid_request",
  unsupported_type: "unsupported_media_type",
  unreadable: "unreadable_document",
  encrypted: "unreadable_document",
  image_too_large: "payload_too_large",
  stream_too_large: "payload_too_large",
  too_many_pages: "payload_too_large",
  out_of_memory: "payload_too_large",
  too_complex: "payload_too_large",
  bad_page_list: "invalid_request",
  unsupported_language: "invalid_request",
  too_many_languages: "invalid_request",
  deadline: "timeout",
  overloaded: "overloaded",
  shutting_down: "unavailable",
  engine_crashed: "internal_error",
  engine_failed: "internal_error",
};

/** What the user reads: the engine's message, with the request field it is about where there is one. */
function userMessage(error: OcrError, options: EngineRequestOptions): { message: string; field?: string } {
  switch (error.code) {
    case "bad_page_list":
      return { message: `options.pages: ${error.message}`, field: "options.pages" };
    case "unsupported_language":
    case "too_many_languages":
      return { message: `options.language: ${error.message}`, field: "options.language" };
    case "too_many_pages": {
      const hint = options.job ? "" : `, or ${JOB_HINT}`;
      if (error.limit === undefined)
        return { message: `${error.message}: choose fewer pages with options.pages${hint}`, field: "options.pages" };
      // The same limit reads differently for a selection the user made and for a whole document they sent.
      const selected = options.pages !== undefined && options.pages.trim() !== "";
      const message = selected
        ? `options.pages selects more than ${error.limit} pages, the limit per ${options.job ? "job" : "request"}${hint ? `; ${JOB_HINT}` : ""}`
        : `${error.message}; choose pages with options.pages (e.g. "1-${error.limit}")${hint}`;
      return { message, field: "options.pages" };
    }
    default:
      return { message: error.message };
  }
}

/**
 * An engine failure (`OcrError`, lib/ocr/model/ocr-error.ts) — or the end of the request's scope (its deadline, or
 * its client cancelling: lib/request-scope.ts) — as the API answers it: catalogued code, user-facing message and, for
 * `overloaded`, the `Retry-After` the engine computed. Anything else is returned as it is.
 */
export function fromEngineError(error: unknown, options: EngineRequestOptions = {}): unknown {
  if (isScopeEnded(error)) {
    return error.why === "deadline"
      ? deadlineError()
      : new ApiError(
          "timeout",
          "The request was cancelled by its client before the document was read; nothing was charged",
          { cause: error },
        );
  }
  if (!isOcrError(error)) return error;
  const headers: Record<string, string> = {};
  if (error.code === "overloaded" && error.retryAfterSeconds !== undefined)
    headers["Retry-After"] = String(error.retryAfterSeconds);
  const { message, field } = userMessage(error, options);
  return new ApiError(apiCodes[error.code], message, { headers, cause: error, field });
}
