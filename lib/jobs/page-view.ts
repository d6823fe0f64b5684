import { z } from "zod";
import { ApiError } from "@/lib/api/errors";
import type { Env } from "@/lib/env";
import { renderPagePreview, type OcrPool, type PagePreview } from "@/lib/ocr";
import { markReview, parsePageSelection, type ExtractedPage, type OcrPage } from "@/lib/ocr/model";
import { fromEngineError } from "./engine-errors";
import type { JobRecord, Store } from "@/lib/store";
import { decodePage } from "./payload";
import { findReadableJob } from "./service";
import { SourceCache } from "./sources";
import type { DeliveryQueue } from "@/lib/webhooks";

/*
 * One page of a job as the MCP viewer shows it (lib/mcp/viewer): its words with their boxes, confidences and review
 * marks, read from the stored page; and the page drawn for display from the job's stored file. Both free (the pages
 * were charged when the job read them) and both behind `findReadableJob`: another account's job is `404` like every read.
 */

/** Widest page image the viewer gets (pixels): a chat's view is 400–800 px wide, twice that for sharp screens. */
export const VIEW_IMAGE_WIDTH = 1000;
/** Most bytes of a page image (JPEG): a tool result a host passes to the view without trouble. */
export const VIEW_IMAGE_BYTES = 600_000;
/** Files of jobs being viewed kept per process (the viewer moves between pages of one job). */
const VIEW_SOURCE_CACHE_BYTES = 64 * 1024 * 1024;

export type ViewPageStatus = "done" | "pending" | "failed";

export interface JobPageView {
  record: JobRecord;
  /** The job's pages, in order (its selection). */
  selected: number[];
  page: number;
  status: ViewPageStatus;
  /** The page's words (the public page model, words marked `review`), once read. */
  content?: OcrPage;
  /** Why the page failed. */
  failure?: { code: string; message: string };
}

/** The page `page` of job `jobId`: `404` for another account's job, `invalid_request` for a page it does not read. */
export async function readJobPageView(
  store: Store,
  env: Env,
  deliveries: DeliveryQueue | null,
  userId: string,
  jobId: string,
  page: number | undefined,
): Promise<JobPageView> {
  const record = await findReadableJob(store, env, deliveries, userId, jobId);
  const selected = parsePageSelection(record.selection, record.pageCount);
  const number = page ?? selected[0]!;
  if (!selected.includes(number)) {
    throw new ApiError(
      "invalid_request",
      `page: job ${jobId} reads pages ${record.selection} of ${record.pageCount}, not page ${number}`,
    );
  }
  const [payload] = await store.jobs.getPages(jobId, [number]);
  if (payload) {
    return { record, selected, page: number, status: "done", content: publicPage(decodePage(payload).page) };
  }
  const failed = record.pagesFailed > 0 ? (await store.jobs.getFailedPages(jobId)).get(number) : undefined;
  if (failed !== undefined) return { record, selected, page: number, status: "failed", failure: parseFailure(failed) };
  return { record, selected, page: number, status: "pending" };
}

/** The words of every page of the job read so far (at most `limit` pages), in page order, marked for review. */
export async function readJobPagesRead(
  store: Store,
  jobId: string,
  selected: number[],
  limit: number,
): Promise<OcrPage[]> {
  const pages = selected.slice(0, limit);
  const payloads = await store.jobs.getPages(jobId, pages);
  return payloads.flatMap((payload) => (payload ? [publicPage(decodePage(payload).page)] : []));
}

const sourceCaches = new WeakMap<Store, SourceCache>();

/**
 * Page `page` of job `jobId` drawn for display from the job's stored file (never read again, never charged): at most
 * `VIEW_IMAGE_WIDTH` pixels wide and `VIEW_IMAGE_BYTES` bytes. `404` for another account's job; `gone` when the file
 * is no longer stored (a failed or cancelled job's goes at once).
 */
export async function readJobPageImage(
  store: Store,
  env: Env,
  deliveries: DeliveryQueue | null,
  userId: string,
  jobId: string,
  page: number,
  options: { deadline: number; signal?: AbortSignal; pool: OcrPool },
): Promise<PagePreview> {
  const view = await readJobPageView(store, env, deliveries, userId, jobId, page);
  let cache = sourceCaches.get(store);
  if (!cache) {
    cache = new SourceCache(() => store.jobs, VIEW_SOURCE_CACHE_BYTES);
    sourceCaches.set(store, cache);
  }
  let document;
  try {
    document = await cache.get(view.record);
  } catch {
    throw new ApiError(
      "gone",
      `The file of job ${jobId} is no longer stored (a failed or cancelled job's file goes when it ends): its words can still be read`,
    );
  }
  try {
    return await renderPagePreview(document, {
      number: view.page,
      maxWidth: VIEW_IMAGE_WIDTH,
      maxBytes: VIEW_IMAGE_BYTES,
      deadline: options.deadline,
      signal: options.signal,
      tenant: userId,
      pool: options.pool,
    });
  } catch (error) {
    throw fromEngineError(error);
  }
}

/** A page as the json format and the viewer show it: its words marked `review` where they need a second look. */
export function publicPage({
  lineStyles: _lineStyles,
  trace: _trace,
  rotation = 0,
  skew = 0,
  ...page
}: ExtractedPage): OcrPage {
  return markReview({ ...page, rotation, skew });
}

const failureSchema = z.object({ code: z.string(), message: z.string() });

function parseFailure(raw: string): { code: string; message: string } {
  try {
    return failureSchema.parse(JSON.parse(raw));
  } catch {
    return { code: "internal_error", message: "unknown failure" };
  }
}
