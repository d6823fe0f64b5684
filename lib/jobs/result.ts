import type { JobResultBody } from "@/lib/api/schemas";
import { ApiError } from "@/lib/api/errors";
import { documentConfidence, pagedFormats, renderSearchablePdf } from "@/lib/ocr";
import { formatPageRanges, isOcrError, parsePageSelection, type ExtractedPage } from "@/lib/ocr/model";
import { fromEngineError } from "@/lib/process";
import type { JobRecord } from "@/lib/store";
import { getStore } from "@/lib/store";
import { decodePage } from "./payload";
import { findJob } from "./service";
import type { OutputFormat, TextFormat } from "@/lib/vocabulary";

/**
 * The most bytes of `extractedText` (as escaped in the JSON answer) one result response carries: the answer stays
 * under Vercel's 4.5 MB response limit with its other fields. A result larger than this comes in parts (`next`).
 */
export const RESULT_PART_BYTES = 4_000_000;

/** Pages fetched from the store at a time while a part is filled. */
const FETCH_BATCH = 25;

export type JobResultPart = JobResultBody;

/**
 * A job's result, rendered from the stored page models in `format` (default: the job's), for the pages asked
 * (default: all of the job's), as many as fit in one response from the first; the rest is named by `next`.
 * Pages not read yet or failed are listed in `missingPages`, so a running job's first pages can be fetched already.
 */
export async function readJobResult(
  userId: string,
  jobId: string,
  options: { format?: OutputFormat; pages?: string; limitBytes?: number },
): Promise<JobResultPart> {
  const record = await findJob(userId, jobId);
  const format = options.format ?? record.format;
  if (format === "pdf") {
    throw new ApiError(
      "invalid_request",
      `format: pdf is a file, not text: GET /api/ocr/jobs/${jobId}/result?format=pdf answers it as application/pdf`,
    );
  }
  const wanted = wantedPages(record, options.pages);

  const store = getStore().jobs;
  const failed = record.pagesFailed > 0 ? await store.getFailedPages(jobId) : new Map<number, string>();
  const limit = options.limitBytes ?? RESULT_PART_BYTES;
  const render = pagedFormats[format];
  const pieces: string[] = [];
  const included: ExtractedPage[] = [];
  const missing: JobResultPart["missingPages"] = [];
  let size = 0;
  let stoppedAt = wanted.length;
  fill: for (let start = 0; start < wanted.length; start += FETCH_BATCH) {
    const batch = wanted.slice(start, start + FETCH_BATCH);
    const payloads = await store.getPages(jobId, batch);
    for (const [offset, payload] of payloads.entries()) {
      const number = batch[offset]!;
      if (payload === null) {
        const failure = failed.get(number);
        missing.push(failure ? { page: number, status: "failed", code: failureCode(failure) } : { page: number, status: "pending" });
        continue;
      }
      const stored = decodePage(payload);
      const piece = render.page(stored.page, format === "json" ? { readBy: stored.readBy } : undefined);
      const cost = Buffer.byteLength(JSON.stringify(piece)) + 8;
      // A part holds at least one page, however large.
      if (included.length > 0 && size + cost > limit) {
        stoppedAt = start + offset;
        break fill;
      }
      size += cost;
      pieces.push(piece);
      included.push(stored.page);
    }
  }
  const rest = wanted.slice(stoppedAt);
  const next = rest.length > 0 ? `/api/ocr/jobs/${jobId}/result?${new URLSearchParams({ format, pages: formatPageRanges(rest) })}` : null;
  return {
    success: true,
    jobId,
    status: record.status,
    format,
    pages: formatPageRanges(included.map((page) => page.number)),
    extractedText: render.join(pieces),
    confidence: documentConfidence({ pages: included, pageCount: record.pageCount }),
    pageCount: record.pageCount,
    missingPages: missing,
    next,
  };
}

/** The job's pages a result asks for: `pages` (within what the job read), or all of them. */
function wantedPages(record: JobRecord, pages: string | undefined): number[] {
  const selected = parsePageSelection(record.selection, record.pageCount);
  if (pages === undefined || pages.trim() === "") return selected;
  let wanted: number[];
  try {
    wanted = parsePageSelection(pages, record.pageCount);
  } catch (error) {
    throw new ApiError("invalid_request", `pages: ${isOcrError(error) ? error.message : "not a page list like 1-3,5"}`);
  }
  const inJob = new Set(selected);
  const outside = wanted.filter((page) => !inJob.has(page));
  if (outside.length > 0) {
    throw new ApiError("invalid_request", `pages: page ${outside[0]} was not read by this job (it read ${record.selection})`);
  }
  return wanted;
}

/** The format a result request gets: the one asked for, or the job's. */
export async function jobResultFormat(userId: string, jobId: string, format: OutputFormat | undefined): Promise<OutputFormat> {
  return format ?? (await findJob(userId, jobId)).format;
}

export interface JobPdf {
  pdf: Uint8Array;
  /** Pages in it, as a page list. */
  pages: string;
  /** Pages asked for but not in it: not read yet, or failed. */
  missingPages: number[];
}

/**
 * A job's searchable PDF, built from its source file (kept until its results expire) and the stored page models of
 * the pages asked for (default: all of the job's) that have been read; the others are listed in `missingPages`. One
 * file, however large: the route streams it.
 */
export async function readJobPdf(userId: string, jobId: string, options: { pages?: string }): Promise<JobPdf> {
  const record = await findJob(userId, jobId);
  const wanted = wantedPages(record, options.pages);
  const store = getStore().jobs;
  const pages: ExtractedPage[] = [];
  const missingPages: number[] = [];
  for (let start = 0; start < wanted.length; start += FETCH_BATCH) {
    const batch = wanted.slice(start, start + FETCH_BATCH);
    const payloads = await store.getPages(jobId, batch);
    payloads.forEach((payload, offset) => {
      if (payload === null) missingPages.push(batch[offset]!);
      else pages.push(decodePage(payload).page);
    });
  }
  if (pages.length === 0) {
    throw new ApiError(
      "conflict",
      record.status === "queued" || record.status === "running"
        ? `No page of job ${jobId} is read yet: the PDF holds the pages read, ask again when some are (GET /api/ocr/jobs/${jobId})`
        : `Job ${jobId} read none of the pages asked for: there is no PDF to make`,
    );
  }
  const bytes = await store.getSource(jobId, record.sourceChunks);
  if (!bytes) {
    throw new ApiError("gone", `The file of job ${jobId} is no longer kept (the job ${record.status}): its PDF cannot be made; the text formats still can`);
  }
  let pdf: Uint8Array;
  try {
    pdf = await renderSearchablePdf(pages, { bytes, type: record.fileType });
  } catch (error) {
    throw fromEngineError(error);
  }
  return { pdf, pages: formatPageRanges(pages.map((page) => page.number)), missingPages };
}

function failureCode(raw: string): string {
  try {
    const parsed: unknown = JSON.parse(raw);
    if (typeof parsed === "object" && parsed !== null && "code" in parsed && typeof parsed.code === "string") return parsed.code;
  } catch {
    // fall through
  }
  return "internal_error";
}

/**
 * What a text format puts before a job's first page, between two pages and after the last: the settings page's
 * download joins a result's parts with it (each part carries its own head and tail).
 */
export function jobResultFrame(format: TextFormat): { head: string; separator: string; tail: string } {
  const { head, separator, tail } = pagedFormats[format];
  return { head, separator, tail };
}
