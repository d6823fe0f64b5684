import { randomBytes } from "node:crypto";
import type { OcrRequest } from "@/lib/api/schemas";
import { getEnv } from "@/lib/env";
import { ApiError } from "@/lib/api/errors";
import { decodeBase64Input, fetchRemoteFile, readOwnSample, type ResolveHost } from "@/lib/input";
import { describeDocument, type OcrPool } from "@/lib/ocr";
import { formatPageRanges } from "@/lib/ocr/model";
import { fromEngineError } from "@/lib/process";
import { getStore, type JobRecord, type NewJob } from "@/lib/store";
import { jobWebhookView, resolveJobWebhook } from "@/lib/webhooks";
import { endJob, jobPriority } from "./lifecycle";
import { getWorkQueue, jobSettings, requireWorkQueue } from "./settings";
import { toJobView, type JobView } from "./view";

export interface SubmitJobInput {
  body: OcrRequest;
  account: { userId: string; keyId?: string };
  requestId: string;
  /** Epoch ms: the submitting request's deadline (the file is fetched and checked within it). */
  deadline: number;
  pool?: OcrPool;
  resolveHost?: ResolveHost;
  /** The `Host` the request was sent to: an `imageUrl` of this deployment's own samples is read, not fetched. */
  serverHost?: string;
  /** The origin the job was submitted to (`https://ocr.example.com`): its webhook event's links are absolute with it. */
  origin?: string;
}

/** Job ids: `job_` and 16 random bytes (base64url). */
export const JOB_ID_PATTERN = /^job_[A-Za-z0-9_-]{22}$/;

const plural = (count: number, noun: string) => `${count} ${noun}${count === 1 ? "" : "s"}`;

/**
 * Accept an asynchronous job: the file is loaded (inline, or fetched up to `MAX_JOB_URL_BYTES`) and checked as a
 * request's is (type, size, pages, language: the same 4xx), stored once, every selected page reserved (`402` when
 * short, before any work), and the job queued. Its pages are read by whichever processes have a free engine
 * process (lib/jobs/runner.ts).
 */
export async function submitJob(input: SubmitJobInput): Promise<{ view: JobView; creditsRemaining: number }> {
  const queue = requireWorkQueue();
  const settings = jobSettings();
  const { body, account, requestId } = input;
  // Checked first: a bad webhook URL is a 400 before any file is fetched or credit reserved.
  const webhookUrl = await resolveJobWebhook(account.userId, body.webhook?.url, { resolveHost: input.resolveHost });
  const { bytes, inputSource } = await loadJobInput(body, input.deadline, settings.maxUrlBytes, input);
  let described;
  try {
    described = await describeDocument(bytes, {
      pages: body.options?.pages,
      language: body.options?.language,
      maxPages: settings.maxPages,
      deadline: input.deadline,
      pool: input.pool,
      tenant: account.userId,
    });
  } catch (error) {
    throw fromEngineError(error, { pages: body.options?.pages, job: true });
  }

  const jobs = getStore().jobs;
  const jobId = `job_${randomBytes(16).toString("base64url")}`;
  const now = Date.now();
  const deadline = now + settings.maxDurationMs;
  const sourceChunks = await jobs.putSource(jobId, bytes, { chunkBytes: settings.chunkBytes, ttlMs: settings.maxDurationMs + settings.resultTtlMs });
  const pages = described.selectedPages.length;
  const job: NewJob = {
    id: jobId,
    userId: account.userId,
    ...(account.keyId && { keyId: account.keyId }),
    requestId,
    createdAt: now,
    deadline,
    expiresAt: deadline + settings.resultTtlMs,
    fileType: described.type,
    inputSource,
    bytes: bytes.byteLength,
    sourceChunks,
    pageCount: described.pageCount,
    selection: formatPageRanges(described.selectedPages),
    pagesTotal: pages,
    creditsReserved: pages,
    format: body.options?.format ?? "text",
    language: body.options?.language ?? "auto",
    ...(webhookUrl && { webhookUrl }),
    ...(webhookUrl && input.origin && { origin: input.origin }),
  };
  const at = new Date(now);
  const created = await jobs.createJob(job, {
    entry: {
      id: `led_${randomBytes(12).toString("base64url")}`,
      at: at.toISOString(),
      reason: "ocr",
      requestId: jobId,
      ...(account.keyId && { keyId: account.keyId }),
      format: job.format,
    },
    day: at.toISOString().slice(0, 10),
    maxQueuedPages: settings.maxQueuedPages,
    ttlMs: settings.resultTtlMs,
  });
  if (!created.ok) {
    await jobs.deleteSource(jobId, sourceChunks).catch(() => undefined);
    switch (created.reason) {
      case "insufficient_credits":
        throw new ApiError(
          "insufficient_credits",
          `Insufficient credits: this job needs ${plural(pages, "credit")} (${plural(pages, "page")}) and the balance is ${created.balance}`,
          { headers: { "x-credits-remaining": String(created.balance) } },
        );
      case "queue_full":
        throw new ApiError(
          "rate_limited",
          `This account already has ${plural(created.queued, "page")} waiting in its jobs; at most ${settings.maxQueuedPages} may wait (MAX_QUEUED_PAGES_PER_ACCOUNT). Submit this job when some have finished.`,
          { headers: { "Retry-After": "60" } },
        );
      case "duplicate":
        throw new ApiError("internal_error", "A job with this id exists", { cause: new Error(`duplicate job id ${jobId}`) });
    }
  }
  try {
    await queue.addDocument({ jobId, step: "open" }, { priority: jobPriority(pages) });
  } catch (error) {
    // Nothing will read it: the job fails at once and everything comes back.
    await endJob(jobId, "fail", { code: "unavailable", message: "The job could not be queued" }).catch(() => undefined);
    throw new ApiError("unavailable", "The job queue is unavailable. Please try again shortly; nothing was charged.", { cause: error });
  }
  // As accepted (a worker may have started it meanwhile: the status route says so).
  const accepted: JobRecord = { ...job, status: "queued", pagesDone: 0, pagesFailed: 0, creditsUsed: 0, creditsRefunded: 0 };
  return { view: toJobView(accepted), creditsRemaining: created.balance };
}

async function loadJobInput(
  body: OcrRequest,
  deadline: number,
  maxUrlBytes: number,
  { resolveHost, serverHost }: Pick<SubmitJobInput, "resolveHost" | "serverHost">,
): Promise<{ bytes: Uint8Array; inputSource: "base64" | "url" }> {
  const env = getEnv();
  if (body.image !== undefined) return { bytes: decodeBase64Input(body.image, env.MAX_INLINE_BYTES), inputSource: "base64" };
  const sample = await readOwnSample(body.imageUrl!, serverHost);
  if (sample) return { bytes: sample, inputSource: "url" };
  const controller = new AbortController();
  const remaining = Math.max(0, deadline - Date.now());
  const timer = setTimeout(() => controller.abort(new ApiError("timeout", "The request deadline passed while fetching imageUrl")), remaining);
  try {
    const file = await fetchRemoteFile(body.imageUrl!, {
      signal: controller.signal,
      resolveHost,
      maxBytes: maxUrlBytes,
      // A large file may need longer than a request's fetch; the submission's deadline still bounds it.
      timeoutMs: Math.max(env.URL_FETCH_TIMEOUT_MS, remaining - 10_000),
    });
    return { bytes: file.bytes, inputSource: "url" };
  } finally {
    clearTimeout(timer);
  }
}

/** The job `jobId` of `userId`: `404` for another account's or an unknown one, `410` once its results expired. */
export async function findJob(userId: string, jobId: string): Promise<JobRecord> {
  if (!JOB_ID_PATTERN.test(jobId)) {
    throw new ApiError("not_found", "No such job: job ids look like job_ followed by 22 letters, digits, - or _");
  }
  const record = await getStore().jobs.getJob(jobId);
  if (!record || record.userId !== userId) {
    throw new ApiError(
      "not_found",
      `No job ${jobId} for this account: it was never submitted with this account's keys, or it expired more than 7 days ago`,
    );
  }
  if ((record.status === "queued" || record.status === "running") && record.deadline <= Date.now()) {
    // Past its time (its processes were gone for a day): it ends now, and what it did not read comes back.
    await endJob(jobId, "fail", {
      code: "timeout",
      message: `The job did not finish within ${Math.round(jobSettings().maxDurationMs / 3_600_000)} h (JOB_MAX_DURATION)`,
    });
    return findJob(userId, jobId);
  }
  if (record.finishedAt !== undefined && record.expiresAt <= Date.now()) {
    throw new ApiError(
      "gone",
      `Job ${jobId} expired at ${new Date(record.expiresAt).toISOString()}: results are kept ${Math.round(jobSettings().resultTtlMs / 3_600_000)} h after a job ends`,
    );
  }
  return record;
}

/** `GET /api/ocr/jobs/{id}`. */
export async function getJobView(userId: string, jobId: string): Promise<JobView> {
  const record = await findJob(userId, jobId);
  const failed = record.pagesFailed > 0 ? await getStore().jobs.getFailedPages(jobId) : new Map<number, string>();
  const view = toJobView(record, failed);
  const webhook = await jobWebhookView(record);
  if (webhook) view.webhook = webhook;
  return view;
}

/** `DELETE /api/ocr/jobs/{id}`: pages not read yet are refunded; a job that has ended is answered as it is. */
export async function cancelJob(userId: string, jobId: string): Promise<JobView> {
  await findJob(userId, jobId);
  const ended = await endJob(jobId, "cancel", { code: "cancelled", message: "Cancelled by the account" });
  if (ended) await getWorkQueue()?.dropPages(jobId).catch(() => undefined);
  return getJobView(userId, jobId);
}

/** `GET /api/ocr/jobs`: the account's jobs, newest first. */
export async function listJobViews(userId: string, { limit = 20, cursor }: { limit?: number; cursor?: string | null }): Promise<{ jobs: JobView[]; nextCursor: string | null }> {
  const page = await getStore().jobs.listJobs(userId, { limit: Math.min(100, Math.max(1, Math.trunc(limit) || 20)), cursor: cursor ?? null });
  return { jobs: page.jobs.map((record) => toJobView(record)), nextCursor: page.nextCursor };
}
