import { z } from "zod";
import type { JobViewBody } from "@/lib/api/schemas";
import { jobCounts, type JobRecord } from "@/lib/store";

const failureSchema = z.object({ code: z.string(), message: z.string() });

/** What the job routes answer about a job (`jobViewSchema` in lib/api/schemas.ts). */
export type JobView = JobViewBody;

const iso = (ms: number | undefined) => (ms === undefined ? null : new Date(ms).toISOString());

export function jobLinks(jobId: string): JobView["links"] {
  return { self: `/api/ocr/jobs/${jobId}`, result: `/api/ocr/jobs/${jobId}/result` };
}

export function toJobView(record: JobRecord, failed?: ReadonlyMap<number, string>): JobView {
  const view: JobView = {
    success: true,
    jobId: record.id,
    ...jobCounts(record),
    inputSource: record.inputSource,
    createdAt: new Date(record.createdAt).toISOString(),
    startedAt: iso(record.startedAt),
    finishedAt: iso(record.finishedAt),
    expiresAt: new Date(record.expiresAt).toISOString(),
    links: jobLinks(record.id),
  };
  if (failed) {
    view.failedPages = [...failed].sort((a, b) => a[0] - b[0]).map(([page, raw]) => ({ page, ...parseFailure(raw) }));
  }
  if (record.error) view.error = parseFailure(record.error);
  return view;
}

function parseFailure(raw: string): { code: string; message: string } {
  try {
    return failureSchema.parse(JSON.parse(raw));
  } catch {
    return { code: "internal_error", message: "unknown failure" };
  }
}

/** Bounds of the wait a poller is told (`Retry-After`, an MCP task's `pollInterval`), seconds. */
export const POLL_SECONDS = { min: 1, max: 30 } as const;

/**
 * Seconds a poller should wait before asking again about a job that has not ended (null once it has): when its next
 * change is likely. Once pages are read, the job's own pace — time since it started over the pages settled (pages of
 * one job are read side by side, so this is the time between two changes, not one page's time); before the first
 * page, the duration model's expected time for a page (lib/ocr/pool/estimates.ts, `pageEstimateMs`), or half the
 * time the job has already waited when that is longer (it waits behind other work, or its pages are slower than the
 * model knows). Within 1–30 s. Pages of ~17 s each: `Retry-After: 17`, about one poll per page instead of 165 polls
 * for 12 pages at `Retry-After: 1`.
 */
export function pollAfterSeconds(view: JobView, now: number, pageEstimateMs: number): number | null {
  if (view.status !== "queued" && view.status !== "running") return null;
  const settled = view.pagesDone + view.pagesFailed;
  const started = view.startedAt === null ? undefined : Date.parse(view.startedAt);
  let ms: number;
  if (started !== undefined && settled > 0) {
    ms = (now - started) / settled;
  } else {
    const waited = now - (started ?? Date.parse(view.createdAt));
    ms = Math.max(pageEstimateMs, waited / 2);
  }
  return Math.min(POLL_SECONDS.max, Math.max(POLL_SECONDS.min, Math.round(ms / 1000)));
}
