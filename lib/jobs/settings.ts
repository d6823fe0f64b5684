import { createHash } from "node:crypto";
import os from "node:os";
import { JOB_ACCOUNT_BYTES_FACTOR, type Env } from "@/lib/env";
import type { TaskSettings } from "./queue/port";

const MiB = 1024 * 1024;

/** The jobs' settings: the configuration's (docs/configuration.md#jobs) and the constants beside them. */
export interface JobSettings extends TaskSettings {
  maxPages: number;
  maxUrlBytes: number;
  resultTtlMs: number;
  maxDurationMs: number;
  maxQueuedPages: number;
  pageDeadlineMs: number;
  runner: "background" | "invoke" | "off";
  fanout: number;
  /**
   * The source file is stored in chunks of this size: under Upstash's 10 MB request limit once base64-encoded, and a
   * little under 4 MiB so a chunk stored as bytes (with its one-byte marker and Redis's string header) fills jemalloc's
   * 4 MiB size class instead of taking the 5 MiB one (docs/decisions.md#job-source).
   */
  chunkBytes: number;
  /**
   * Most bytes of job files one account may have stored (queued, running, kept with results): two files of the largest
   * size a job fetches (`MAX_JOB_URL_BYTES`; was `MAX_JOB_BYTES_PER_ACCOUNT`).
   */
  maxAccountBytes: number;
  /** Source files one process keeps in memory for the pages it reads. */
  sourceCacheBytes: number;
  /** Pages one inspect job reads the text layers of: small, so a request's PDF never waits long behind a job's. */
  inspectChunk: number;
  /** This process's name on the pages it reads (`readBy`): `npm run worker -- --name`, else a hash of host and pid. */
  workerName?: string;
}

/** Seconds a job may take from submission to its end; past it what it did not read is refunded (was `JOB_MAX_DURATION`). */
const JOB_MAX_DURATION_MS = 24 * 60 * 60 * 1000;
/** Most time one page of a job may take in an engine process; past it the page fails alone (was `JOB_PAGE_DEADLINE_MS`). */
const JOB_PAGE_DEADLINE_MS = 120_000;
/** Invocations of the internal work route one submission starts, `invoke` runner (was `JOB_FANOUT`). */
const JOB_FANOUT = 4;
/** A taken task's lock: a process that died lets it lapse and its task is taken over (was `JOB_LOCK_MS`). */
const JOB_LOCK_MS = 30_000;
/** How often every process looks for tasks whose process died (was `JOB_STALLED_INTERVAL_MS`). */
const JOB_STALLED_INTERVAL_MS = 30_000;

/**
 * The jobs' settings: the operator's variables (`env`), the constants above, then `overrides` (a process's
 * `--settings`, a test's short timings: lib/settings.ts).
 */
export function jobSettings(overrides: Partial<JobSettings> = {}, env: Env): JobSettings {
  return {
    maxPages: env.MAX_JOB_PAGES,
    maxUrlBytes: env.MAX_JOB_URL_BYTES,
    resultTtlMs: env.JOB_RESULT_TTL * 1000,
    maxDurationMs: JOB_MAX_DURATION_MS,
    maxQueuedPages: env.MAX_QUEUED_PAGES_PER_ACCOUNT,
    pageDeadlineMs: JOB_PAGE_DEADLINE_MS,
    runner: env.JOBS_RUNNER === "auto" ? (env.onVercel ? "invoke" : "background") : env.JOBS_RUNNER,
    fanout: JOB_FANOUT,
    lockMs: JOB_LOCK_MS,
    stalledIntervalMs: JOB_STALLED_INTERVAL_MS,
    maxStalls: 2,
    pageAttempts: 3,
    backoffMs: 2_000,
    blockSeconds: 2,
    chunkBytes: 4 * MiB - 1024,
    maxAccountBytes: JOB_ACCOUNT_BYTES_FACTOR * env.MAX_JOB_URL_BYTES,
    sourceCacheBytes: 512 * MiB,
    inspectChunk: 20,
    ...overrides,
  };
}

/** This process's name on the pages it reads: `settings.workerName`, else a short hash of its host and pid. */
export function workerName(settings: Pick<JobSettings, "workerName">): string {
  const configured = settings.workerName;
  if (configured) return configured.slice(0, 64);
  return `w-${createHash("sha256").update(`${os.hostname()}:${process.pid}`).digest("hex").slice(0, 10)}`;
}
