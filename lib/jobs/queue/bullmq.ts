import { randomBytes } from "node:crypto";
import { Job, Queue, UnrecoverableError, Worker, createNodeRedisClient } from "bullmq";
import { createClient } from "redis";
import { errorLabel } from "@/lib/error-log";
import { logQueueErrors, REDIS_SOCKET_OPTIONS, watchRedisClient } from "@/lib/store";
import type {
  DocumentTask,
  LeasedTask,
  PageTask,
  QueueCounts,
  TaskData,
  TaskKind,
  TaskSettings,
  WorkQueue,
} from "./port";

/** The queue's settings: its connection, and the task settings (part of lib/jobs/settings.ts's `JobSettings`). */
export type BullQueueOptions = TaskSettings & {
  /** `redis://` or `rediss://`: BullMQ needs a TCP connection. */
  url: string;
  /** Key prefix of the queues, e.g. `ocr:bull`. */
  prefix: string;
};

const QUEUES = { document: "documents", page: "pages" } as const;

/**
 * The work queue on BullMQ (lib/jobs/queue/port.ts): a `documents` and a `pages` queue; a document's page tasks are
 * its children (`ignoreDependencyOnFailure`: a page that failed for good leaves the document to finish with the
 * others). Tasks are taken by hand (`Worker` without a processor, `getNextJob`), so a process takes a page only when
 * an engine process is free — and a serverless invocation only within its budget. The lock of a taken task is
 * extended by this process until it lets go; a process that dies lets it lapse, and the stalled check (any process
 * running `watchStalled`) puts the task back, or fails it after `maxStalls`.
 *
 * Each Queue and Worker has its own connection (the `redis` package through BullMQ's adapter).
 */
export function createBullQueue(options: BullQueueOptions): WorkQueue {
  // node-redis reconnects by itself; the link logs a lost connection once (lib/store/redis-link.ts), and its 'error'
  // listener keeps a dropped connection from being an uncaught error. BullMQ leaves a client it was given open when it
  // closes: close() below ends them.
  const clients: Array<{ destroy(): void }> = [];
  const connection = () => {
    const client = createClient({ url: options.url, socket: REDIS_SOCKET_OPTIONS });
    clients.push(watchRedisClient(client, options.url));
    return createNodeRedisClient(client);
  };
  const base = { prefix: options.prefix };
  const queues = {
    document: new Queue<DocumentTask>(QUEUES.document, { ...base, connection: connection() }),
    page: new Queue<PageTask>(QUEUES.page, { ...base, connection: connection() }),
  };
  const workerOptions = {
    ...base,
    lockDuration: options.lockMs,
    stalledInterval: options.stalledIntervalMs,
    maxStalledCount: options.maxStalls,
    drainDelay: options.blockSeconds,
    autorun: false,
  };
  const workers = {
    document: new Worker<DocumentTask>(QUEUES.document, null, { ...workerOptions, connection: connection() }),
    page: new Worker<PageTask>(QUEUES.page, null, { ...workerOptions, connection: connection() }),
  };
  // BullMQ re-emits its connections' errors on each queue and worker (a queue without a listener prints the stack).
  for (const queue of Object.values(queues)) queue.on("error", logQueueErrors("jobs"));
  for (const worker of Object.values(workers)) worker.on("error", logQueueErrors("jobs"));
  let closed = false;

  const lease = <K extends TaskKind>(kind: K, job: Job<TaskData<K>>, token: string): LeasedTask<K> => {
    const timer = setInterval(
      () => {
        job
          .extendLock(token, options.lockMs)
          .catch((error: unknown) => console.warn(`[jobs] extending a lock failed (${errorLabel(error)})`));
      },
      Math.max(500, Math.floor(options.lockMs / 2)),
    );
    timer.unref();
    let released = false;
    const release = () => {
      released = true;
      clearInterval(timer);
    };
    const once = async (step: () => Promise<unknown>) => {
      if (released) return;
      release();
      await step();
    };
    return {
      kind,
      id: job.id!,
      data: job.data,
      attemptsMade: job.attemptsMade,
      attempts: job.opts.attempts ?? 1,
      ...(job.deferredFailure && { gaveUp: job.deferredFailure }),
      complete: () => once(() => job.moveToCompleted(null, token, false)),
      fail: (error, retry) =>
        once(() => job.moveToFailed(retry ? error : new UnrecoverableError(error.message), token, false)),
      update: (data) => job.updateData(data),
      yield: () => once(() => job.moveToWait(token)),
      async waitForPages(pages, next, { priority }) {
        if (kind !== "document") throw new Error("only documents wait for pages");
        await addPages(job.id!, job.queueQualifiedName, pages, priority);
        await job.updateData(next as TaskData<K>);
        const parked = await job.moveToWaitingChildren(token);
        if (parked) release();
        return parked;
      },
    };
  };

  const addPages = async (parentId: string, parentQueue: string, pages: PageTask[], priority: number) => {
    for (let start = 0; start < pages.length; start += 500) {
      await queues.page.addBulk(
        pages.slice(start, start + 500).map((page) => ({
          name: "page",
          data: page,
          opts: {
            jobId: `${page.jobId}.${page.number}`,
            parent: { id: parentId, queue: parentQueue },
            ignoreDependencyOnFailure: true,
            attempts: options.pageAttempts,
            backoff: { type: "exponential", delay: options.backoffMs },
            priority,
            removeOnComplete: true,
            removeOnFail: { age: 24 * 60 * 60 },
          },
        })),
      );
    }
  };

  return {
    kind: "bullmq",

    async addDocument(task, { priority }) {
      await queues.document.add("document", task, {
        jobId: task.jobId,
        attempts: 3,
        backoff: { type: "exponential", delay: options.backoffMs },
        priority,
        removeOnComplete: true,
        removeOnFail: { age: 24 * 60 * 60 },
      });
    },

    async take<K extends TaskKind>(kind: K, { block }: { block: boolean }): Promise<LeasedTask<K> | null> {
      if (closed) return null;
      const token = randomBytes(12).toString("base64url");
      const worker = workers[kind] as unknown as Worker<TaskData<K>>;
      const job = await worker.getNextJob(token, { block });
      return job ? lease(kind, job, token) : null;
    },

    async dropPages(jobId) {
      const parent = await Job.fromId<DocumentTask>(queues.document, jobId);
      await parent?.removeUnprocessedChildren();
    },

    async watchStalled() {
      await Promise.all(Object.values(workers).map((worker) => worker.startStalledCheckTimer()));
    },

    async counts(): Promise<QueueCounts> {
      const count = async (queue: Queue) => {
        const counts = await queue.getJobCounts("waiting", "prioritized", "active", "delayed");
        return {
          waiting: (counts.waiting ?? 0) + (counts.prioritized ?? 0) + (counts.delayed ?? 0),
          active: counts.active ?? 0,
        };
      };
      return { documents: await count(queues.document), pages: await count(queues.page) };
    },

    async close() {
      closed = true;
      await Promise.allSettled([
        ...Object.values(workers).map((worker) => worker.close(true)),
        ...Object.values(queues).map((queue) => queue.close()),
      ]);
      for (const client of clients) client.destroy();
    },
  };
}
