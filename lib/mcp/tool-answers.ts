import type { CallToolResult } from "@modelcontextprotocol/server";
import { errorCatalogue, type ErrorEntry } from "@/lib/api/error-catalogue";
import type { ApiError } from "@/lib/api/errors";
import type { ProcessDocumentResult } from "@/lib/intake";
import { publicPage } from "@/lib/jobs";
import { encodeAnswerCursor } from "./extraction-slices";
import { REVIEW_PAGES, describeReview, reviewSummary } from "./review";
import {
  DEFAULT_SLICE_CHARS,
  GET_EXTRACTION,
  extractionStructured,
  type ExtractTextOutput,
  type GetExtractionOutput,
} from "./jobs";
import type { ExtractTextInput } from "./tool-definitions";

/*
 * How the tools' outcomes are written as the `CallToolResult` the model reads, apart from a job's (./job-answers.ts):
 * a failure the model can act on (the catalogued error code first, then its hint), a synchronous `extract_text` answer
 * cut at `max_chars` with a cursor to the rest of its job's text, and a `get_extraction` slice with the line that says where
 * the job (or the answer) stands and the exact call that goes on.
 */

/**
 * Hints for an error about one argument, over the code's (the catalogue's `invalid_request` hint is about
 * `image_source`, which a bad `pages` argument would send the model to check: issue 39).
 */
const ARGUMENT_HINTS: Readonly<Record<string, string>> = {
  pages:
    'Check pages: 1-based page numbers and ranges of this PDF, such as "1-5", "3,7-9" or "10-" (to the end); leave it out to read every page.',
};

/** A tool result for a failure the model can act on: the text starts with the catalogued error code (lib/api/error-catalogue.ts). */
export function toolErrorResult(error: ApiError): CallToolResult {
  // What the model can do about it (lib/api/error-catalogue.ts): every failure an `extract_text` call can end with has
  // one; an error about one argument (`ApiError.field`, in the tool's terms) may have its own.
  const entry: ErrorEntry = errorCatalogue[error.code];
  const hint = (error.field !== undefined ? ARGUMENT_HINTS[error.field] : undefined) ?? entry.hint;
  const message = /[.!?]$/.test(error.message) ? error.message : `${error.message}.`;
  return {
    content: [{ type: "text", text: `${error.code}: ${message}${hint ? ` Hint: ${hint}` : ""}` }],
    isError: true,
  };
}

/**
 * A synchronous answer within `max_chars`: a longer text is cut there, and the answer carries the cursor
 * `get_extraction` continues from — the rest of its job's text (its pages were stored when it was charged). A
 * searchable PDF (`pdf`, base64 of a file) is answered whole.
 */
export function answerWithin(result: ProcessDocumentResult, input: ExtractTextInput): CallToolResult {
  const { response } = result;
  const maxChars = input.max_chars ?? DEFAULT_SLICE_CHARS;
  const format = input.output_format ?? "text";
  // What needs a second look, when the pages' words have any (issue 42): after the text, and in `review`.
  const summary = reviewSummary(result.pages.slice(0, REVIEW_PAGES).map(publicPage));
  const review = summary.spans > 0 ? summary : undefined;
  const reviewText = review && { type: "text" as const, text: describeReview(review).join("\n") };
  if (format === "pdf" || response.extractedText.length <= maxChars) {
    return {
      content: [{ type: "text", text: response.extractedText }, ...(reviewText ? [reviewText] : [])],
      structuredContent: { ...response, ...(review && { review }) } satisfies ExtractTextOutput,
    };
  }
  const nextCursor = encodeAnswerCursor(result.jobId, maxChars);
  const first = response.extractedText.slice(0, maxChars);
  const note =
    `[The text goes on: this answer holds its first ${maxChars} of ${response.extractedText.length} characters. Call ` +
    `${GET_EXTRACTION} with {"cursor": "${nextCursor}"} for the next ${maxChars} (free: the pages were charged once), ` +
    "and so on while the answer has a nextCursor.]";
  const structured: ExtractTextOutput = { ...response, extractedText: first, nextCursor, ...(review && { review }) };
  return {
    content: [{ type: "text", text: first }, { type: "text", text: note }, ...(reviewText ? [reviewText] : [])],
    structuredContent: structured,
  };
}

/** A `get_extraction` answer: the slice's text, then a line on where the job (or the answer) stands and how to go on. */
export function extractionResult(slice: GetExtractionOutput): CallToolResult {
  const content: CallToolResult["content"] = slice.text === "" ? [] : [{ type: "text", text: slice.text }];
  if (slice.jobId === null) {
    const next =
      slice.nextCursor !== null
        ? ` Continue with ${GET_EXTRACTION} {"cursor": "${slice.nextCursor}"}.`
        : " That is the end of the text.";
    content.push({
      type: "text",
      text: `[the rest of an answer: characters ${slice.offset}–${slice.offset + slice.text.length}.${next}]`,
    });
    return { content, structuredContent: extractionStructured(slice) };
  }
  const where =
    slice.pages === ""
      ? "no page of this selection is ready yet"
      : `pages ${slice.pages}${slice.offset > 0 ? ` from character ${slice.offset} of page ${slice.pages.split(/[-,]/)[0]}` : ""}`;
  const failed =
    slice.failedPages.length > 0
      ? ` Passed over (could not be read): ${slice.failedPages.map((page) => `${page.page} (${page.code})`).join(", ")}.`
      : "";
  const next =
    slice.nextCursor !== null
      ? ` Continue with ${GET_EXTRACTION} {"job_id": "${slice.jobId}", "cursor": "${slice.nextCursor}"}${slice.pages === "" ? " in a few seconds" : ""}.`
      : " Nothing more to read for this selection.";
  const status = `[job ${slice.jobId}: ${slice.status}, ${slice.pagesDone} of ${slice.pagesTotal} pages read${slice.pagesFailed > 0 ? `, ${slice.pagesFailed} failed` : ""}; this answer: ${where}.${failed}${next}]`;
  content.push({ type: "text", text: status });
  return { content, structuredContent: extractionStructured(slice) };
}
