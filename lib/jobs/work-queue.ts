import { ApiError } from "@/lib/api/errors";
import type { Env } from "@/lib/env";
import type { OcrPool } from "@/lib/ocr";
import type { Store } from "@/lib/store";
import type { DeliveryQueue } from "@/lib/webhooks";
import { createBullQueue } from "./queue/bullmq";
import { createMemoryQueue } from "./queue/memory";
import type { WorkQueue } from "./queue/port";
import type { JobSettings } from "./settings";

const QUEUE_KEY = Symbol.for("ocr-service.job-queue");
type QueueHolder = { [QUEUE_KEY]?: WorkQueue | null };

/**
 * The process-wide parts a job's path works with: the engine pool, the work queue and the delivery queue. Built with
 * the other services (lib/services.ts `services()`, a route's context) and passed down as arguments.
 */
export interface Runtime {
  readonly pool: OcrPool;
  /** None when only a REST URL is configured (jobs answer `503` then: `requireWorkQueue`). */
  readonly workQueue: WorkQueue | null;
  /** None when only a REST URL is configured (a job with a webhook answers `503`). */
  readonly deliveries: DeliveryQueue | null;
}

/**
 * The process's work queue, built on first use from the configuration `env`, the process's `store` and the jobs'
 * `settings` (lib/services.ts only): BullMQ on `REDIS_URL` (TCP; also when the store itself talks to Upstash over
 * REST), in memory with the embedded store, none when only a REST URL is configured.
 */
export function processWorkQueue(env: Env, store: Store, settings: JobSettings): WorkQueue | null {
  const holder = globalThis as QueueHolder;
  if (holder[QUEUE_KEY] !== undefined) return holder[QUEUE_KEY];
  let queue: WorkQueue | null = null;
  if (env.REDIS_URL) {
    queue = createBullQueue({
      url: env.REDIS_URL,
      prefix: `${env.REDIS_PREFIX}bull`,
      lockMs: settings.lockMs,
      stalledIntervalMs: settings.stalledIntervalMs,
      maxStalls: settings.maxStalls,
      pageAttempts: settings.pageAttempts,
      backoffMs: settings.backoffMs,
      blockSeconds: settings.blockSeconds,
    });
  } else if (store.kind === "memory") {
    queue = createMemoryQueue(settings);
  }
  holder[QUEUE_KEY] = queue;
  return queue;
}

/** The work queue, or `503 unavailable` saying what a deployment without one needs. */
export function requireWorkQueue(queue: WorkQueue | null): WorkQueue {
  if (!queue) {
    throw new ApiError(
      "unavailable",
      "Asynchronous jobs are not available on this deployment: they need a TCP connection to its Redis (REDIS_URL, " +
        "e.g. Upstash's rediss:// URL) besides the REST URL",
    );
  }
  return queue;
}

/** Close and forget the process's queue (tests, shutdown). */
export async function resetWorkQueue(): Promise<void> {
  const holder = globalThis as QueueHolder;
  const queue = holder[QUEUE_KEY];
  holder[QUEUE_KEY] = undefined;
  await queue?.close();
}
