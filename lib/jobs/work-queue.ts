import { getEnv } from "@/lib/env";
import { ApiError } from "@/lib/api/errors";
import { installedOverrides } from "@/lib/settings/installed";
import { getStore } from "@/lib/store";
import { createBullQueue } from "./queue/bullmq";
import { createMemoryQueue } from "./queue/memory";
import type { WorkQueue } from "./queue/port";
import { jobSettings, type JobSettings } from "./settings";

const QUEUE_KEY = Symbol.for("ocr-service.job-queue");
type QueueHolder = { [QUEUE_KEY]?: WorkQueue | null };

/**
 * The process's work queue: BullMQ on `REDIS_URL` (TCP; also when the store itself talks to Upstash over REST), in
 * memory with the embedded store, none when only a REST URL is configured (jobs answer `503` then, saying why).
 */
export function getWorkQueue(): WorkQueue | null {
  const holder = globalThis as QueueHolder;
  if (holder[QUEUE_KEY] !== undefined) return holder[QUEUE_KEY];
  const env = getEnv();
  // A process-wide singleton: the process's settings (lib/settings/installed.ts), as `getEnv()`.
  const settings = jobSettings(installedOverrides<JobSettings>("jobs"), env);
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
  } else if (getStore().kind === "memory") {
    queue = createMemoryQueue(settings);
  }
  holder[QUEUE_KEY] = queue;
  return queue;
}

/** The work queue, or `503 unavailable` saying what a deployment without one needs. */
export function requireWorkQueue(): WorkQueue {
  const queue = getWorkQueue();
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
