import type { Task } from "@modelcontextprotocol/server";
import { z } from "zod";
import { ocrResponseSchema } from "@/lib/api/schemas";
import { retryAfterFor } from "@/lib/http/jobs";
import { getJobView, type JobView } from "@/lib/jobs";
import type { Env } from "@/lib/env";
import type { Store } from "@/lib/store";
import { outputFormats } from "@/lib/vocabulary";
import { reviewSchema } from "./review";
import type { DeliveryQueue } from "@/lib/webhooks";
import type { Runtime } from "@/lib/jobs";

/*
 * MCP over the asynchronous jobs (lib/jobs): a long document's `extract_text`, the 2025-11-25 tasks (`tasks/get`,
 * `tasks/result`, `tasks/cancel`, `tasks/list`) and `get_extraction` all read and write the job records in the store —
 * nothing is kept in this process, so any instance answers about any job. The task id is the job id. This module holds
 * the shapes the two tools speak (`get_extraction`'s input and output, `extract_text`'s output with its job summary)
 * and a job as a task: its status, its one-line description, and the wait that watches its record. The text in slices
 * with a cursor is ./extraction-slices.ts; a job's answer to a tool call is ./job-answers.ts.
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
      .optional()
      .describe(
        `Pass to ${GET_EXTRACTION} as \`cursor\` for the text not in this answer; absent when this answer holds it all.`,
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
  review: reviewSchema
    .optional()
    .describe(
      "Present when words of the pages read within the call need a second look: how many spans, and where the first are.",
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

/*
 * The output schemas have no `null` in them (no `"type": ["string", "null"]`, no `anyOf` with null): strict clients
 * (Gemini's function declarations) refuse such unions, so a value that may be missing is an optional field instead
 * (issue 39). tests/mcp/raw.test.ts checks the schemas `tools/list` gives and the answers against them.
 */

export const getExtractionOutputSchema = z.object({
  jobId: z
    .string()
    .optional()
    .describe("The job the text comes from; absent for the rest of an answer extract_text read within its call."),
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
    .optional()
    .describe(
      `Pass to ${GET_EXTRACTION} as \`cursor\` to go on; absent once every page asked for was delivered (or can no longer be).`,
    ),
  creditsUsed: z.number().int().min(0),
});

/**
 * A slice of text as ./extraction-slices.ts reads it: `jobId` and `nextCursor` are null where `get_extraction`'s
 * `structuredContent` leaves them out ({@link extractionStructured}).
 */
export type GetExtractionOutput = Omit<z.infer<typeof getExtractionOutputSchema>, "jobId" | "nextCursor"> & {
  jobId: string | null;
  nextCursor: string | null;
};

/** A slice as `get_extraction`'s `structuredContent`: its nulls left out. */
export function extractionStructured(slice: GetExtractionOutput): z.infer<typeof getExtractionOutputSchema> {
  const { jobId, nextCursor, ...rest } = slice;
  return { ...rest, ...(jobId !== null && { jobId }), ...(nextCursor !== null && { nextCursor }) };
}

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
export function toTask(view: JobView, pool: Pick<Runtime["pool"], "estimate">): Task {
  const createdAt = Date.parse(view.createdAt);
  const poll = retryAfterFor(view, pool);
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
  /** The store the job lives in. */
  store: Store;
  /** The configuration (how long a job's results are kept: `findJob`). */
  env: Env;
  deliveries: DeliveryQueue | null;
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
  let view = await getJobView(options.store, options.env, options.deliveries, userId, jobId);
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
    view = await getJobView(options.store, options.env, options.deliveries, userId, jobId);
  }
}

export function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? "" : "s"}`;
}
