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
    view.failedPages = [...failed]
      .sort((a, b) => a[0] - b[0])
      .map(([page, raw]) => ({ page, ...parseFailure(raw) }));
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
