import { randomBytes } from "node:crypto";
import type { CallToolResult, Task } from "@modelcontextprotocol/server";
import { z } from "zod";
import { ocrResponseSchema } from "@/lib/api/schemas";
import { errorCatalogue, errorCodes, type ErrorCode, type ErrorEntry } from "@/lib/api/error-catalogue";
import { ApiError } from "@/lib/api/errors";
import { retryAfterFor } from "@/lib/http/jobs";
import { findJob, getJobView, readJobResult, toJobView, type JobResultPart, type JobView } from "@/lib/jobs";
import { formatPageRanges, isOcrError, parsePageSelection } from "@/lib/ocr/model";
import { outputFormats, type TextFormat } from "@/lib/vocabulary";
import { keepRecord, readRecord } from "./kept";

/*
 * MCP over the asynchronous jobs (lib/jobs): a long document's `extract_text`, the 2025-11-25 tasks (`tasks/get`,
 * `tasks/result`, `tasks/cancel`, `tasks/list`) and `get_extraction` all read and write the job records in the store —
 * nothing is kept in this process, so any instance answers about any job. The task id is the job id.
 */

/** The tool that reads a job's text in slices an agent's context can take. */
export const GET_EXTRACTION = "get_extraction";

/** `get_extraction`'s `max_chars` when the call names none: a few pages of dense text, a few thousand tokens. */
export const DEFAULT_SLICE_CHARS = 20_000;
/** The most characters one `get_extraction` answer carries. */
export const MAX_SLICE_CHARS = 200_000;
/** The fewest: a smaller slice would cost more calls than it saves context. */
export const MIN_SLICE_CHARS = 200;

/** How a job is summed up beside a tool's answer (`structuredContent.job` of `extract_text`). */
export const jobSummarySchema = z
  .object({
    jobId: z.string().describe("The job reading the document (`job_…`); also the task id for task-capable clients."),
    status: z.enum(["queued", "running", "succeeded", "failed", "cancelled"]),
    pagesTotal: z.number().int().min(1).describe("Pages the job reads."),
    pagesDone: z.number().int().min(0).describe("Pages read so far (each one credit)."),
    pagesFailed: z.number().int().min(0).describe("Pages that could not be read (refunded)."),
    nextCursor: z
      .string()
      .nullable()
      .describe(
        `Pass to ${GET_EXTRACTION} as \`cursor\` for the text not in this answer; null when this answer holds it all.`,
      ),
  })
  .describe("Present when the document was read as an asynchronous job (too long for one call, or a task).");
export type JobSummary = z.infer<typeof jobSummarySchema>;

/** `extract_text`'s `structuredContent`: the REST 200 body, plus `job` when a job read it. */
export const extractTextOutputSchema = ocrResponseSchema.extend({
  job: jobSummarySchema.optional(),
  nextCursor: z
    .string()
    .optional()
    .describe(
      `Present when the text read within the call is longer than max_chars: pass it to ${GET_EXTRACTION} as \`cursor\` for the rest.`,
    ),
});
export type ExtractTextOutput = z.infer<typeof extractTextOutputSchema>;

export const getExtractionInputSchema = z.strictObject({
  job_id: z
    .string()
    .min(1)
    .max(100)
    .optional()
    .describe(
      "The job id (`job_…`) that extract_text answered with. Needed without `cursor` (a cursor says where it goes on).",
    ),
  pages: z
    .string()
    .max(256)
    .optional()
    .describe(
      'Pages of the document to read, e.g. "1-10" or "3,7-9" (default: every page the job reads). Ignored with `cursor`.',
    ),
  max_chars: z
    .number()
    .int()
    .min(MIN_SLICE_CHARS)
    .max(MAX_SLICE_CHARS)
    .optional()
    .describe(`Most characters of text in this answer (default ${DEFAULT_SLICE_CHARS}, at most ${MAX_SLICE_CHARS}).`),
  cursor: z
    .string()
    .max(400)
    .optional()
    .describe(
      "`nextCursor` of the previous answer (of extract_text or of this tool): where to continue. Opaque; pass it unchanged.",
    ),
});
export type GetExtractionInput = z.infer<typeof getExtractionInputSchema>;

export const getExtractionOutputSchema = z.object({
  jobId: z
    .string()
    .nullable()
    .describe("The job the text comes from; null for the rest of an answer extract_text read within its call."),
  status: z
    .enum(["queued", "running", "succeeded", "failed", "cancelled"])
    .describe("`queued`/`running`: pages are still being read; the others are final."),
  format: z
    .enum(outputFormats)
    .exclude(["pdf"])
    .describe(
      "The format the text is in: the job's output_format, or `text` for a `pdf` job (its PDF itself: GET /api/ocr/jobs/{job_id}/result?format=pdf).",
    ),
  pagesTotal: z.number().int().min(1),
  pagesDone: z.number().int().min(0),
  pagesFailed: z.number().int().min(0),
  pages: z
    .string()
    .describe('The pages this answer\'s text comes from, as ranges ("1-12"); empty when none is ready yet.'),
  offset: z
    .number()
    .int()
    .min(0)
    .describe("Characters of the first of those pages that came in earlier answers (a page cut by max_chars)."),
  text: z.string().describe("The text of those pages. A page cut by max_chars goes on in the next answer."),
  failedPages: z
    .array(z.object({ page: z.number().int(), code: z.string() }))
    .describe("Pages passed over because they could not be read."),
  nextCursor: z
    .string()
    .nullable()
    .describe(
      `Pass to ${GET_EXTRACTION} as \`cursor\` to go on; null once every page asked for was delivered (or can no longer be).`,
    ),
  creditsUsed: z.number().int().min(0),
});
export type GetExtractionOutput = z.infer<typeof getExtractionOutputSchema>;

const ACTIVE: ReadonlySet<JobView["status"]> = new Set(["queued", "running"]);

export function isJobActive(view: JobView): boolean {
  return ACTIVE.has(view.status);
}

/** Pages the job is done with, read or failed: what per-page progress counts. */
export function pagesSettled(view: JobView): number {
  return view.pagesDone + view.pagesFailed;
}

const TASK_STATUS: Record<JobView["status"], Task["status"]> = {
  queued: "working",
  running: "working",
  succeeded: "completed",
  failed: "failed",
  cancelled: "cancelled",
};

/** A job as an MCP task (2025-11-25): the same id; the job's times; `ttl` until its results are gone. */
export function toTask(view: JobView): Task {
  const createdAt = Date.parse(view.createdAt);
  const poll = retryAfterFor(view);
  return {
    taskId: view.jobId,
    status: TASK_STATUS[view.status],
    statusMessage: describeJob(view),
    createdAt: view.createdAt,
    lastUpdatedAt: view.finishedAt ?? view.startedAt ?? view.createdAt,
    ttl: Math.max(0, Date.parse(view.expiresAt) - createdAt),
    ...(poll !== null && { pollInterval: poll * 1000 }),
  };
}

/** One line for people (and models) about where a job stands. */
export function describeJob(view: JobView): string {
  const failed = view.pagesFailed > 0 ? `, ${plural(view.pagesFailed, "page")} could not be read` : "";
  switch (view.status) {
    case "queued":
      return `Queued: ${plural(view.pagesTotal, "page")} to read`;
    case "running":
      return `Reading: ${view.pagesDone} of ${plural(view.pagesTotal, "page")} read${failed}`;
    case "succeeded":
      return `Done: ${view.pagesDone} of ${plural(view.pagesTotal, "page")} read${failed}`;
    case "failed":
      return `Failed: ${view.error?.message ?? "no page could be read"}`;
    case "cancelled":
      return `Cancelled after ${view.pagesDone} of ${plural(view.pagesTotal, "page")} (${plural(view.creditsRefunded, "credit")} refunded)`;
  }
}

interface WaitOptions {
  /** Epoch ms: stop waiting then, whether or not the job has ended. */
  until: number;
  /** Time between two looks at the job record. */
  pollMs: number;
  /**
   * Called whenever more pages are settled than at the previous look, with the view of that look and the count at the
   * previous look (at the first look: one less than its own, so pages settled before the wait count as one step).
   */
  onPages?: (view: JobView, settledBefore: number) => void;
  /** Stop early (the client went away). */
  signal?: AbortSignal;
  /** Pages settled that were already reported (a resumed wait): `onPages` starts after them. Default: all but the last. */
  reportedBefore?: number;
}

/**
 * Watch a job until it ends or `until`, looking at its record in the store every `pollMs` (the record is the only
 * shared state: the pages may be read by any process). Returns the last view.
 */
export async function waitForJob(userId: string, jobId: string, options: WaitOptions): Promise<JobView> {
  let view = await getJobView(userId, jobId);
  // Pages settled before the wait began are reported as one step (the latest), not replayed page by page.
  let settled = options.reportedBefore ?? Math.max(0, pagesSettled(view) - 1);
  for (;;) {
    if (pagesSettled(view) > settled) {
      options.onPages?.(view, settled);
      settled = pagesSettled(view);
    }
    const left = options.until - Date.now();
    if (!isJobActive(view) || left <= 0 || options.signal?.aborted) return view;
    await new Promise((resolve) => setTimeout(resolve, Math.min(options.pollMs, left)));
    view = await getJobView(userId, jobId);
  }
}

/**
 * Where `get_extraction` goes on. A job's: the job, the pages still to deliver, how much of the first of them was
 * delivered. A kept answer's (the rest of a synchronous `extract_text` answer past `max_chars`): its record and the
 * characters delivered. Version 1 (a job's, without the job: `job_id` names it) is still read.
 */
const cursorSchema = z.union([
  z.strictObject({ v: z.literal(1), p: z.string().max(256), o: z.number().int().min(0) }),
  z.strictObject({ v: z.literal(2), j: z.string().max(100), p: z.string().max(256), o: z.number().int().min(0) }),
  z.strictObject({ v: z.literal(2), t: z.string().max(100), o: z.number().int().min(0) }),
]);
type Cursor = { job?: string; pages: string; offset: number } | { text: string; offset: number };

function encodeCursor(jobId: string, pages: readonly number[], offset: number): string | null {
  if (pages.length === 0) return null;
  return Buffer.from(JSON.stringify({ v: 2, j: jobId, p: formatPageRanges(pages), o: offset })).toString("base64url");
}

function encodeTextCursor(textId: string, offset: number): string {
  return Buffer.from(JSON.stringify({ v: 2, t: textId, o: offset })).toString("base64url");
}

function decodeCursor(cursor: string): Cursor {
  try {
    const parsed = cursorSchema.parse(JSON.parse(Buffer.from(cursor, "base64url").toString("utf8")));
    if ("t" in parsed) return { text: parsed.t, offset: parsed.o };
    return { ...("j" in parsed && { job: parsed.j }), pages: parsed.p, offset: parsed.o };
  } catch {
    throw badCursor();
  }
}

function badCursor(): ApiError {
  return new ApiError(
    "invalid_request",
    "cursor: not a nextCursor of extract_text or get_extraction; pass it exactly as it came, or leave it out to start again",
  );
}

/** The kind of kept record (./kept.ts) that holds an `extract_text` answer longer than its `max_chars`. */
const KEPT_TEXT = "answer-text";

const keptTextSchema = z.strictObject({
  format: z.enum(outputFormats).exclude(["pdf"]),
  text: z.string(),
  pageCount: z.number().int().min(1),
  creditsUsed: z.number().int().min(0),
});
type KeptText = z.infer<typeof keptTextSchema>;

/**
 * Keep the whole text of a synchronous `extract_text` answer whose text is longer than its `max_chars`, for as long as
 * a job's results are kept, and return the cursor of what comes after the first `delivered` characters.
 */
export async function keepAnswerText(
  userId: string,
  kept: KeptText,
  delivered: number,
  ttlMs: number,
): Promise<string> {
  const textId = `txt_${randomBytes(16).toString("base64url")}`;
  if (!(await keepRecord(KEPT_TEXT, userId, textId, JSON.stringify(kept), ttlMs))) {
    throw new ApiError("internal_error", "The rest of the answer could not be kept", {
      cause: new Error(`duplicate text id ${textId}`),
    });
  }
  return encodeTextCursor(textId, delivered);
}

/** The next slice of a kept answer's text. Another account's or an expired record is `gone`, as an expired job's results. */
async function readKeptSlice(
  userId: string,
  textId: string,
  offset: number,
  maxChars: number,
): Promise<GetExtractionOutput> {
  const raw = await readRecord(KEPT_TEXT, userId, textId);
  if (raw === null) {
    throw new ApiError(
      "gone",
      "The rest of this answer is no longer kept (it is kept as long as a job's results): call extract_text again",
    );
  }
  const kept = keptTextSchema.parse(JSON.parse(raw));
  if (offset > kept.text.length) throw badCursor();
  const end = Math.min(kept.text.length, offset + maxChars);
  return {
    jobId: null,
    status: "succeeded",
    format: kept.format,
    pagesTotal: kept.pageCount,
    pagesDone: kept.pageCount,
    pagesFailed: 0,
    pages: "",
    offset,
    text: kept.text.slice(offset, end),
    failedPages: [],
    nextCursor: end < kept.text.length ? encodeTextCursor(textId, end) : null,
    creditsUsed: kept.creditsUsed,
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
  userId: string,
  view: JobView,
  pages: readonly number[],
  limitBytes?: number,
): Promise<JobResultPart> {
  return readJobResult(userId, view.jobId, {
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
export async function readExtractionSlice(userId: string, input: GetExtractionInput): Promise<GetExtractionOutput> {
  const maxChars = input.max_chars ?? DEFAULT_SLICE_CHARS;
  const cursor = input.cursor !== undefined ? decodeCursor(input.cursor) : undefined;
  if (cursor !== undefined && "text" in cursor) return readKeptSlice(userId, cursor.text, cursor.offset, maxChars);
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
  const record = await findJob(userId, jobId);
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
  return sliceFrom(userId, view, wanted, start.offset, maxChars, failedPages, answer);
}

type Answer = (
  pages: number[],
  offset: number,
  text: string,
  rest: number[],
  restOffset: number,
) => GetExtractionOutput;

async function sliceFrom(
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
      const part = await readPages(userId, view, pages.slice(0, 1));
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
    let part = await readPages(userId, view, pages, maxChars);
    const pending = part.missingPages.find((page) => page.status === "pending");
    const stop = pending?.page;
    if (stop !== undefined && pages[0] === stop) return answer([], 0, "", pages, 0);
    if (stop !== undefined) {
      // Only the pages before the first one not read yet: read them again on their own.
      const before = pages.filter((page) => page < stop);
      part = await readPages(userId, view, before, maxChars);
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
      const single = await readPages(userId, view, covered.slice(0, 1));
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
  userId: string,
  view: JobView,
): Promise<{ part: JobResultPart; nextCursor: string | null }> {
  const part = await readJobResult(userId, view.jobId, { format: textFormatOf(view) });
  const rest = part.next !== null ? restOfPart(part.next, view.pageCount) : [];
  return { part, nextCursor: encodeCursor(view.jobId, rest, 0) };
}

/**
 * What `extract_text` answers (or `tasks/result` returns) for a job: its text once it has ended, or — still reading —
 * where it stands and the next step. `userId` owns it. With `maxChars` (an `extract_text` call) the answer holds at
 * most that many characters of text — the pages read so far, in order, when the job is still reading — and the cursor
 * `get_extraction` continues from; without it (`tasks/result`), the first result part of a finished job.
 */
export async function jobToolResult(
  userId: string,
  view: JobView,
  opening: string,
  maxChars?: number,
): Promise<CallToolResult> {
  if (view.status === "failed" || view.status === "cancelled") return jobFailureResult(view);
  if (maxChars !== undefined) return jobSliceResult(userId, view, opening, maxChars);
  const summary: JobSummary = {
    jobId: view.jobId,
    status: view.status,
    pagesTotal: view.pagesTotal,
    pagesDone: view.pagesDone,
    pagesFailed: view.pagesFailed,
    nextCursor: null,
  };
  const base = {
    success: true as const,
    userId,
    inputSource: view.inputSource,
    pageCount: view.pageCount,
    requestId: view.jobId,
    creditsUsed: view.creditsUsed,
  };
  if (isJobActive(view)) {
    const next = `Call ${GET_EXTRACTION} with {"job_id": "${view.jobId}"} to read its text: it returns the pages read so far in slices that fit your context, and where to continue; call it again for the pages still being read.`;
    const text = `${opening} It is being read as job ${view.jobId}: ${describeJob(view)}. ${next}`;
    const structured: ExtractTextOutput = {
      ...base,
      extractedText: "",
      confidence: 0,
      processingTime: elapsed(view),
      job: summary,
    };
    return { content: [{ type: "text", text }], structuredContent: structured };
  }
  const { part, nextCursor } = await readJobText(userId, view);
  const structured: ExtractTextOutput = {
    ...base,
    extractedText: part.extractedText,
    confidence: part.confidence,
    processingTime: elapsed(view),
    job: { ...summary, nextCursor },
  };
  const notes: string[] = [];
  const failed = part.missingPages.filter((page) => page.status === "failed");
  if (failed.length > 0)
    notes.push(
      `${plural(failed.length, "page")} could not be read and were not charged: ${failed.map((page) => `${page.page} (${page.code ?? "internal_error"})`).join(", ")}.`,
    );
  if (view.format === "pdf") notes.push(pdfNote(view));
  if (nextCursor !== null)
    notes.push(
      `The text goes on: call ${GET_EXTRACTION} with {"job_id": "${view.jobId}", "cursor": "${nextCursor}"} for the rest.`,
    );
  const content: CallToolResult["content"] = [{ type: "text", text: part.extractedText }];
  if (notes.length > 0) content.push({ type: "text", text: `[job ${view.jobId}] ${notes.join(" ")}` });
  return { content, structuredContent: structured };
}

function pdfNote(view: JobView): string {
  return `The text above is plain text; the searchable PDF is a file: GET /api/ocr/jobs/${view.jobId}/result?format=pdf (application/pdf, with the same API key).`;
}

/**
 * A job's answer to `extract_text` within `maxChars`: the first slice of its text (as `get_extraction` would give it:
 * the pages read so far, in order), the job and its progress, and the exact next call.
 */
async function jobSliceResult(
  userId: string,
  view: JobView,
  opening: string,
  maxChars: number,
): Promise<CallToolResult> {
  const slice = await readExtractionSlice(userId, { job_id: view.jobId, max_chars: maxChars });
  const active = slice.status === "queued" || slice.status === "running";
  const confidence =
    slice.pages === ""
      ? 0
      : (await readJobResult(userId, view.jobId, { format: slice.format, pages: slice.pages })).confidence;
  const structured: ExtractTextOutput = {
    success: true,
    userId,
    inputSource: view.inputSource,
    extractedText: slice.text,
    confidence,
    processingTime: elapsed(view),
    creditsUsed: slice.creditsUsed,
    pageCount: view.pageCount,
    requestId: view.jobId,
    job: {
      jobId: view.jobId,
      status: slice.status,
      pagesTotal: slice.pagesTotal,
      pagesDone: slice.pagesDone,
      pagesFailed: slice.pagesFailed,
      nextCursor: slice.nextCursor,
    },
  };
  const here =
    slice.pages === ""
      ? ""
      : `The text above is page${slice.pages.includes("-") || slice.pages.includes(",") ? "s" : ""} ${slice.pages}${slice.nextCursor !== null ? (active ? ", read so far" : `, at most ${maxChars} characters`) : ""}. `;
  const failed =
    slice.failedPages.length > 0
      ? `Passed over (could not be read, not charged): ${slice.failedPages.map((page) => `${page.page} (${page.code})`).join(", ")}. `
      : "";
  const pdf = view.format === "pdf" ? `${pdfNote(view)} ` : "";
  let next: string;
  if (slice.nextCursor === null) next = "That is all of its text.";
  else if (active && slice.pages === "") {
    next = `Call ${GET_EXTRACTION} with {"job_id": "${view.jobId}"} to read its text: it returns the pages read so far in slices that fit your context, and where to continue; call it again for the pages still being read.`;
  } else {
    next = `Call ${GET_EXTRACTION} with {"job_id": "${view.jobId}", "cursor": "${slice.nextCursor}"} for the rest${active ? " (the pages not read yet come as they are read: call again in a few seconds when an answer has none)" : ""}.`;
  }
  const lead = opening === "" ? "" : `${opening} `;
  const status = active
    ? `${lead}It is being read as job ${view.jobId}: ${describeJob({ ...view, status: slice.status, pagesDone: slice.pagesDone, pagesFailed: slice.pagesFailed })}. `
    : `[job ${view.jobId}] `;
  const line = `${status}${here}${failed}${pdf}${next}`;
  const content: CallToolResult["content"] = slice.text === "" ? [] : [{ type: "text", text: slice.text }];
  if (active || slice.nextCursor !== null || failed !== "" || pdf !== "") content.push({ type: "text", text: line });
  if (content.length === 0) content.push({ type: "text", text: "" });
  return { content, structuredContent: structured };
}

/** A job that failed or was cancelled, as the tool error the model can act on (the code first, as every tool error). */
export function jobFailureResult(view: JobView): CallToolResult {
  const code = view.status === "cancelled" ? "cancelled" : (view.error?.code ?? "internal_error");
  const entry: ErrorEntry | undefined = (errorCodes as readonly string[]).includes(code)
    ? errorCatalogue[code as ErrorCode]
    : undefined;
  const hint = entry?.hint;
  const message =
    view.status === "cancelled"
      ? `Job ${view.jobId} was cancelled: ${view.pagesDone} of ${plural(view.pagesTotal, "page")} had been read (charged), ${plural(view.creditsRefunded, "credit")} refunded.`
      : `Job ${view.jobId} failed: ${view.error?.message ?? "no page could be read"}.`;
  return { content: [{ type: "text", text: `${code}: ${message}${hint ? ` Hint: ${hint}` : ""}` }], isError: true };
}

function elapsed(view: JobView): number {
  const end = view.finishedAt ? Date.parse(view.finishedAt) : Date.now();
  return Math.max(0, Math.round(end - Date.parse(view.createdAt)));
}

function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? "" : "s"}`;
}
