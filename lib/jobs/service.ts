import { randomBytes } from "node:crypto";
import type { InputSource } from "@/lib/api/schemas";
import { ApiError } from "@/lib/api/errors";
import type { Env } from "@/lib/env";
import { languageSpec, type DescribedDocument } from "@/lib/ocr";
import { formatPageRanges } from "@/lib/ocr/model";
import { formatMegabytes } from "@/lib/input";
import { actingApp } from "@/lib/keys";
import type { JobRecord, NewJob, Store } from "@/lib/store";
import type { OutputFormat } from "@/lib/vocabulary";
import { jobWebhookView, type DeliveryQueue } from "@/lib/webhooks";
import { endJob, jobPriority } from "./lifecycle";
import { jobSettings, type JobSettings } from "./settings";
import type { WorkQueue } from "./queue/port";
import { requireWorkQueue, type Runtime } from "./work-queue";
import { toJobView, type JobView } from "./view";

/** A document the intake (lib/intake) loaded, checked and decided to read as a job. */
export interface QueueJobInput {
  bytes: Uint8Array;
  inputSource: InputSource;
  /** What the intake's inspection found: type, pages, the pages selected, the language choice (parsed once). */
  document: Pick<DescribedDocument, "type" | "pageCount" | "selectedPages" | "language">;
  format: OutputFormat;
  account: { userId: string; keyId?: string };
  requestId: string;
  /** Epoch ms: the submitting request's deadline (until the job exists, its file lives this long and a few minutes). */
  deadline: number;
  /** The webhook the job's events go to (checked by the intake before anything was fetched). */
  webhookUrl?: string;
  /** The origin the job was submitted to (`https://ocr.example.com`): its webhook event's links are absolute with it. */
  origin?: string;
  /** The jobs' settings (the caller's `jobSettings(overrides, env)`): limits, lifetimes, chunk size. */
  settings: JobSettings;
  /** The process's work queue (`503` without one) and delivery queue (lib/services.ts). */
  queue: WorkQueue | null;
  deliveries: DeliveryQueue | null;
}

/** Job ids: `job_` and 16 random bytes (base64url). */
export const JOB_ID_PATTERN = /^job_[A-Za-z0-9_-]{22}$/;

const plural = (count: number, noun: string) => `${count} ${noun}${count === 1 ? "" : "s"}`;

/**
 * Accept an asynchronous job for a document the intake has loaded and checked: its file stored once, every selected
 * page reserved with the job's creation (`402` when short, before any work), and the job queued. Its pages are read
 * by whichever processes have a free engine process (lib/jobs/runner.ts).
 */
export async function queueJob(
  store: Store,
  input: QueueJobInput,
): Promise<{ view: JobView; creditsRemaining: number }> {
  const queue = requireWorkQueue(input.queue);
  const { bytes, document: described, account, settings, deliveries } = input;
  const jobs = store.jobs;
  const jobId = `job_${randomBytes(16).toString("base64url")}`;
  const now = Date.now();
  const deadline = now + settings.maxDurationMs;
  const stored = await jobs.putSource(jobId, bytes, {
    chunkBytes: settings.chunkBytes,
    // Until createJob gives the file the job's lifetime: a submission that dies in between leaves it for minutes.
    pendingTtlMs: Math.max(0, input.deadline - now) + SOURCE_PENDING_GRACE_MS,
    userId: account.userId,
    maxAccountBytes: settings.maxAccountBytes,
  });
  if (!stored.ok) throw accountFilesFull(bytes.byteLength, stored, settings.maxAccountBytes);
  const created = await createJobRecord(store, {
    ...input,
    jobId,
    now,
    deadline,
    sourceChunks: stored.chunks,
    maxQueuedPages: settings.maxQueuedPages,
  }).catch(async (error: unknown) => {
    await jobs
      .deleteSource(jobId, stored.chunks, { userId: account.userId, bytes: bytes.byteLength })
      .catch(() => undefined);
    throw error;
  });
  try {
    await queue.addDocument({ jobId, step: "open" }, { priority: jobPriority(described.selectedPages.length) });
  } catch (error) {
    // Nothing will read it: the job fails at once and everything comes back.
    await endJob(store, deliveries, settings, jobId, "fail", {
      code: "unavailable",
      message: "The job could not be queued",
    }).catch(() => undefined);
    throw new ApiError("unavailable", "The job queue is unavailable. Please try again shortly; nothing was charged.", {
      cause: error,
    });
  }
  // As accepted (a worker may have started it meanwhile: the status route says so).
  const accepted: JobRecord = {
    ...created.job,
    status: "queued",
    pagesDone: 0,
    pagesFailed: 0,
    creditsUsed: 0,
    creditsRefunded: 0,
  };
  return { view: toJobView(accepted), creditsRemaining: created.balance };
}

/**
 * Create a job's record and reserve every selected page with it, in one step (`createJob`): `402` when the balance
 * is short, `429` past the account's queued pages — nothing written then. The one reservation of a document, whether
 * its pages are read in the background (`queueJob`) or in its request (`readJobInline`, lib/jobs/inline.ts).
 */
export async function createJobRecord(
  store: Store,
  input: Pick<
    QueueJobInput,
    "inputSource" | "document" | "format" | "account" | "requestId" | "webhookUrl" | "origin"
  > & {
    jobId: string;
    bytes: Uint8Array;
    now: number;
    /** Epoch ms the job must have ended by: its reservation is the sweeper's after it. */
    deadline: number;
    sourceChunks: number;
    maxQueuedPages: number;
    settings: Pick<JobSettings, "resultTtlMs">;
    /** The request id its ledger entries name (default: the job id). */
    ledgerId?: string;
  },
): Promise<{ job: NewJob; balance: number }> {
  const { jobId, document: described, account, webhookUrl, settings, now } = input;
  const pages = described.selectedPages.length;
  const job: NewJob = {
    id: jobId,
    userId: account.userId,
    ...(account.keyId && { keyId: account.keyId }),
    requestId: input.requestId,
    createdAt: now,
    deadline: input.deadline,
    expiresAt: input.deadline + settings.resultTtlMs,
    fileType: described.type,
    inputSource: input.inputSource,
    bytes: input.bytes.byteLength,
    sourceChunks: input.sourceChunks,
    pageCount: described.pageCount,
    selection: formatPageRanges(described.selectedPages),
    pagesTotal: pages,
    creditsReserved: pages,
    format: input.format,
    language: languageSpec(described.language),
    ...(webhookUrl && { webhookUrl }),
    ...(webhookUrl && input.origin && { origin: input.origin }),
  };
  const at = new Date(now);
  const created = await store.jobs.createJob(job, {
    entry: {
      id: `led_${randomBytes(12).toString("base64url")}`,
      at: at.toISOString(),
      reason: "ocr",
      requestId: input.ledgerId ?? jobId,
      ...(account.keyId && { keyId: account.keyId }),
      format: job.format,
    },
    day: at.toISOString().slice(0, 10),
    maxQueuedPages: input.maxQueuedPages,
    ttlMs: settings.resultTtlMs,
  });
  if (created.ok) return { job, balance: created.balance };
  switch (created.reason) {
    case "insufficient_credits":
      throw new ApiError(
        "insufficient_credits",
        `Insufficient credits: this ${input.ledgerId ? "request" : "job"} needs ${plural(pages, "credit")} (${plural(pages, "page")}) and the balance is ${created.balance}`,
        { headers: { "x-credits-remaining": String(created.balance) } },
      );
    case "queue_full":
      throw new ApiError(
        "rate_limited",
        `This account already has ${plural(created.queued, "page")} waiting in its jobs; at most ${input.maxQueuedPages} may wait (MAX_QUEUED_PAGES_PER_ACCOUNT). Submit this job when some have finished.`,
        { headers: { "Retry-After": "60" } },
      );
    case "duplicate":
      throw new ApiError("internal_error", "A job with this id exists", {
        cause: new Error(`duplicate job id ${jobId}`),
      });
  }
}

/** How much longer than its submission's deadline a job's file, written before the job, lives without it. */
const SOURCE_PENDING_GRACE_MS = 5 * 60_000;

/**
 * `429`: the account's stored job files and kept answers and this one would pass `jobSettings().maxAccountBytes` (twice
 * `MAX_JOB_URL_BYTES`; its kept renderings were dropped first).
 */
function accountFilesFull(
  bytes: number,
  { used, releasedAt }: { used: number; releasedAt: number | null },
  max: number,
): ApiError {
  const retryAfterS = releasedAt === null ? 60 : Math.max(1, Math.ceil((releasedAt - Date.now()) / 1000));
  const when = releasedAt === null ? "" : ` The first of them is released at ${new Date(releasedAt).toISOString()}.`;
  return new ApiError(
    "rate_limited",
    `This account's jobs already hold ${formatMegabytes(used)} of files (queued, running, or kept with their results) ` +
      "and kept answers, and " +
      `this one (${formatMegabytes(bytes)}) would pass the ${formatMegabytes(max)} they may hold (twice MAX_JOB_URL_BYTES).${when} ` +
      "Submit it when earlier jobs have ended (a failed or cancelled job's file goes at once), or read it synchronously " +
      "(POST /api/ocr/process) if it fits one request. Nothing was charged.",
    { headers: { "Retry-After": String(retryAfterS) } },
  );
}

/** The job `jobId` of `userId`: `404` for another account's or an unknown one, `410` once its results expired. */
export async function findJob(
  store: Store,
  env: Env,
  deliveries: DeliveryQueue | null,
  userId: string,
  jobId: string,
): Promise<JobRecord> {
  const settings = jobSettings({}, env);
  if (!JOB_ID_PATTERN.test(jobId)) {
    throw new ApiError("not_found", "No such job: job ids look like job_ followed by 22 letters, digits, - or _");
  }
  const record = await store.jobs.getJob(jobId);
  if (!record || record.userId !== userId) {
    throw new ApiError(
      "not_found",
      `No job ${jobId} for this account: it was never submitted with this account's keys, or it expired more than 7 days ago`,
    );
  }
  if ((record.status === "queued" || record.status === "running") && record.deadline <= Date.now()) {
    // Past its time (its processes were gone for a day): it ends now, and what it did not read comes back.
    await endJob(store, deliveries, settings, jobId, "fail", {
      code: "timeout",
      message: `The job did not finish within ${Math.round(settings.maxDurationMs / 3_600_000)} h`,
    });
    return findJob(store, env, deliveries, userId, jobId);
  }
  if (record.finishedAt !== undefined && record.expiresAt <= Date.now()) {
    throw new ApiError(
      "gone",
      `Job ${jobId} expired at ${new Date(record.expiresAt).toISOString()}: results are kept ${Math.round(settings.resultTtlMs / 3_600_000)} h after a job ends`,
    );
  }
  return record;
}

/**
 * `findJob` for reading the job's text: a connected app (an OAuth access token, lib/keys `actingApp`) reads only the
 * jobs it started — those whose `keyId` is its grant's id — as its consent said ("the text of the jobs it starts",
 * lib/oauth SCOPES); another's, a key's or one that records no creator is `404` to it, as another account's is. API
 * keys and the session read every job of the account.
 */
export async function findReadableJob(
  store: Store,
  env: Env,
  deliveries: DeliveryQueue | null,
  userId: string,
  jobId: string,
): Promise<JobRecord> {
  const record = await findJob(store, env, deliveries, userId, jobId);
  const app = actingApp();
  if (app !== null && record.keyId !== app) {
    throw new ApiError(
      "not_found",
      `No job ${jobId} of this app: a connected app reads the text of the jobs it started, not those of the account's API keys or other apps`,
    );
  }
  return record;
}

/** `GET /api/ocr/jobs/{id}`. */
export async function getJobView(
  store: Store,
  env: Env,
  deliveries: DeliveryQueue | null,
  userId: string,
  jobId: string,
): Promise<JobView> {
  const record = await findJob(store, env, deliveries, userId, jobId);
  const failed = record.pagesFailed > 0 ? await store.jobs.getFailedPages(jobId) : new Map<number, string>();
  const view = toJobView(record, failed);
  const webhook = await jobWebhookView(store, record);
  if (webhook) view.webhook = webhook;
  return view;
}

/** `DELETE /api/ocr/jobs/{id}`: pages not read yet are refunded; a job that has ended is answered as it is. */
export async function cancelJob(
  store: Store,
  env: Env,
  { workQueue, deliveries }: Pick<Runtime, "workQueue" | "deliveries">,
  userId: string,
  jobId: string,
): Promise<JobView> {
  await findJob(store, env, deliveries, userId, jobId);
  const ended = await endJob(store, deliveries, jobSettings({}, env), jobId, "cancel", {
    code: "cancelled",
    message: "Cancelled by the account",
  });
  if (ended) await workQueue?.dropPages(jobId).catch(() => undefined);
  return getJobView(store, env, deliveries, userId, jobId);
}

/** `GET /api/ocr/jobs`: the account's jobs, newest first. */
export async function listJobViews(
  store: Store,
  userId: string,
  { limit = 20, cursor }: { limit?: number; cursor?: string | null },
): Promise<{ jobs: JobView[]; nextCursor: string | null }> {
  const page = await store.jobs.listJobs(userId, {
    limit: Math.min(100, Math.max(1, Math.trunc(limit) || 20)),
    cursor: cursor ?? null,
  });
  return { jobs: page.jobs.map((record) => toJobView(record)), nextCursor: page.nextCursor };
}
