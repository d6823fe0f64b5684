import { randomBytes } from "node:crypto";
import { apiCode, isApiError } from "@/lib/api/errors";
import type { InputSource } from "@/lib/api/schemas";
import { errorLabel } from "@/lib/error-log";
import type { DescribedDocument } from "@/lib/ocr";
import type { ExtractedPage, LanguageChoice } from "@/lib/ocr/model";
import type { EndJobInput, Store } from "@/lib/store";
import type { OutputFormat } from "@/lib/vocabulary";
import { encodePage } from "./payload";
import { createJobRecord } from "./service";
import { describe } from "./task-failures";
import type { JobSettings } from "./settings";

/**
 * A document read in its request is a job too (docs/decisions.md#every-document-a-job): created with the one
 * reservation of its pages, read by the request's own process — no queue, no file written to the store — and ended
 * in one step with the pages it delivers (`finish`), or with nothing charged (`fail`: a deadline, a client gone, an
 * engine error). A process killed in between leaves the reservation to the sweeper at the request's deadline.
 */
export interface InlineJob {
  id: string;
  /** The balance after the reservation (what `x-credits-remaining` says once it is finished). */
  balance: number;
  /**
   * Store the pages read (one credit each) and end the job; resolves to the balance after, or null when the job was
   * no longer active (cancelled meanwhile: nothing stored, nothing charged). Nothing is thrown: a store failure is
   * logged, and the reservation then stays open until the sweeper refunds it (in doubt, the client is not charged).
   */
  finish(pages: ExtractedPage[], language: LanguageChoice): Promise<number | null>;
  /**
   * Look at the job every `pollMs` while it is read: once it is no longer active (a cancel: `cancelJob`, from any
   * instance), the returned signal aborts. `stop()` ends the looks.
   */
  watch(pollMs: number): { signal: AbortSignal; stop(): void };
  /** End the job with everything refunded, `error` its reason. Never throws (as `finish`). */
  fail(error: unknown): Promise<void>;
}

export interface InlineJobInput {
  document: Pick<DescribedDocument, "type" | "pageCount" | "selectedPages" | "language">;
  bytes: Uint8Array;
  inputSource: InputSource;
  format: OutputFormat;
  account: { userId: string; keyId?: string };
  /** The request's id: the job's `requestId`, and the id its ledger entries name. */
  requestId: string;
  /** The request's deadline: the reservation is the sweeper's after it. */
  deadline: number;
  settings: Pick<JobSettings, "resultTtlMs" | "workerName">;
  /** This process's name on the pages it reads (`readBy`). */
  name: string;
}

/** Reserve a document's pages as a job read in its request (`402` when the balance is short: nothing written). */
export async function openInlineJob(store: Store, input: InlineJobInput): Promise<InlineJob> {
  const { account, requestId, settings } = input;
  const jobId = `job_${randomBytes(16).toString("base64url")}`;
  const now = Date.now();
  const end = (end: EndJobInput["end"], error?: { code: string; message: string }): EndJobInput => {
    const at = new Date();
    return {
      end,
      ...(error && { error: JSON.stringify(error) }),
      now: at.getTime(),
      resultTtlMs: settings.resultTtlMs,
      entry: {
        id: `led_${randomBytes(12).toString("base64url")}`,
        at: at.toISOString(),
        reason: "refund",
        requestId,
        ...(account.keyId && { keyId: account.keyId }),
        format: input.format,
      },
      day: at.toISOString().slice(0, 10),
    };
  };
  const owner = { userId: account.userId, sourceChunks: 0 };
  const { job, balance } = await createJobRecord(store, {
    ...input,
    jobId,
    now,
    sourceChunks: 0,
    // Read now, not waiting: the account's queue of job pages does not bound it.
    maxQueuedPages: Number.MAX_SAFE_INTEGER,
    ledgerId: requestId,
  }).catch(async (error: unknown) => {
    if (isApiError(error) && error.code !== "unavailable") throw error; // refused: nothing was written
    // The reply may be lost after the store ran it (a timeout, a dropped connection): the job, if it exists, ends at
    // once with everything refunded, so the service never both charges and refuses. If that fails too, the sweeper
    // refunds the reservation at the request's deadline.
    await store.jobs.endJob(jobId, end("fail", describe(error))).then(
      (ended) => {
        if (ended && ended.refunded > 0)
          console.error(`[${requestId}] a reserve's reply was lost after it ran: ${ended.refunded} credits refunded`);
      },
      () => console.error(`[${requestId}] reserve failed and could not be reconciled now; the sweep will refund it`),
    );
    throw error;
  });
  return {
    id: jobId,
    balance,
    async finish(pages, language) {
      const payloads = pages.map((page) => ({
        page: page.number,
        payload: encodePage({ page, language, readBy: input.name, ms: 0 }),
      }));
      try {
        const { outcome, ended } = await store.jobs.storeAndEnd(jobId, owner, payloads, end("finish"));
        // Cancelled before its pages were stored: the cancel refunded the reservation, nothing was charged.
        if (outcome.inactive && outcome.stored === 0 && pages.length > 0) return null;
        return balance + (ended?.refunded ?? 0);
      } catch (error) {
        const settling = `settling ${pages.length}/${job.pagesTotal} credits failed (${errorLabel(error, apiCode)})`;
        console.error(`[${requestId}] ${settling}: ${jobId} keeps its reservation until the sweep refunds it`);
        return balance;
      }
    },
    watch(pollMs) {
      const cancelled = new AbortController();
      const timer = setInterval(() => {
        store.jobs.getJob(jobId).then(
          (record) => {
            if (record !== null && record.status !== "queued" && record.status !== "running")
              cancelled.abort(new Error(`Job ${jobId} is ${record.status}`));
          },
          () => undefined, // a failed look is retried at the next tick
        );
      }, pollMs);
      const stop = () => clearInterval(timer);
      cancelled.signal.addEventListener("abort", stop);
      return { signal: cancelled.signal, stop };
    },
    async fail(error) {
      try {
        await store.jobs.endJob(jobId, end("fail", describe(error)));
      } catch (storeError) {
        console.error(
          `[${requestId}] the refund of ${jobId} failed (${errorLabel(storeError, apiCode)}); the reservation sweep will refund it`,
        );
      }
    },
  };
}
