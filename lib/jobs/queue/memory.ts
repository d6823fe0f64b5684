import type { DocumentTask, LeasedTask, PageTask, QueueCounts, TaskData, TaskKind, WorkQueue } from "./port";

interface Entry<K extends TaskKind = TaskKind> {
  kind: K;
  id: string;
  data: TaskData<K>;
  priority: number;
  seq: number;
  attemptsMade: number;
  attempts: number;
  /** Page tasks: their document. */
  parent?: Entry<"document">;
  /** Documents: page tasks not ended yet. */
  pending: number;
  parked: boolean;
}

/**
 * The work queue in memory, for the embedded development default (no Redis): the contract of the BullMQ adapter for
 * one process — priorities, attempts with back-off, documents parked until their pages end. Nothing survives the
 * process, as nothing else of the memory store does.
 */
export function createMemoryQueue(options: {
  pageAttempts: number;
  backoffMs: number;
  blockSeconds: number;
}): WorkQueue {
  const waiting: Record<TaskKind, Entry[]> = { document: [], page: [] };
  const active = new Set<Entry>();
  const waiters: Record<TaskKind, Set<() => void>> = { document: new Set(), page: new Set() };
  const timers = new Set<NodeJS.Timeout>();
  let seq = 0;
  let closed = false;

  const enqueue = (entry: Entry, front = false) => {
    const list = waiting[entry.kind];
    entry.seq = front ? -++seq : ++seq;
    list.push(entry);
    list.sort((a, b) => a.priority - b.priority || a.seq - b.seq);
    for (const wake of [...waiters[entry.kind]]) wake();
  };

  /** A page task ended for good (completed, failed, dropped): its document goes on once its last page has. */
  const ended = (entry: Entry) => {
    const parent = entry.parent;
    if (!parent) return;
    parent.pending--;
    if (parent.pending === 0 && parent.parked) {
      parent.parked = false;
      enqueue(parent);
    }
  };

  const lease = <K extends TaskKind>(entry: Entry<K>): LeasedTask<K> => {
    let released = false;
    const once = async (step: () => void) => {
      if (released) return;
      released = true;
      active.delete(entry);
      step();
    };
    return {
      kind: entry.kind,
      id: entry.id,
      data: entry.data,
      attemptsMade: entry.attemptsMade,
      attempts: entry.attempts,
      complete: () => once(() => ended(entry)),
      fail: (_error, retry) =>
        once(() => {
          entry.attemptsMade++;
          if (!retry || entry.attemptsMade >= entry.attempts || closed) {
            ended(entry);
            return;
          }
          const timer = setTimeout(
            () => {
              timers.delete(timer);
              enqueue(entry);
            },
            options.backoffMs * 2 ** (entry.attemptsMade - 1),
          );
          timer.unref();
          timers.add(timer);
        }),
      update: async (data) => {
        entry.data = data;
      },
      yield: () => once(() => enqueue(entry, true)),
      async waitForPages(pages, next, { priority }) {
        if (entry.kind !== "document") throw new Error("only documents wait for pages");
        const parent = entry as Entry<"document">;
        parent.data = next;
        if (pages.length === 0) return false;
        for (const page of pages) {
          parent.pending++;
          enqueue({
            kind: "page",
            id: `${page.jobId}.${page.number}`,
            data: page,
            priority,
            seq: 0,
            attemptsMade: 0,
            attempts: options.pageAttempts,
            parent,
            pending: 0,
            parked: false,
          });
        }
        released = true;
        active.delete(entry);
        parent.parked = true;
        return true;
      },
    };
  };

  const next = <K extends TaskKind>(kind: K): LeasedTask<K> | null => {
    const entry = waiting[kind].shift() as Entry<K> | undefined;
    if (!entry) return null;
    active.add(entry);
    return lease(entry);
  };

  return {
    kind: "memory",

    async addDocument(task: DocumentTask, { priority }) {
      enqueue({
        kind: "document",
        id: task.jobId,
        data: task,
        priority,
        seq: 0,
        attemptsMade: 0,
        attempts: 3,
        pending: 0,
        parked: false,
      });
    },

    async take<K extends TaskKind>(kind: K, { block }: { block: boolean }): Promise<LeasedTask<K> | null> {
      if (closed) return null;
      const now = next(kind);
      if (now || !block) return now;
      await new Promise<void>((resolve) => {
        const wake = () => {
          clearTimeout(timer);
          waiters[kind].delete(wake);
          resolve();
        };
        const timer = setTimeout(wake, options.blockSeconds * 1000);
        timer.unref();
        waiters[kind].add(wake);
      });
      return closed ? null : next(kind);
    },

    async dropPages(jobId) {
      const dropped = waiting.page.filter((entry) => (entry.data as PageTask).jobId === jobId);
      waiting.page = waiting.page.filter((entry) => !dropped.includes(entry));
      for (const entry of dropped) ended(entry);
    },

    async watchStalled() {
      // One process: a task is never held by a process that died.
    },

    async counts(): Promise<QueueCounts> {
      const activeOf = (kind: TaskKind) => [...active].filter((entry) => entry.kind === kind).length;
      return {
        documents: { waiting: waiting.document.length, active: activeOf("document") },
        pages: { waiting: waiting.page.length, active: activeOf("page") },
      };
    },

    async close() {
      closed = true;
      for (const timer of timers) clearTimeout(timer);
      for (const kind of ["document", "page"] as const) for (const wake of [...waiters[kind]]) wake();
    },
  };
}
