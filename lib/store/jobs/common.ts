/*
 * What the two job adapters (redis.ts, memory.ts) share about a job's record as stored: how long it outlives its
 * results, its score in the account's job index, its fields as the create script writes them, and the parse back
 * from stored strings. The record's shape itself is port.ts's.
 */
import { createHash } from "node:crypto";
import { jobRecordSchema, type JobRecord, type NewJob } from "./port";

/**
 * How long a job's record outlives its results: a status request in that time is told the job expired (`410`),
 * after it the id is unknown (`404`).
 */
export const JOB_RECORD_KEEP_MS = 7 * 24 * 60 * 60 * 1000;

/**
 * A job's score in its account's index: creation time in ms × 1000 plus three digits from its id, so that jobs
 * created in the same millisecond keep distinct scores and a page cursor (a score) never skips one.
 */
export function indexScore(createdAt: number, jobId: string): number {
  return createdAt * 1000 + (createHash("sha256").update(jobId).digest().readUInt16BE(0) % 1000);
}

/** A new job's fields as the flat `field, value, …` list the create script writes (absent fields left out). */
export function jobFields(job: NewJob): string[] {
  const fields: string[] = [];
  for (const [name, value] of Object.entries(job)) {
    if (value !== undefined) fields.push(name, String(value));
  }
  return fields;
}

/** A stored record (strings) as a `JobRecord`; the store is a trust boundary. */
export function parseJobRecord(fields: Record<string, unknown>): JobRecord {
  return jobRecordSchema.parse(fields);
}
