import { z } from "zod";
import { outputFormats } from "@/lib/vocabulary";
import type { LedgerDraft } from "../credits/port";

/**
 * Asynchronous OCR jobs (lib/jobs is the caller): one record per job, its pages' results, the failed pages' codes,
 * the source file in chunks, and the account's list of jobs. A job's credits are a reservation of the credit port's
 * kind (`reservation:{userId}:{jobId}`): taken whole at submit, a page's credit becomes spent when its result is
 * stored, and what is left (failed, cancelled and unread pages) is refunded when the job ends — each of these one
 * atomic step with the job's own counters, so the books balance at every moment.
 */

export const jobStatuses = ["queued", "running", "succeeded", "failed", "cancelled"] as const;
export type JobStatus = (typeof jobStatuses)[number];

/** Statuses a job can still leave: its pages may still be read. */
export const activeJobStatuses: readonly JobStatus[] = ["queued", "running"];

const ms = z.coerce.number().int().min(0);
const count = z.coerce.number().int().min(0);

/** The job record as stored (a Redis hash of strings; parsed with coercion). */
export const jobRecordSchema = z.object({
  id: z.string(),
  userId: z.string(),
  keyId: z.string().optional(),
  /** The request that submitted it (its log line). */
  requestId: z.string(),
  status: z.enum(jobStatuses),
  createdAt: ms,
  startedAt: ms.optional(),
  finishedAt: ms.optional(),
  /** Epoch ms by which the job must have ended; its reservation is the sweeper's after it. */
  deadline: ms,
  /** Epoch ms after which its results are gone (set when it ends; before, the deadline plus the result TTL). */
  expiresAt: ms,
  fileType: z.enum(["pdf", "jpeg", "png", "webp", "tiff"]),
  inputSource: z.enum(["base64", "url", "upload"]),
  /** Bytes of the source file. */
  bytes: count,
  /** Chunks the source file is stored in. */
  sourceChunks: count,
  /** Pages in the file. */
  pageCount: count,
  /** The selected pages as ranges, e.g. `1-120` or `1-3,5` (what was reserved). */
  selection: z.string(),
  pagesTotal: count,
  pagesDone: count,
  pagesFailed: count,
  creditsReserved: count,
  /** Pages delivered: each one credit. */
  creditsUsed: count,
  /** Given back when the job ended. */
  creditsRefunded: count,
  /** The request's `options.format`: the result's default format. */
  format: z.enum(outputFormats),
  /** The request's `options.language` (`auto` unless given). */
  language: z.string(),
  /** A failed or cancelled job: why, as `{"code","message"}` JSON. */
  error: z.string().optional(),
  /** Where its end is announced (`webhook.url`, else the account's default URL when it was submitted). */
  webhookUrl: z.string().optional(),
  /** The origin it was submitted to: the result's absolute URL in its webhook event. */
  origin: z.string().optional(),
});
export type JobRecord = z.infer<typeof jobRecordSchema>;

/** Where a job stands, as its status view and its webhook events both report it (the same names, in this order). */
export function jobCounts(record: JobRecord) {
  return {
    status: record.status,
    pageCount: record.pageCount,
    pagesTotal: record.pagesTotal,
    pagesDone: record.pagesDone,
    pagesFailed: record.pagesFailed,
    creditsReserved: record.creditsReserved,
    creditsUsed: record.creditsUsed,
    creditsRefunded: record.creditsRefunded,
    format: record.format,
  };
}

/** What `createJob` writes: the record with its counters at their start. */
export type NewJob = Omit<
  JobRecord,
  "status" | "pagesDone" | "pagesFailed" | "creditsUsed" | "creditsRefunded" | "startedAt" | "finishedAt" | "error"
>;

export type CreateJobResult =
  | { ok: true; balance: number }
  | { ok: false; reason: "insufficient_credits"; balance: number }
  | { ok: false; reason: "queue_full"; queued: number }
  | { ok: false; reason: "duplicate" };

/** What recording pages did. */
export interface PageOutcome {
  /** Pages recorded now. */
  stored: number;
  /** Pages that already had a result or a failure (a page read twice is charged once). */
  duplicates: number;
  /** The job has ended, or its reservation is gone (expired and refunded by the sweeper): nothing more was recorded. */
  inactive: boolean;
  /** No page of the job is left unread. */
  last: boolean;
}

export interface JobPageList {
  jobs: JobRecord[];
  /** Pass back for older jobs; null when there are none. */
  nextCursor: string | null;
}

export interface JobStore {
  /**
   * Reserve `pagesTotal` credits and create the job, atomically: refused without writing anything when the balance
   * is short, when the account already has `maxQueuedPages` pages waiting in its active jobs, or when the id exists.
   * The reservation's ledger entry (`ocr`, its request id the job id) is `entry`.
   */
  createJob(
    job: NewJob,
    input: { entry: LedgerDraft; day: string; maxQueuedPages: number; ttlMs: number },
  ): Promise<CreateJobResult>;
  /** A queued job is running from `now` (its document is being opened). False when it was not queued. */
  startJob(jobId: string, now: number): Promise<boolean>;
  getJob(jobId: string): Promise<JobRecord | null>;
  /** The account's jobs, newest first. */
  listJobs(userId: string, options: { limit: number; cursor?: string | null }): Promise<JobPageList>;
  /**
   * Store pages' results and spend a credit for each, atomically per page: nothing is stored once the job has ended
   * or its reservation is gone (expired and refunded by the sweeper), and a page that already has a result or a
   * failure is not stored again (a page read twice is charged once).
   */
  storePages(jobId: string, pages: Array<{ page: number; payload: string }>, now: number): Promise<PageOutcome>;
  /** Record a page's failure, `{"code","message"}` JSON (its credit comes back when the job ends). */
  failPage(jobId: string, page: number, failure: string, now: number): Promise<PageOutcome>;
  /**
   * End an active job: `cancelled` (`cancel`), `failed` (`fail`, with its error) or, for `finish`, `succeeded` when
   * a page was delivered and `failed` when none was. Everything still reserved is refunded with `entry`, the
   * reservation closes, and the job's keys expire `resultTtlMs` from now. Null when the job was not active (already
   * ended, or unknown): nothing changes.
   */
  endJob(jobId: string, input: EndJobInput): Promise<EndedJob | null>;
  /**
   * A job read in its request (lib/jobs/inline.ts) ends in one step: `pages` stored and charged as `storePages`
   * stores them, then the job ended as `endJob` ends it — one round trip where the store can (the two scripts in one
   * pipeline). `owner` is the job's account and source chunks, known to the caller: nothing is read first.
   */
  storeAndEnd(
    jobId: string,
    owner: { userId: string; sourceChunks: number },
    pages: Array<{ page: number; payload: string }>,
    input: EndJobInput,
  ): Promise<{ outcome: PageOutcome; ended: EndedJob | null }>;
  /** Page results by number (missing ones are null), in the order asked. */
  getPages(jobId: string, pages: number[]): Promise<Array<string | null>>;
  /** Failed pages: number → their failure JSON. */
  getFailedPages(jobId: string): Promise<Map<number, string>>;
  /** Numbers of the pages that have a result. */
  listDonePages(jobId: string): Promise<number[]>;
  /**
   * Store a job's file in chunks of at most `chunkBytes`, as bytes where the store can (Redis over TCP; base64 over
   * Upstash REST), counted against the account's stored files first: refused (`ok: false`, nothing written) when the
   * account's files (of jobs queued, running, or kept for their results) and this one would pass `maxAccountBytes`.
   * The chunks live `pendingTtlMs` until `createJob` gives them the job's lifetime, so a submission that dies between
   * the two leaves nothing for long. A write that fails part-way deletes what it wrote (and the count) before it throws.
   */
  putSource(jobId: string, bytes: Uint8Array, input: PutSourceInput): Promise<PutSourceResult>;
  /** The source file, or null when it is gone. */
  getSource(jobId: string, chunks: number): Promise<Uint8Array | null>;
  /** Drop a source stored for a job that was then refused, and its count on the account. */
  deleteSource(jobId: string, chunks: number, owner?: { userId: string; bytes: number }): Promise<void>;
  /**
   * Keep a finished job's result as rendered (`variant`: its format and pages) in chunks of at most `chunkBytes`, with
   * `info` (what the answer needs beside the bytes), for `ttlMs`: it is read again instead of rendered again. Its bytes
   * count against the account's cap (`maxAccountBytes`, with its job files and kept answers): past it, the account's
   * renderings that expire first are deleted to make room (they can be made again), and when its files and kept
   * answers alone leave no room, nothing is kept (false). The chunks are written first and the record naming them
   * last, so a reader never sees part of one.
   */
  putRendering(
    jobId: string,
    variant: string,
    bytes: Uint8Array,
    input: { chunkBytes: number; ttlMs: number; info: string; userId: string; maxAccountBytes: number },
  ): Promise<boolean>;
  /**
   * Count `bytes` that the account keeps elsewhere in the store for `ttlMs` (a kept answer: `name` says which, e.g.
   * `t:{textId}`) against its cap, deleting its renderings that expire first when they are in the way. Refused
   * (`ok: false`, nothing counted) when its job files and kept answers would pass `maxAccountBytes`.
   */
  keepBytes(
    userId: string,
    input: { name: string; bytes: number; ttlMs: number; maxAccountBytes: number },
  ): Promise<{ ok: true } | { ok: false; used: number; releasedAt: number | null }>;
  /** What `putRendering` kept for `variant`: its chunk count, size and info; null when there is none (or it expired). */
  getRenderingInfo(jobId: string, variant: string): Promise<{ chunks: number; bytes: number; info: string } | null>;
  /** One chunk of a kept rendering, or null when it is gone. */
  getRenderingChunk(jobId: string, variant: string, chunk: number): Promise<Uint8Array | null>;
}

export interface EndJobInput {
  end: "finish" | "cancel" | "fail";
  error?: string;
  now: number;
  resultTtlMs: number;
  entry: LedgerDraft;
  day: string;
}

export interface EndedJob {
  status: JobStatus;
  refunded: number;
}

export interface PutSourceInput {
  chunkBytes: number;
  /** How long the chunks (and their count on the account) live unless `createJob` takes them. */
  pendingTtlMs: number;
  userId: string;
  /** Most bytes of job files the account may have stored at once (`jobSettings().maxAccountBytes`). */
  maxAccountBytes: number;
}

export type PutSourceResult =
  | { ok: true; chunks: number }
  /** Over the account's cap (job files and kept answers; renderings are dropped first): `used` bytes are stored, the first of them released at `releasedAt` (epoch ms), if known. */
  | { ok: false; used: number; releasedAt: number | null };
