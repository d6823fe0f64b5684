import { createHash, randomBytes } from "node:crypto";
import type { WebhookEvent } from "@/lib/api/schemas";
import { jobCounts, type JobRecord } from "@/lib/store";

/**
 * A job's end event id (`webhook-id`): derived from the job id, so that the event is the same message whoever
 * announces it and however often (the queue keeps one delivery per id), and every attempt carries it.
 */
export function jobEventId(jobId: string): string {
  return `msg_${createHash("sha256").update(`${jobId}:end`).digest("base64url").slice(0, 27)}`;
}

export function testEventId(): string {
  return `msg_${randomBytes(20).toString("base64url")}`;
}

const failure = (raw: string | undefined): { code: string; message: string } | undefined => {
  if (!raw) return undefined;
  try {
    const parsed = JSON.parse(raw) as { code?: unknown; message?: unknown };
    return { code: String(parsed.code ?? "internal_error"), message: String(parsed.message ?? "") };
  } catch {
    return { code: "internal_error", message: "unknown failure" };
  }
};

/** The event announcing a job's end: its counters and links, never its text. */
export function jobEndEvent(record: JobRecord, now = Date.now()): WebhookEvent {
  const status =
    record.status === "succeeded" || record.status === "failed" || record.status === "cancelled"
      ? record.status
      : "failed";
  const base = record.origin ?? "";
  const error = failure(record.error);
  return {
    type: `job.${status}`,
    timestamp: new Date(record.finishedAt ?? now).toISOString(),
    data: {
      id: record.id,
      ...jobCounts(record),
      createdAt: new Date(record.createdAt).toISOString(),
      finishedAt: record.finishedAt === undefined ? null : new Date(record.finishedAt).toISOString(),
      expiresAt: new Date(record.expiresAt).toISOString(),
      ...(error && { error }),
      statusUrl: `${base}/api/ocr/jobs/${record.id}`,
      resultUrl: `${base}/api/ocr/jobs/${record.id}/result`,
    },
  };
}

export function testEvent(now = Date.now()): WebhookEvent {
  return {
    type: "webhook.test",
    timestamp: new Date(now).toISOString(),
    data: { message: "A test event from the settings page: your receiver verified it if it answered 2xx." },
  };
}
