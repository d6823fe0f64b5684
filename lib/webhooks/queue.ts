import { randomBytes } from "node:crypto";
import { DelayedError, Queue, UnrecoverableError, Worker, createNodeRedisClient, type Job } from "bullmq";
import { createClient } from "redis";
import { getEnv, type Env } from "@/lib/env";
import { errorLabel } from "@/lib/error-log";
import { configuredAllowList, type AllowList } from "@/lib/input";
import { logQueueErrors, REDIS_SOCKET_OPTIONS, watchRedisClient, type Store } from "@/lib/store";
import { attemptDelivery, deliverySchema, recordDropped, type AttemptOutcome, type Delivery } from "./deliver";
import { enterDelivery, type Gate } from "./gate";
import { retryDelay, type WebhookSettings } from "./settings";

/**
 * Where events wait for delivery, and who delivers them: BullMQ on `REDIS_URL` (its own `webhooks` queue; a failed
 * attempt is retried as a delayed job, so a retry a day later survives restarts, and any process running the worker
 * takes it), or in memory with the embedded store (timers, for one process). At least once: an event is removed
 * only after a 2xx answer or its last attempt; a process that dies mid-attempt leaves it to be taken again. Before
 * each attempt the gate (gate.ts) may hold an event back — its account at its share of delivery slots, its receiver
 * paused — without using an attempt, or drop it when its receiver is disabled.
 */
export interface DeliveryQueue {
  readonly kind: "bullmq" | "memory";
  /** Queue an event's delivery (once per event id: adding it again while it is kept does nothing). */
  add(delivery: Delivery): Promise<void>;
  /** Deliver queued events in this process until `close()`. */
  startWorker(): void;
  /**
   * Deliver the events that are due, for up to `budgetMs` (a serverless invocation: the cron and work routes).
   * Returns how many attempts were made.
   */
  drain(budgetMs: number): Promise<number>;
  close(): Promise<void>;
}

const QUEUE_NAME = "webhooks";

/** A failed attempt, with the receiver's `Retry-After` for the back-off. */
class DeliveryFailed extends Error {
  constructor(
    message: string,
    readonly retryAfterMs?: number,
  ) {
    super(message);
    this.name = "DeliveryFailed";
  }
}

/**
 * The private hosts a delivery may reach (`URL_ALLOW_HOSTS`, parsed), read at each attempt: a change of the
 * configuration applies to the events already queued.
 */
type AllowHosts = () => AllowList;

/** One attempt of an event the gate let through; the gate hears how it went (its slots freed, the receiver's count). */
async function attemptThrough(
  store: Store,
  allowHosts: AllowHosts,
  settings: WebhookSettings,
  gate: Extract<Gate, { kind: "go" }>,
  delivery: Delivery,
  attempt: number,
  final: boolean,
): Promise<AttemptOutcome> {
  let outcome: AttemptOutcome | undefined;
  try {
    outcome = await attemptDelivery(store, delivery, attempt, { final, allowHosts: allowHosts(), settings });
    return outcome;
  } finally {
    await gate.done({
      ok: outcome?.attempt.ok ?? false,
      countsForReceiver: outcome?.receiverFailed ?? false,
      error: outcome?.attempt.error,
    });
  }
}

function createBullDeliveryQueue(
  store: Store,
  allowHosts: AllowHosts,
  url: string,
  prefix: string,
  settings: WebhookSettings,
): DeliveryQueue {
  // A lost connection is logged once by the link (lib/store/redis-link.ts), not by each client, queue and worker.
  // BullMQ leaves a client it was given open when it closes: close() below ends them.
  const clients: Array<{ destroy(): void }> = [];
  const connection = () => {
    const client = watchRedisClient(createClient({ url, socket: REDIS_SOCKET_OPTIONS }), url);
    clients.push(client);
    return createNodeRedisClient(client);
  };
  const queue = new Queue<Delivery>(QUEUE_NAME, { prefix, connection: connection() });
  queue.on("error", logQueueErrors("webhooks"));
  let worker: Worker<Delivery> | null = null;
  let manual: Worker<Delivery> | null = null;
  let closed = false;
  const workerSettings = {
    prefix,
    // A delivery's lock outlives its attempt (the attempt's own timeout ends it first).
    lockDuration: Math.max(30_000, settings.timeoutMs * 2 + 5_000),
    settings: {
      backoffStrategy: (attemptsMade: number, _type?: string, error?: Error) =>
        error instanceof DeliveryFailed && error.retryAfterMs !== undefined
          ? error.retryAfterMs
          : retryDelay(attemptsMade, settings),
    },
  };
  /**
   * A taken delivery: held back (moved to the delayed set, no attempt used: `DelayedError`), dropped (its receiver is
   * disabled), or attempted once; throws (for BullMQ to retry, or not) when the attempt failed.
   */
  const run = async (job: Job<Delivery>, token: string | undefined) => {
    const delivery = deliverySchema.parse(job.data);
    const attempt = job.attemptsMade + 1;
    const attempts = job.opts.attempts ?? 1;
    const gate = await enterDelivery(store, delivery, settings);
    if (gate.kind === "wait") {
      await job.moveToDelayed(gate.until, token);
      throw new DelayedError();
    }
    if (gate.kind === "disabled") {
      const record = await recordDropped(store, delivery, attempt, gate, settings.breaker.disableAfterMs);
      throw new UnrecoverableError(record.error ?? "receiver disabled");
    }
    const {
      attempt: record,
      permanent,
      retryAfterMs,
    } = await attemptThrough(store, allowHosts, settings, gate, delivery, attempt, attempt >= attempts);
    if (record.ok) return;
    if (permanent) throw new UnrecoverableError(record.error ?? "delivery refused");
    throw new DeliveryFailed(record.error ?? "delivery failed", retryAfterMs);
  };
  return {
    kind: "bullmq",
    async add(delivery) {
      await queue.add("delivery", delivery, {
        jobId: delivery.eventId,
        attempts: settings.maxAttempts,
        backoff: { type: "webhook" },
        // Kept a day after delivery: an event added again meanwhile (a second announcement) is not sent twice.
        removeOnComplete: { age: 24 * 60 * 60 },
        removeOnFail: { age: 7 * 24 * 60 * 60 },
      });
    },
    startWorker() {
      if (worker) return;
      worker = new Worker<Delivery>(QUEUE_NAME, run, {
        ...workerSettings,
        connection: connection(),
        concurrency: settings.processConcurrency,
      });
      worker.on("error", logQueueErrors("webhooks"));
    },
    async drain(budgetMs) {
      if (!manual) {
        manual = new Worker<Delivery>(QUEUE_NAME, null, {
          ...workerSettings,
          connection: connection(),
          autorun: false,
        });
        manual.on("error", logQueueErrors("webhooks"));
      }
      const taker = manual;
      const until = Date.now() + budgetMs;
      let attempts = 0;
      // Each attempt may take the whole timeout: start one only when it can end within the budget.
      while (!closed && Date.now() + settings.timeoutMs < until) {
        const token = randomBytes(12).toString("base64url");
        const job = await taker.getNextJob(token, { block: false });
        if (!job) break;
        try {
          await run(job, token);
          attempts++;
          await job.moveToCompleted(null, token, false);
        } catch (error) {
          if (error instanceof DelayedError) continue;
          attempts++;
          await job.moveToFailed(error instanceof Error ? error : new Error(String(error)), token, false);
        }
      }
      return attempts;
    },
    async close() {
      closed = true;
      const current = [worker, manual];
      worker = null;
      manual = null;
      await Promise.allSettled([...current.map((item) => item?.close()), queue.close()]);
      for (const client of clients) client.destroy();
    },
  };
}

function createMemoryDeliveryQueue(store: Store, allowHosts: AllowHosts, settings: WebhookSettings): DeliveryQueue {
  const seen = new Set<string>();
  const timers = new Set<NodeJS.Timeout>();
  let closed = false;
  const schedule = (delivery: Delivery, attempt: number, delayMs: number) => {
    const timer = setTimeout(() => {
      timers.delete(timer);
      if (closed) return;
      void deliverOnce(delivery, attempt).catch((error: unknown) =>
        console.warn(`[webhooks] delivery: ${errorLabel(error)}`),
      );
    }, delayMs);
    timer.unref();
    timers.add(timer);
  };
  const deliverOnce = async (delivery: Delivery, attempt: number) => {
    const gate = await enterDelivery(store, delivery, settings);
    if (gate.kind === "wait") return schedule(delivery, attempt, Math.max(0, gate.until - Date.now()));
    if (gate.kind === "disabled")
      return void (await recordDropped(store, delivery, attempt, gate, settings.breaker.disableAfterMs));
    const {
      attempt: record,
      permanent,
      retryAfterMs,
    } = await attemptThrough(store, allowHosts, settings, gate, delivery, attempt, attempt >= settings.maxAttempts);
    if (!record.ok && !permanent && attempt < settings.maxAttempts)
      schedule(delivery, attempt + 1, retryAfterMs ?? retryDelay(attempt, settings));
  };
  return {
    kind: "memory",
    async add(delivery) {
      if (seen.has(delivery.eventId)) return;
      if (seen.size > 10_000) seen.clear();
      seen.add(delivery.eventId);
      schedule(delivery, 1, 0);
    },
    startWorker() {
      // Deliveries run on timers in the process that queued them.
    },
    async drain() {
      return 0;
    },
    async close() {
      closed = true;
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
    },
  };
}

const QUEUE_KEY = Symbol.for("ocr-service.webhook-queue");
type QueueHolder = { [QUEUE_KEY]?: DeliveryQueue | null };

/**
 * The process's delivery queue, chosen as the job queue is (lib/jobs/work-queue.ts); none with only a REST URL. Built
 * once per process, on first use, from the configuration `env`, the process's `store` (kept by its deliveries: the
 * gate, the log) and the webhooks' `settings` — by lib/services.ts only, with the other services.
 */
export function processDeliveryQueue(env: Env, store: Store, settings: WebhookSettings): DeliveryQueue | null {
  const holder = globalThis as QueueHolder;
  if (holder[QUEUE_KEY] !== undefined) return holder[QUEUE_KEY];
  // The allow list of the configuration current at each attempt (a test's `setEnv` applies to queued events too).
  const allowHosts = () => configuredAllowList(getEnv());
  let queue: DeliveryQueue | null = null;
  if (env.REDIS_URL)
    queue = createBullDeliveryQueue(store, allowHosts, env.REDIS_URL, `${env.REDIS_PREFIX}bull`, settings);
  else if (store.kind === "memory") queue = createMemoryDeliveryQueue(store, allowHosts, settings);
  holder[QUEUE_KEY] = queue;
  return queue;
}

/** Close and forget the process's delivery queue (tests, shutdown). */
export async function resetDeliveryQueue(): Promise<void> {
  const holder = globalThis as QueueHolder;
  const queue = holder[QUEUE_KEY];
  holder[QUEUE_KEY] = undefined;
  await queue?.close();
}
