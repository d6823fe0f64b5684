/**
 * The engine's own errors. The engine knows documents, pages, processes and deadlines — not HTTP, request bodies or
 * response headers: its callers decide what a failure means to their users (lib/jobs/engine-errors.ts maps these codes
 * to the API's, with its statuses, `Retry-After` and the wording that names request fields).
 */
export const ocrErrorCodes = [
  /** The file has no bytes. */
  "empty_file",
  /** The bytes are none of the types the engine reads. */
  "unsupported_type",
  /** The file is corrupt, truncated or has nothing to read (no pages, no pixels). */
  "unreadable",
  /** The PDF needs a password. */
  "encrypted",
  /** An image (a file, or one drawn in a PDF) has more pixels than the limit. */
  "image_too_large",
  /** A PDF stream inflates to more than the limit. */
  "stream_too_large",
  /** The document, or the page selection, has more pages than the limit (`limit`). */
  "too_many_pages",
  /** Reading one page needed more memory than an engine process may use. */
  "out_of_memory",
  /**
   * A PDF needs more work than the limits allow: a page drawing more operations or nesting forms deeper than the
   * limit, or opening the file or drawing a page taking more processor time than the limit.
   */
  "too_complex",
  /** A page selection that is not a page list, or names pages the document does not have. */
  "bad_page_list",
  /** A language that is not installed, or not a language code. */
  "unsupported_language",
  /** More languages at once than a reading takes. */
  "too_many_languages",
  /** The deadline passed before the work was done. */
  "deadline",
  /** No engine process could take the work in time (`retryAfterSeconds` when the engine can tell). */
  "overloaded",
  /** The engine is stopping and takes no more work. */
  "shutting_down",
  /** An engine process or thread died under a job. */
  "engine_crashed",
  /** The engine could not run the job (not built, could not start, an unexpected failure). */
  "engine_failed",
] as const;

export type OcrErrorCode = (typeof ocrErrorCodes)[number];

export interface OcrErrorOptions {
  cause?: unknown;
  /** `overloaded`: seconds until the engine expects to have room. */
  retryAfterSeconds?: number;
  /** `too_many_pages`: the most pages one reading takes. */
  limit?: number;
}

/** What of an `OcrError` crosses the process boundary (lib/ocr/model/protocol.ts): its cause stays behind. */
export interface OcrErrorData {
  code: OcrErrorCode;
  message: string;
  retryAfterSeconds?: number;
  limit?: number;
}

/**
 * The brand of an `OcrError`: the server and the engine bundle (and Next's chunks) each carry their own copy of this
 * class, so `instanceof` fails across them. Errors are recognised by this registered symbol, which every copy shares
 * (the same reason as `ApiError`'s brand in lib/api/errors.ts).
 */
const OCR_ERROR_BRAND = Symbol.for("ocr-service.ocr-error");

const codeSet: ReadonlySet<string> = new Set(ocrErrorCodes);

/** A failure of the engine, with an engine code. Never turned into HTTP here. */
export class OcrError extends Error {
  readonly code: OcrErrorCode;
  readonly retryAfterSeconds?: number;
  readonly limit?: number;
  readonly [OCR_ERROR_BRAND] = true;

  constructor(code: OcrErrorCode, message: string, options: OcrErrorOptions = {}) {
    super(message, { cause: options.cause });
    this.name = "OcrError";
    this.code = code;
    if (options.retryAfterSeconds !== undefined) this.retryAfterSeconds = options.retryAfterSeconds;
    if (options.limit !== undefined) this.limit = options.limit;
  }
}

/** True for an `OcrError` from any copy of this module (see `OCR_ERROR_BRAND`); never use `instanceof OcrError`. */
export function isOcrError(error: unknown): error is OcrError {
  if (typeof error !== "object" || error === null) return false;
  const candidate = error as { [OCR_ERROR_BRAND]?: unknown; code?: unknown };
  return candidate[OCR_ERROR_BRAND] === true && typeof candidate.code === "string" && codeSet.has(candidate.code);
}

/** The engine's own failures (as opposed to the document's): worth a log line with the cause. */
export function isEngineFault(code: OcrErrorCode): boolean {
  return code === "engine_failed" || code === "engine_crashed";
}

export function toOcrErrorData(error: OcrError): OcrErrorData {
  return {
    code: error.code,
    message: error.message,
    ...(error.retryAfterSeconds !== undefined && { retryAfterSeconds: error.retryAfterSeconds }),
    ...(error.limit !== undefined && { limit: error.limit }),
  };
}

export function fromOcrErrorData(data: OcrErrorData): OcrError {
  return new OcrError(data.code, data.message, data);
}

/** The one wording of a passed deadline, wherever the engine notices it. */
export function deadlineError(): OcrError {
  return new OcrError("deadline", "The request deadline passed before the document was read");
}
