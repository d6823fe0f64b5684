import { describe, expect, it } from "vitest";
import { isApiError, type ApiError, type ErrorCode } from "@/lib/api/errors";
import { OcrError, ocrErrorCodes, type OcrErrorCode, type OcrErrorOptions } from "@/lib/ocr/model/ocr-error";
import { fromEngineError } from "@/lib/jobs";

/** The API's answer to an engine failure (fails the test when the mapping returns anything but an ApiError). */
function mapped(code: OcrErrorCode, message: string, options: OcrErrorOptions = {}, pages?: string): ApiError {
  const error = fromEngineError(new OcrError(code, message, options), { pages });
  if (!isApiError(error)) throw new Error(`expected an ApiError for ${code}`);
  return error;
}

describe("fromEngineError: engine codes → the API's codes", () => {
  const expected: Record<OcrErrorCode, [ErrorCode, number]> = {
    empty_file: ["invalid_request", 400],
    unsupported_type: ["unsupported_media_type", 415],
    unreadable: ["unreadable_document", 422],
    encrypted: ["unreadable_document", 422],
    image_too_large: ["payload_too_large", 413],
    stream_too_large: ["payload_too_large", 413],
    too_many_pages: ["payload_too_large", 413],
    out_of_memory: ["payload_too_large", 413],
    too_complex: ["payload_too_large", 413],
    bad_page_list: ["invalid_request", 400],
    unsupported_language: ["invalid_request", 400],
    too_many_languages: ["invalid_request", 400],
    deadline: ["timeout", 504],
    overloaded: ["overloaded", 503],
    shutting_down: ["unavailable", 503],
    engine_crashed: ["internal_error", 500],
    engine_failed: ["internal_error", 500],
  };

  it.each(ocrErrorCodes.map((code) => [code]))("%s", (code) => {
    const error = mapped(code, "something happened");
    expect([error.code, error.status]).toEqual(expected[code]);
    expect(error.message.length).toBeGreaterThan(0);
  });

  it("leaves anything that is not an engine error as it is", () => {
    const other = new TypeError("renderer bug");
    expect(fromEngineError(other)).toBe(other);
  });
});

describe("fromEngineError: the wording names the request's fields", () => {
  it("a page list: options.pages", () => {
    expect(mapped("bad_page_list", "page 9 does not exist; the document has 3 pages").message).toBe(
      "options.pages: page 9 does not exist; the document has 3 pages",
    );
  });

  it("a language: options.language", () => {
    expect(mapped("too_many_languages", "at most 3 languages at once").message).toBe(
      "options.language: at most 3 languages at once",
    );
  });

  it("too many pages in the whole document: how to choose some", () => {
    const error = mapped("too_many_pages", "The document has 60 pages and at most 50 are read per request", {
      limit: 50,
    });
    expect(error.message).toBe(
      'The document has 60 pages and at most 50 are read per request; choose pages with options.pages (e.g. "1-50"), ' +
        "or send it as an asynchronous job instead (POST /api/ocr/jobs, or this route with Prefer: respond-async)",
    );
    // A job's own limit names no jobs route.
    expect(
      fromEngineError(
        new OcrError("too_many_pages", "The document has 2100 pages and at most 2000 are read per request", {
          limit: 2000,
        }),
        { job: true },
      ),
    ).toMatchObject({
      message:
        'The document has 2100 pages and at most 2000 are read per request; choose pages with options.pages (e.g. "1-2000")',
    });
  });

  it("too many pages in a selection: the selection", () => {
    const error = mapped(
      "too_many_pages",
      "The selection has more than 50 pages, the limit per request",
      { limit: 50 },
      "1-51",
    );
    expect(error.message).toBe(
      "options.pages selects more than 50 pages, the limit per request; send it as an asynchronous job instead (POST /api/ocr/jobs, or this route with Prefer: respond-async)",
    );
  });

  it("too much work for one request (the engine says why): fewer pages, or a job", () => {
    const error = mapped("too_many_pages", "This PDF has more than 50 pages of work for one request");
    expect(error.message).toBe(
      "This PDF has more than 50 pages of work for one request: choose fewer pages with options.pages, or send it as an asynchronous job instead (POST /api/ocr/jobs, or this route with Prefer: respond-async)",
    );
  });

  it("overloaded: Retry-After from the engine's estimate, or none (the response adds its default)", () => {
    expect(mapped("overloaded", "busy", { retryAfterSeconds: 7 }).headers).toEqual({ "Retry-After": "7" });
    expect(mapped("overloaded", "busy").headers).toEqual({});
  });
});
