import { randomBytes } from "node:crypto";
import type { JobStatus, LedgerDraft, Store } from "@/lib/store";
import { announceJobEnd, type DeliveryQueue } from "@/lib/webhooks";
import type { JobSettings } from "./settings";

/**
 * End a job (finished, cancelled or failed): what it still has reserved is refunded with one `refund` ledger entry
 * (its request id the job's), its results expire `JOB_RESULT_TTL` from now, and its webhook (if any) is announced —
 * by this caller only, the one whose end step changed the job. Null when it had already ended. `settings`: the
 * caller's job settings (the results' lifetime); `deliveries`: the process's delivery queue (the event's).
 */
export async function endJob(
  store: Store,
  deliveries: DeliveryQueue | null,
  settings: Pick<JobSettings, "resultTtlMs">,
  jobId: string,
  end: "finish" | "cancel" | "fail",
  error?: { code: string; message: string },
): Promise<{ status: JobStatus; refunded: number } | null> {
  const now = new Date();
  const entry: LedgerDraft = {
    id: `led_${randomBytes(12).toString("base64url")}`,
    at: now.toISOString(),
    reason: "refund",
    requestId: jobId,
  };
  const ended = await store.jobs.endJob(jobId, {
    end,
    ...(error && { error: JSON.stringify(error) }),
    now: now.getTime(),
    resultTtlMs: settings.resultTtlMs,
    entry,
    day: now.toISOString().slice(0, 10),
  });
  if (ended) await announceJobEnd(store, deliveries, jobId);
  return ended;
}

/**
 * A job's queue priority (lower first): its size class, so that a small job is not stuck behind every page of a
 * 2 000-page one; jobs of one class keep their order.
 */
export function jobPriority(pages: number): number {
  return 1 + Math.ceil(Math.log2(Math.max(1, pages)));
}

/** A failed page as the job store records it. */
export function pageFailure(code: string, message: string): string {
  return JSON.stringify({ code, message: message.slice(0, 300) });
}
