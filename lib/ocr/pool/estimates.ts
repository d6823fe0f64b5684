import type { JobKind } from "../model/protocol";

/**
 * The duration model: how long a job of each kind is expected to take, learnt from the jobs the pool has run, and
 * the wait before a new job starts. Pure (no processes, no clock of its own): the pool feeds it what it measured.
 */

/** Starting points of the per-kind running means (ms), measured (docs/decisions.md#job-duration-model). */
export const INITIAL_ESTIMATES: Readonly<Record<JobKind, number>> = {
  "inspect-pdf": 150,
  "read-image": 2_500,
  "read-pdf-page": 3_000,
  // A TIFF page is an image read after a decode in JavaScript (utif2): taken as an image until measured.
  "read-tiff-page": 2_500,
  // Drawing a page for display (no recognition): a render or a decode and a JPEG encode.
  "render-preview": 400,
};
/** Jobs per kind the duration model remembers. */
export const ESTIMATE_HISTORY = 64;

/** A job's size in the duration model: √megapixels, at least ½ (unknown: 1). */
export function sizeOf(pixels: number | undefined): number {
  return pixels === undefined ? 1 : Math.sqrt(Math.max(0.25, pixels / 1e6));
}

/** Recent jobs per kind (duration and size) and the estimates drawn from them. */
export class DurationModel {
  private readonly history: Record<JobKind, Array<{ ms: number; size: number }>> = {
    "inspect-pdf": [],
    "read-image": [],
    "read-pdf-page": [],
    "read-tiff-page": [],
    "render-preview": [],
  };

  /** A job of `kind` and `size` (`sizeOf`) took `ms`. */
  learn(kind: JobKind, ms: number, size: number): void {
    const recent = this.history[kind];
    recent.push({ ms, size });
    if (recent.length > ESTIMATE_HISTORY) recent.shift();
  }

  /**
   * Expected duration of a job (ms): recent jobs' milliseconds per unit of size, times this job's size. Size is the
   * square root of its megapixels (floored at ¼): small scans are enlarged before reading, so time grows slower than
   * pixels; a plain mean of the last jobs would follow whatever size came last (docs/decisions.md#job-duration-model).
   */
  estimate(kind: JobKind, pixels?: number): number {
    // The starting guess counts as one job of size 1.
    let ms = INITIAL_ESTIMATES[kind];
    let size = 1;
    for (const sample of this.history[kind]) {
      ms += sample.ms;
      size += sample.size;
    }
    return Math.round((ms / size) * sizeOf(pixels));
  }
}

/** A job running in one of a lane's processes, as the expected wait sees it. */
export interface RunningJob {
  estimateMs: number;
  /** Wall time since it started, ms. */
  elapsedMs: number;
  /** Its processor-time budget, ms, when it has one. */
  cpuBudgetMs?: number;
}

/** What is ahead of a new job in a lane. */
export interface LaneBacklog {
  /** The lane's processes (its size, started or not). */
  processes: number;
  /** Estimates of the places held by admitted requests whose first job is not queued yet, summed. */
  heldMs: number;
  /** Estimates of the jobs waiting in the lane. */
  queuedMs: Iterable<number>;
  running: Iterable<RunningJob>;
}

/**
 * Expected wait (ms) before a new job of a lane starts: the work ahead of it spread over the lane's processes. A job
 * with a processor-time budget that has run past its estimate is expected to run as long again (up to its budget): a
 * PDF that is being stopped for its work still holds its process meanwhile. 0 when nothing is ahead and a process is
 * free.
 */
export function expectedWaitMs({ processes, heldMs, queuedMs, running }: LaneBacklog): number {
  let backlog = heldMs;
  for (const ms of queuedMs) backlog += ms;
  let idle = processes;
  for (const job of running) {
    idle--;
    const overrun = job.cpuBudgetMs === undefined ? 0 : Math.min(job.elapsedMs, job.cpuBudgetMs);
    backlog += Math.max(0, job.estimateMs - job.elapsedMs, overrun);
  }
  if (backlog === 0 && idle > 0) return 0;
  return Math.round(backlog / processes);
}
