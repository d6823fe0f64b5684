import { z } from "zod";
import { ApiError, isApiError } from "@/lib/api/errors";
import { findJob, readJobResult, toJobView, type JobResultPart, type JobView } from "@/lib/jobs";
import type { Env } from "@/lib/env";
import { formatPageRanges, isOcrError, parsePageSelection } from "@/lib/ocr/model";
import type { Store } from "@/lib/store";
import type { TextFormat } from "@/lib/vocabulary";
import { DEFAULT_SLICE_CHARS, isJobActive, type GetExtractionInput, type GetExtractionOutput } from "./jobs";
import type { DeliveryQueue } from "@/lib/webhooks";

/*
 * The text `get_extraction` hands out in slices an agent's context can take, and the opaque cursor that says where the
 * next slice starts. Two sources: a job's pages (read from its results in the store, in page order, stopping at a page
 * not read yet so a running job can be read as it comes), and a synchronous answer's rest — the whole text of the job an
 * `extract_text` answer longer than its `max_chars` was read as, from the characters it delivered.
 * Also the first part of a finished job's text, which `tasks/result` answers with.
 */

/**
 * Where `get_extraction` goes on. A job's: the job, the pages still to deliver, how much of the first of them was
 * delivered. A synchronous answer's (the rest of an `extract_text` answer past `max_chars`): its job and the characters
 * delivered. Version 1 (a job's, without the job: `job_id` names it) is still read.
 */
const cursorSchema = z.union([
  z.strictObject({ v: z.literal(1), p: z.string().max(256), o: z.number().int().min(0) }),
  z.strictObject({ v: z.literal(2), j: z.string().max(100), p: z.string().max(256), o: z.number().int().min(0) }),
  z.strictObject({ v: z.literal(3), a: z.string().max(100), o: z.number().int().min(0) }),
]);
type Cursor = { job?: string; pages: string; offset: number } | { answer: string; offset: number };

function encodeCursor(jobId: string, pages: readonly number[], offset: number): string | null {
  if (pages.length === 0) return null;
  return Buffer.from(JSON.stringify({ v: 2, j: jobId, p: formatPageRanges(pages), o: offset })).toString("base64url");
}

/** The cursor of a synchronous answer's rest: its job, and the characters of the job's whole text delivered. */
export function encodeAnswerCursor(jobId: string, offset: number): string {
  return Buffer.from(JSON.stringify({ v: 3, a: jobId, o: offset })).toString("base64url");
}

function decodeCursor(cursor: string): Cursor {
  try {
    const parsed = cursorSchema.parse(JSON.parse(Buffer.from(cursor, "base64url").toString("utf8")));
    if ("a" in parsed) return { answer: parsed.a, offset: parsed.o };
    return { ...("j" in parsed && { job: parsed.j }), pages: parsed.p, offset: parsed.o };
  } catch {
    throw badCursor();
  }
}

/**
 * The job a `nextCursor` continues (the viewer opens it), or undefined for a synchronous answer's cursor (its job keeps
 * no file to show) or one without its job.
 */
export function cursorJobId(cursor: string): string | undefined {
  const decoded = decodeCursor(cursor);
  return "job" in decoded ? decoded.job : undefined;
}

function badCursor(): ApiError {
  return new ApiError(
    "invalid_request",
    "cursor: not a nextCursor of extract_text or get_extraction; pass it exactly as it came, or leave it out to start again",
  );
}

/**
 * The next slice of a synchronous answer's text: the whole text of its job (read in the call, its pages stored as any
 * job's), from `offset`. Another account's or an expired job is `gone`, as before its results were a job's.
 */
async function readAnswerSlice(
  store: Store,
  env: Env,
  deliveries: DeliveryQueue | null,
  userId: string,
  jobId: string,
  offset: number,
  maxChars: number,
): Promise<GetExtractionOutput> {
  const record = await findJob(store, env, deliveries, userId, jobId).catch((error: unknown) => {
    if (!isApiError(error) || (error.code !== "not_found" && error.code !== "gone")) throw error;
    throw new ApiError(
      "gone",
      "The rest of this answer is no longer kept (it is kept as long as a job's results): call extract_text again",
    );
  });
  const view = toJobView(record);
  const { part } = await readJobText(store, env, deliveries, userId, view);
  const text = part.extractedText;
  if (offset > text.length) throw badCursor();
  const end = Math.min(text.length, offset + maxChars);
  return {
    jobId: null,
    status: view.status,
    format: textFormatOf(view),
    pagesTotal: view.pagesTotal,
    pagesDone: view.pagesDone,
    pagesFailed: 0,
    pages: "",
    offset,
    text: text.slice(offset, end),
    failedPages: [],
    nextCursor: end < text.length ? encodeAnswerCursor(jobId, end) : null,
    creditsUsed: view.creditsUsed,
  };
}

function selectPages(spec: string, pageCount: number, field: string): number[] {
  try {
    return parsePageSelection(spec, pageCount);
  } catch (error) {
    throw new ApiError(
      "invalid_request",
      `${field}: ${isOcrError(error) ? error.message : "not a page list like 1-3,5"}`,
    );
  }
}

/**
 * The format a job's text is read in over MCP: the job's, except `pdf` (a file, not text: served by the REST result
 * route as `application/pdf`), whose pages are read as plain text.
 */
export function textFormatOf(view: JobView): TextFormat {
  return view.format === "pdf" ? "text" : view.format;
}

/** `readJobResult` for a list of pages, in the job's text format. */
function readPages(
  store: Store,
  env: Env,
  deliveries: DeliveryQueue | null,
  userId: string,
  view: JobView,
  pages: readonly number[],
  limitBytes?: number,
): Promise<JobResultPart> {
  return readJobResult(store, env, deliveries, userId, view.jobId, {
    format: textFormatOf(view),
    pages: formatPageRanges(pages),
    ...(limitBytes !== undefined && { limitBytes }),
  });
}

/**
 * The next slice of a job's text, at most `max_chars` characters, from where `cursor` says (or from the first page
 * asked for): whole pages while they fit, a page longer than the slice cut and continued at the next call. Only pages
 * in order are delivered: at a page not read yet the slice stops, and the cursor points at that page, so a running
 * job's text can be read as it comes without a page being skipped. Pages that failed are passed over (listed).
 */
export async function readExtractionSlice(
  store: Store,
  env: Env,
  deliveries: DeliveryQueue | null,
  userId: string,
  input: GetExtractionInput,
): Promise<GetExtractionOutput> {
  const maxChars = input.max_chars ?? DEFAULT_SLICE_CHARS;
  const cursor = input.cursor !== undefined ? decodeCursor(input.cursor) : undefined;
  if (cursor !== undefined && "answer" in cursor)
    return readAnswerSlice(store, env, deliveries, userId, cursor.answer, cursor.offset, maxChars);
  if (cursor?.job !== undefined && input.job_id !== undefined && cursor.job !== input.job_id) {
    throw new ApiError(
      "invalid_request",
      `cursor: it continues job ${cursor.job}, not ${input.job_id}; pass the cursor alone`,
    );
  }
  const jobId = cursor?.job ?? input.job_id;
  if (jobId === undefined)
    throw new ApiError("invalid_request", "job_id: required without a cursor (the job id extract_text answered with)");
  // `findJob`: 404 for an unknown or another account's job, 410 once its results expired.
  const record = await findJob(store, env, deliveries, userId, jobId);
  const view = toJobView(record);
  const start = cursor ?? { pages: input.pages?.trim() ?? "", offset: 0 };
  const field = input.cursor !== undefined ? "cursor" : "pages";
  // Default: every page the job reads (`readJobResult` refuses pages it did not read, naming the job's selection).
  const wanted = selectPages(start.pages === "" ? record.selection : start.pages, view.pageCount, field);
  const failedPages: GetExtractionOutput["failedPages"] = [];
  const answer: Answer = (pages, offset, text, rest, restOffset) => ({
    jobId: view.jobId,
    status: view.status,
    format: textFormatOf(view),
    pagesTotal: view.pagesTotal,
    pagesDone: view.pagesDone,
    pagesFailed: view.pagesFailed,
    pages: formatPageRanges(pages),
    offset,
    text,
    failedPages,
    // A job that ended cannot deliver the pages it did not read: no cursor for those.
    nextCursor:
      rest.length > 0 && (isJobActive(view) || view.status === "succeeded")
        ? encodeCursor(view.jobId, rest, restOffset)
        : null,
    creditsUsed: view.creditsUsed,
  });
  return sliceFrom(store, env, deliveries, userId, view, wanted, start.offset, maxChars, failedPages, answer);
}

type Answer = (
  pages: number[],
  offset: number,
  text: string,
  rest: number[],
  restOffset: number,
) => GetExtractionOutput;

async function sliceFrom(
  store: Store,
  env: Env,
  deliveries: DeliveryQueue | null,
  userId: string,
  view: JobView,
  wanted: number[],
  offset: number,
  maxChars: number,
  failedPages: GetExtractionOutput["failedPages"],
  answer: Answer,
): Promise<GetExtractionOutput> {
  let pages = wanted;
  // Pages that failed at the front are passed over; a page not read yet stops the slice before it.
  for (;;) {
    if (pages.length === 0) return answer([], 0, "", [], 0);
    if (offset > 0) {
      const part = await readPages(store, env, deliveries, userId, view, pages.slice(0, 1));
      const missing = part.missingPages[0];
      if (missing?.status === "pending") return answer([], 0, "", pages, offset);
      if (missing) {
        failedPages.push({ page: missing.page, code: missing.code ?? "internal_error" });
        pages = pages.slice(1);
        offset = 0;
        continue;
      }
      const end = offset + maxChars;
      if (end < part.extractedText.length)
        return answer(pages.slice(0, 1), offset, part.extractedText.slice(offset, end), pages, end);
      return answer(pages.slice(0, 1), offset, part.extractedText.slice(offset), pages.slice(1), 0);
    }
    // A part's size is counted in bytes of escaped JSON, never fewer than the characters, so whole pages within
    // `maxChars` bytes fit `maxChars` characters; a single page larger than that is cut below.
    let part = await readPages(store, env, deliveries, userId, view, pages, maxChars);
    const pending = part.missingPages.find((page) => page.status === "pending");
    const stop = pending?.page;
    if (stop !== undefined && pages[0] === stop) return answer([], 0, "", pages, 0);
    if (stop !== undefined) {
      // Only the pages before the first one not read yet: read them again on their own.
      const before = pages.filter((page) => page < stop);
      part = await readPages(store, env, deliveries, userId, view, before, maxChars);
    }
    const covered = part.pages === "" ? [] : selectPages(part.pages, view.pageCount, "pages");
    for (const missing of part.missingPages) {
      if (missing.status === "failed") failedPages.push({ page: missing.page, code: missing.code ?? "internal_error" });
    }
    // What the part left over, then (after a page not read yet) that page and the ones after it.
    const rest = [
      ...(part.next !== null ? restOfPart(part.next, view.pageCount) : []),
      ...(stop !== undefined ? pages.filter((page) => page >= stop) : []),
    ];
    if (covered.length === 0) {
      // Every page of the part failed: go on after them.
      if (rest.length === 0 || rest[0] === pages[0]) return answer([], 0, "", rest, 0);
      pages = rest;
      continue;
    }
    if (part.extractedText.length <= maxChars) return answer(covered, 0, part.extractedText, rest, 0);
    if (covered.length > 1) {
      // The format's wrapper (`json`) pushed several pages past the slice: take them one at a time.
      const single = await readPages(store, env, deliveries, userId, view, covered.slice(0, 1));
      const text = single.extractedText;
      const others = pages.filter((page) => page > covered[0]!);
      if (text.length <= maxChars) return answer(covered.slice(0, 1), 0, text, others, 0);
      return answer(covered.slice(0, 1), 0, text.slice(0, maxChars), [covered[0]!, ...others], maxChars);
    }
    return answer(covered, 0, part.extractedText.slice(0, maxChars), [covered[0]!, ...rest], maxChars);
  }
}

/** The pages a result part's `next` link names. */
function restOfPart(next: string, pageCount: number): number[] {
  const pages = new URL(next, "http://localhost").searchParams.get("pages") ?? "";
  return pages === "" ? [] : selectPages(pages, pageCount, "pages");
}

/** The first part of a finished job's text (the whole of it when it fits one part, about 4 MB), and where the rest is. */
export async function readJobText(
  store: Store,
  env: Env,
  deliveries: DeliveryQueue | null,
  userId: string,
  view: JobView,
): Promise<{ part: JobResultPart; nextCursor: string | null }> {
  const part = await readJobResult(store, env, deliveries, userId, view.jobId, { format: textFormatOf(view) });
  const rest = part.next !== null ? restOfPart(part.next, view.pageCount) : [];
  return { part, nextCursor: encodeCursor(view.jobId, rest, 0) };
}
