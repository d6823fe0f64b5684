import { fork, type ChildProcess } from "node:child_process";
import { existsSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import type { OcrEngine } from "./document";
import { deadlineError, fromOcrErrorData, OcrError } from "./ocr-error";
import {
  ENGINE_CONFIG_VARIABLE,
  ENGINE_DEADLINE_SLACK_MS,
  fromEngineSchema,
  type EngineJob,
  type EngineProcessConfig,
  type JobKind,
  type JobResults,
  type ToEngine,
} from "./worker/protocol";

/**
 * The engine's processes, seen from the server. Every byte of a document is read in a child process (see
 * lib/ocr/worker/jobs.ts): the server's event loop only routes messages, a job past its deadline or its memory
 * ceiling is stopped by killing its process — which returns all of its memory to the system — and a process that
 * dies is replaced while its job is answered with an engine error (lib/ocr/ocr-error.ts).
 *
 * Two lanes: `ocr` processes (Tesseract, one per core by default) and `inspect` processes that only open PDFs and
 * read their text layers, so that opening a document never waits behind someone else's OCR.
 *
 * Admission is measured in expected seconds, not jobs: the pool keeps a running mean of how long each kind of job
 * takes, and a job that could not start before its deadline is refused at once (`overloaded`, with a retry delay
 * computed from the queue) instead of waiting to time out. Waiting jobs are served round-robin by tenant (the
 * account), then by request, so one account's long or many PDFs do not hold up everyone behind them. A job may carry
 * a budget of processor time, watched from outside its process like the memory ceiling: past it, the process is
 * killed and the job answered `too_complex` (a PDF whose pages draw without end cannot hold an inspect process until
 * its deadline).
 */
export type Lane = "ocr" | "inspect";

export interface PoolOptions {
  /** OCR processes. */
  size: number;
  /**
   * Inspect processes (PDF structure and text layers). Default 2: the second starts only when a PDF waits while the
   * first is busy, and exits after a minute idle.
   */
  inspectSize?: number;
  /** Jobs allowed to wait per lane, whatever their expected duration; past it `overloaded`. */
  queueLimit: number;
  /** A Tesseract worker inside a process is replaced after this many jobs (wasm memory only grows). */
  maxJobsPerWorker: number;
  /** How long starting a process (and its Tesseract) may take. */
  createTimeoutMs: number;
  /** Resident-memory ceiling of one process, MB: a job that passes it is stopped with `out_of_memory`. Default 1024. */
  memoryMb?: number;
  /** Recognizers the OCR processes use (`OCR_ENGINES`). Default `["tesseract"]`. */
  engines?: OcrEngine[];
  /** Tesseract confidence under which a page is also read by the second recognizer (default: second-reading.ts's). */
  secondReadingBelow?: number;
  /** Keep Tesseract's thread while PaddleOCR reads (`OCR_KEEP_TESSERACT_FOR_PADDLE`). Default false. */
  keepTesseract?: boolean;
  /** Languages the OCR processes load at start. Default `["eng"]`. */
  warmLanguages?: string[];
  /** The engine process script (default: `build/engine/ocr-worker.mjs` under the app's directory). */
  workerScript?: string;
}

export interface RunOptions {
  /** Epoch ms: a job still waiting then is dropped, a running one is stopped; both answer `deadline`. */
  deadline: number;
  /** Jobs of one request share a key: waiting jobs are served round-robin by key, and `cancel(key)` drops them. */
  session?: string;
  /** Whose request it is (an account): waiting jobs are served round-robin by tenant first. Default: the session. */
  tenant?: string;
  /**
   * Processor time the job may use, ms (its process's, read from /proc; wall time where that cannot be read). Past
   * it the process is stopped and the job answered `too_complex` with `overBudget` as its message.
   */
  cpuBudgetMs?: number;
  overBudget?: string;
  /** Expected duration in ms (admission and queue estimates). Default: `estimate(kind, pixels)`. */
  estimateMs?: number;
  /** Pixels of the image the job reads, when known (it scales the estimate, and what the pool learns). */
  pixels?: number;
  /**
   * The admission this job was granted when its request was opened (`admit()`): the job takes its place in the
   * queue without being judged again. Without one, the job is admitted here. A request's later pages pass `false`:
   * they wait their turn.
   */
  admission?: Admission | false;
  /**
   * A job of an asynchronous OCR job (lib/jobs): it starts only when no request's job waits in its lane, and is not
   * judged by admission (the job runner asks for work only when `capacity()` says a process is free). Default false.
   */
  background?: boolean;
}

/**
 * A place held for a request between its admission (before it is charged) and its first job: counted in the wait
 * that later requests see, so a burst cannot all be admitted against the same empty queue. Released when the job
 * is queued, or when the request ends without one (402, errors).
 */
export interface Admission {
  release(): void;
}

export interface PoolStats {
  size: number;
  /** Live OCR processes. */
  workers: number;
  busy: number;
  queued: number;
  /** Jobs answered by OCR processes (results and errors; not stopped ones). */
  completed: number;
  /** Expected wait in ms for a new OCR job to start. */
  expectedWaitMs: number;
  inspect: { size: number; workers: number; busy: number; queued: number; completed: number };
  /** Processes stopped for their job's deadline, its processor-time budget, the memory ceiling, or that died on their own. */
  stopped: { timeout: number; work: number; memory: number; crashed: number };
  /** Processes replaced between jobs because they kept too much memory. */
  recycled: number;
  /** The live engine processes. */
  processes: Array<{ pid: number; lane: Lane; busy: boolean; jobs: number; rssMb: number }>;
}

interface Slot {
  id: number;
  lane: Lane;
  child: ChildProcess;
  ready: boolean;
  busy: boolean;
  retired: boolean;
  jobs: number;
  /** Documents open in the process, oldest first. */
  docs: string[];
  /** Bytes of each open document (a large one raises the memory the process may keep between jobs). */
  docBytes: Map<string, number>;
  current?: QueuedJob;
  /** Why we killed it (the answer of its job), if we did. */
  killedFor?: OcrError;
  stderrTail: string;
  rssMb: number;
  /** Epoch ms of its last job's end (or of its start). */
  idleSince: number;
}

interface QueuedJob {
  id: number;
  lane: Lane;
  background: boolean;
  job: EngineJob;
  deadline: number;
  session: string;
  tenant: string;
  cpuBudgetMs?: number;
  overBudget?: string;
  /** The process's processor time (ms) when the job started on it. */
  cpuAtStart?: number;
  estimateMs: number;
  /** The job's size in the duration model (see `sizeOf`). */
  size: number;
  resolve: (value: unknown) => void;
  reject: (error: Error) => void;
  timer: NodeJS.Timeout;
  settled: boolean;
  startedAt?: number;
  slot?: Slot;
}

/** Starting points of the per-kind running means (ms), measured (docs/decisions.md#job-duration-model). */
const INITIAL_ESTIMATES: Record<JobKind, number> = { "inspect-pdf": 150, "read-image": 2_500, "read-pdf-page": 3_000 };
/** Jobs per kind the duration model remembers. */
const ESTIMATE_HISTORY = 64;
/** Admission wants this much of a job's work (or all of it, when shorter) to fit before the deadline. */
const MIN_WORK_MS = 1_000;
/**
 * The expected wait is a sum of estimates, each off by up to ~3×: admission counts it a quarter longer. With
 * `bench --load --burst 60` (the corpus's largest images, 2 processes, 55 s deadline) and size-aware estimates:
 * 51 answered, 9 refused at once, none timed out. (A plain mean of recent jobs admitted 55, and 4 timed out.)
 */
const WAIT_MARGIN = 1.25;
/** Documents the server keeps open in one process (the process itself allows a few more). */
const MAX_DOCS_PER_PROCESS = 2;
/** How often busy processes' memory is read. */
const MEMORY_POLL_MS = 100;
/**
 * A process whose resident memory stays above this after a job is replaced: Tesseract's wasm heap and glibc keep
 * what a large page needed, and only a new process gives it back (an idle OCR process takes ~145 MB).
 */
const RECYCLE_MB = 320;
/** A SIGKILL the pool did not send counts as out of memory when the process's last reading was this share of the ceiling. */
const OOM_KILL_SHARE = 0.8;
/** An inspect process idle this long exits (~80 MB back); the next PDF starts one again in ~0.15 s. */
const INSPECT_IDLE_MS = 60_000;

export class OcrPool {
  private readonly options: Required<Omit<PoolOptions, "workerScript" | "secondReadingBelow" | "keepTesseract">> &
    Pick<PoolOptions, "workerScript" | "secondReadingBelow" | "keepTesseract">;
  private readonly slots: Slot[] = [];
  private readonly spawning: Record<Lane, number> = { ocr: 0, inspect: 0 };
  /** Waiting jobs per lane, per tenant, per session, each in the order first seen (round-robin at both levels). */
  private readonly queues: Record<Lane, Map<string, Map<string, QueuedJob[]>>> = { ocr: new Map(), inspect: new Map() };
  /** Waiting background jobs (`RunOptions.background`), likewise: served only when no request's job waits. */
  private readonly backgroundQueues: Record<Lane, Map<string, Map<string, QueuedJob[]>>> = { ocr: new Map(), inspect: new Map() };
  private readonly capacityListeners = new Set<() => void>();
  /** Recent jobs per kind: duration and size, for the duration model (`estimate`). */
  private readonly history: Record<JobKind, Array<{ ms: number; size: number }>> = {
    "inspect-pdf": [],
    "read-image": [],
    "read-pdf-page": [],
  };
  private readonly stopped = { timeout: 0, work: 0, memory: 0, crashed: 0 };
  /** Admitted requests whose first job is not queued yet (see `Admission`). */
  private readonly held: Record<Lane, { count: number; ms: number }> = { ocr: { count: 0, ms: 0 }, inspect: { count: 0, ms: 0 } };
  private recycled = 0;
  /** The process running a memory-heavy step, and those waiting for their turn (acquireHeavy). */
  private heavyHolder?: Slot;
  private heavyWaiting: Slot[] = [];
  private nextSlotId = 1;
  private nextJobId = 1;
  private nextSession = 1;
  private readonly completed: Record<Lane, number> = { ocr: 0, inspect: 0 };
  private closed = false;
  private memoryTimer?: NodeJS.Timeout;
  private idleTimer?: NodeJS.Timeout;
  private scriptStamp?: number;

  constructor(options: PoolOptions) {
    this.options = { inspectSize: 2, memoryMb: 1024, warmLanguages: ["eng"], engines: ["tesseract"], ...options };
  }

  /** Run one job in an engine process of `lane`; resolves with its result or rejects with an `OcrError`. */
  run<K extends JobKind>(lane: Lane, job: Extract<EngineJob, { kind: K }>, options: RunOptions): Promise<JobResults[K]> {
    if (this.closed) return Promise.reject(new OcrError("shutting_down", "The OCR engine is shutting down"));
    const now = Date.now();
    if (options.deadline <= now) return Promise.reject(deadlineError());
    const estimateMs = options.estimateMs ?? this.estimate(job.kind, options.pixels);
    try {
      if (options.background) {
        // Judged by the job runner, which asks only when a process is free (`capacity`).
      } else if (options.admission) options.admission.release();
      else if (options.admission === undefined) this.admit(lane, estimateMs, options.deadline, now).release();
      else if (this.queuedCount(lane) >= this.options.queueLimit * 4) throw new OcrError("overloaded", "The OCR queue is full; retry shortly");
    } catch (error) {
      return Promise.reject(error);
    }
    return new Promise((resolve, reject) => {
      const session = options.session ?? `job:${this.nextJobId}`;
      const entry: QueuedJob = {
        id: this.nextJobId++,
        lane,
        background: options.background === true,
        job,
        deadline: options.deadline,
        session,
        tenant: options.tenant ?? session,
        ...(options.cpuBudgetMs !== undefined && { cpuBudgetMs: options.cpuBudgetMs }),
        ...(options.overBudget !== undefined && { overBudget: options.overBudget }),
        estimateMs,
        size: sizeOf(options.pixels),
        resolve: resolve as (value: unknown) => void,
        reject,
        settled: false,
        timer: setTimeout(() => this.expire(entry), options.deadline - now),
      };
      this.enqueue(entry);
      this.pump(lane);
    });
  }

  /**
   * Refuse now what could not start (and get a second of work done) before its deadline: `overloaded`, retry after
   * the expected wait. Also refuses when `queueLimit` jobs already wait. An admitted request holds
   * its place (its estimate counts in the wait others see) until its job is queued or `release()` is called.
   */
  admit(lane: Lane, estimateMs: number, deadline: number, now = Date.now()): Admission {
    const waitMs = this.expectedWaitMs(lane);
    const queued = this.queuedCount(lane) + this.held[lane].count;
    const retryAfterSeconds = Math.min(120, Math.max(1, Math.ceil(waitMs / 1000)));
    if (queued >= this.options.queueLimit) {
      throw new OcrError("overloaded", "The OCR queue is full; retry shortly", { retryAfterSeconds });
    }
    // At least a second of work (or the whole job, when shorter) must fit after the wait. An idle lane always
    // admits: a deadline too short for the work itself ends as `deadline`, not as "busy".
    if (waitMs > 0 && now + waitMs * WAIT_MARGIN + Math.min(estimateMs, MIN_WORK_MS) > deadline) {
      throw new OcrError(
        "overloaded",
        `The OCR engine is busy: this request would wait about ${Math.ceil(waitMs / 1000)} s and could not finish before its deadline; retry shortly`,
        { retryAfterSeconds },
      );
    }
    const held = this.held[lane];
    held.count++;
    held.ms += estimateMs;
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        held.count--;
        held.ms -= estimateMs;
      },
    };
  }

  /** A fresh session key for the jobs of one request. */
  session(): string {
    return `s${this.nextSession++}`;
  }

  /** Drop the waiting jobs of a session with `error` (its running jobs finish). */
  cancel(session: string, error: OcrError): void {
    for (const lane of ["ocr", "inspect"] as const) {
      for (const tenants of [this.queues[lane], this.backgroundQueues[lane]]) {
        for (const [tenant, sessions] of tenants) {
          const waiting = sessions.get(session);
          if (!waiting) continue;
          sessions.delete(session);
          if (sessions.size === 0) tenants.delete(tenant);
          for (const entry of waiting) this.settle(entry, error);
        }
      }
    }
  }

  /**
   * Processes of `lane` that could start a background job now: the lane's size less its busy processes and every
   * job waiting in it. Processes not started yet count (a job waiting starts one).
   */
  capacity(lane: Lane = "ocr"): number {
    if (this.closed) return 0;
    const busy = this.slots.filter((s) => s.lane === lane && s.busy && !s.retired).length;
    return Math.max(0, this.laneSize(lane) - busy - this.queuedCount(lane) - this.backgroundCount(lane));
  }

  /** Call `listener` whenever a job of any lane ends or a process exits (capacity may have grown). */
  onCapacity(listener: () => void): () => void {
    this.capacityListeners.add(listener);
    return () => this.capacityListeners.delete(listener);
  }

  /** Close a document in every process that holds it (the end of a request). */
  release(docId: string): void {
    for (const slot of this.slots) {
      const index = slot.docs.indexOf(docId);
      if (index < 0) continue;
      slot.docs.splice(index, 1);
      slot.docBytes.delete(docId);
      this.send(slot, { type: "drop", docId });
    }
  }

  /**
   * Expected duration of a job (ms): recent jobs' milliseconds per unit of size, times this job's size. Size is the
   * square root of its megapixels (floored at ¼): small scans are enlarged before reading, so time grows slower than
   * pixels. Measured (docs/decisions.md#job-duration-model), that keeps the per-job error within ~3× where a plain mean is off up to 40× (0.1 s test
   * strips against 4 s book pages), and a mean of the last jobs follows whatever size came last.
   */
  estimate(kind: JobKind, pixels?: number): number {
    const recent = this.history[kind];
    // The starting guess counts as one job of size 1.
    let ms = INITIAL_ESTIMATES[kind];
    let size = 1;
    for (const sample of recent) {
      ms += sample.ms;
      size += sample.size;
    }
    return Math.round((ms / size) * sizeOf(pixels));
  }

  /**
   * Expected wait before a new job of `lane` starts: the work ahead of it spread over the lane's processes. A job with
   * a processor-time budget that has run past its estimate is expected to run as long again (up to its budget): a PDF
   * that is being stopped for its work still holds its process meanwhile.
   */
  expectedWaitMs(lane: Lane = "ocr", now = Date.now()): number {
    let backlog = this.held[lane].ms;
    for (const entry of this.queued(lane)) backlog += entry.estimateMs;
    let idle = this.laneSize(lane);
    for (const slot of this.slots) {
      const entry = slot.current;
      if (slot.lane !== lane || !entry?.startedAt) continue;
      idle--;
      const elapsed = now - entry.startedAt;
      const overrun = entry.cpuBudgetMs === undefined ? 0 : Math.min(elapsed, entry.cpuBudgetMs);
      backlog += Math.max(0, entry.estimateMs - elapsed, overrun);
    }
    if (backlog === 0 && idle > 0) return 0;
    return Math.round(backlog / this.laneSize(lane));
  }

  stats(): PoolStats {
    for (const slot of this.slots) slot.rssMb = readRssMb(slot.child.pid) ?? slot.rssMb;
    const lane = (name: Lane) => ({
      workers: this.slots.filter((s) => s.lane === name).length,
      busy: this.slots.filter((s) => s.lane === name && s.busy).length,
      queued: this.queuedCount(name),
      completed: this.completed[name],
    });
    return {
      size: this.options.size,
      ...lane("ocr"),
      expectedWaitMs: this.expectedWaitMs("ocr"),
      inspect: { size: this.laneSize("inspect"), ...lane("inspect") },
      stopped: { ...this.stopped },
      recycled: this.recycled,
      processes: this.slots
        .filter((slot) => !slot.retired && slot.child.pid !== undefined)
        .map((slot) => ({ pid: slot.child.pid!, lane: slot.lane, busy: slot.busy, jobs: slot.jobs, rssMb: slot.rssMb })),
    };
  }

  /**
   * Start processes ahead of the first request (cold-start latency): `ocr` OCR processes (default 1) and the inspect
   * lane. Resolves when they are ready, their Tesseract loaded.
   */
  async warm({ ocr = 1 }: { ocr?: number } = {}): Promise<void> {
    const starting: Promise<void>[] = [];
    const want: Record<Lane, number> = { ocr: Math.min(ocr, this.laneSize("ocr")), inspect: this.laneSize("inspect") };
    for (const lane of ["ocr", "inspect"] as const) {
      const have = this.slots.filter((s) => s.lane === lane && !s.retired).length + this.spawning[lane];
      for (let i = have; i < want[lane]; i++) starting.push(this.spawn(lane));
    }
    await Promise.all(starting);
  }

  async terminate(): Promise<void> {
    this.closed = true;
    clearInterval(this.idleTimer);
    for (const lane of ["ocr", "inspect"] as const) {
      for (const entry of [...this.queued(lane), ...this.queued(lane, true)]) {
        this.settle(entry, new OcrError("shutting_down", "The OCR engine stopped"));
      }
      this.queues[lane].clear();
      this.backgroundQueues[lane].clear();
    }
    await Promise.all(this.slots.map((slot) => this.stop(slot, new OcrError("shutting_down", "The OCR engine stopped"))));
  }

  private laneSize(lane: Lane): number {
    return Math.max(1, lane === "ocr" ? this.options.size : this.options.inspectSize);
  }

  private queuedCount(lane: Lane): number {
    let count = 0;
    for (const sessions of this.queues[lane].values()) for (const waiting of sessions.values()) count += waiting.length;
    return count;
  }

  private backgroundCount(lane: Lane): number {
    let count = 0;
    for (const sessions of this.backgroundQueues[lane].values()) for (const waiting of sessions.values()) count += waiting.length;
    return count;
  }

  /** Requests' waiting jobs, or (`background`) the background ones. */
  private *queued(lane: Lane, background = false): Generator<QueuedJob> {
    const tenants = (background ? this.backgroundQueues : this.queues)[lane];
    for (const sessions of tenants.values()) for (const waiting of sessions.values()) yield* waiting;
  }

  private tenantsOf(entry: QueuedJob): Map<string, Map<string, QueuedJob[]>> {
    return (entry.background ? this.backgroundQueues : this.queues)[entry.lane];
  }

  private enqueue(entry: QueuedJob): void {
    const tenants = this.tenantsOf(entry);
    let sessions = tenants.get(entry.tenant);
    if (!sessions) tenants.set(entry.tenant, (sessions = new Map()));
    const waiting = sessions.get(entry.session);
    if (waiting) waiting.push(entry);
    else sessions.set(entry.session, [entry]);
  }

  /**
   * The next job by round-robin: the first tenant's first session; both then go to the back of their lines. Requests'
   * jobs first; a background job only when none waits.
   */
  private dequeue(lane: Lane): QueuedJob | undefined {
    const tenants = this.queues[lane].size > 0 ? this.queues[lane] : this.backgroundQueues[lane];
    const first = tenants.entries().next();
    if (first.done) return undefined;
    const [tenant, sessions] = first.value;
    const [session, waiting] = sessions.entries().next().value!;
    const entry = waiting.shift()!;
    sessions.delete(session);
    if (waiting.length > 0) sessions.set(session, waiting);
    tenants.delete(tenant);
    if (sessions.size > 0) tenants.set(tenant, sessions);
    return entry;
  }

  /** Take a waiting job out of its queue (its deadline passed). */
  private unqueue(entry: QueuedJob): void {
    const tenants = this.tenantsOf(entry);
    const sessions = tenants.get(entry.tenant);
    const waiting = sessions?.get(entry.session);
    const index = waiting?.indexOf(entry) ?? -1;
    if (!sessions || !waiting || index < 0) return;
    waiting.splice(index, 1);
    if (waiting.length === 0) sessions.delete(entry.session);
    if (sessions.size === 0) tenants.delete(entry.tenant);
  }

  private pump(lane: Lane): void {
    if (this.closed) return;
    this.recycleIfRebuilt();
    while (this.queues[lane].size > 0 || this.backgroundQueues[lane].size > 0) {
      const idle = this.slots.filter((s) => s.lane === lane && s.ready && !s.busy && !s.retired);
      if (idle.length === 0) break;
      const entry = this.dequeue(lane)!;
      const docId = "doc" in entry.job ? entry.job.doc.id : undefined;
      const slot = idle.find((s) => docId !== undefined && s.docs.includes(docId)) ?? idle[0]!;
      this.dispatch(slot, entry);
    }
    // Grow towards the lane's size while jobs wait for more processes than are starting.
    const live = () => this.slots.filter((s) => s.lane === lane && !s.retired).length + this.spawning[lane];
    while (this.queuedCount(lane) + this.backgroundCount(lane) > this.spawning[lane] && live() < this.laneSize(lane)) {
      this.spawn(lane).catch((error: unknown) => this.failQueued(lane, error));
    }
    if (this.capacityListeners.size > 0 && this.capacity(lane) > 0) {
      queueMicrotask(() => {
        for (const listener of this.capacityListeners) listener();
      });
    }
  }

  private dispatch(slot: Slot, entry: QueuedJob): void {
    slot.busy = true;
    slot.current = entry;
    entry.slot = slot;
    entry.startedAt = Date.now();
    const cpu = readCpuMs(slot.child.pid);
    if (cpu !== null) entry.cpuAtStart = cpu;
    let job = entry.job;
    if ("doc" in job) {
      const { id, bytes } = job.doc;
      if (slot.docs.includes(id)) {
        job = { ...job, doc: { id } };
      } else {
        while (slot.docs.length >= MAX_DOCS_PER_PROCESS) {
          const dropped = slot.docs.shift()!;
          slot.docBytes.delete(dropped);
          this.send(slot, { type: "drop", docId: dropped });
        }
        slot.docs.push(id);
        slot.docBytes.set(id, bytes?.byteLength ?? 0);
        job = { ...job, doc: { id, bytes } };
      }
    }
    // The process is stopped from here at the deadline; its own deadline, a little later, is only a backstop.
    this.send(slot, { type: "job", id: entry.id, deadline: entry.deadline + ENGINE_DEADLINE_SLACK_MS, job });
    this.watchMemory();
  }

  /** Post a message; a process that cannot take it is stopped (its job, if any, answers `engine_failed`). */
  private send(slot: Slot, message: ToEngine): void {
    const unreachable = (cause: unknown) =>
      void this.stop(slot, new OcrError("engine_failed", "The OCR engine process could not be reached", { cause }));
    if (!slot.child.connected) {
      unreachable(new Error("disconnected"));
      return;
    }
    try {
      slot.child.send(message, (error) => {
        if (error) unreachable(error);
      });
    } catch (error) {
      unreachable(error);
    }
  }

  private spawn(lane: Lane): Promise<void> {
    this.spawning[lane]++;
    let started: Promise<void>;
    try {
      started = this.startProcess(lane);
    } catch (error) {
      started = Promise.reject(error);
    }
    return started.finally(() => {
      this.spawning[lane]--;
    });
  }

  private startProcess(lane: Lane): Promise<void> {
    const script = this.workerScript();
    const config: EngineProcessConfig = {
      maxJobsPerWorker: this.options.maxJobsPerWorker,
      createTimeoutMs: this.options.createTimeoutMs,
      engines: this.options.engines,
      ...(this.options.secondReadingBelow !== undefined && { secondReadingBelow: this.options.secondReadingBelow }),
      ...(this.options.keepTesseract && { keepTesseract: true }),
      ...(lane === "ocr" && { warmLanguages: this.options.warmLanguages }),
    };
    const child = fork(script, [], {
      // The JS heap gets the same ceiling (typed arrays and wasm memory are outside it: the RSS watch covers them).
      execArgv: [`--max-old-space-size=${this.options.memoryMb}`],
      serialization: "advanced",
      stdio: ["ignore", "inherit", "pipe", "ipc"],
      env: engineEnvironment(config),
    });
    const slot: Slot = {
      id: this.nextSlotId++,
      lane,
      child,
      ready: false,
      busy: false,
      retired: false,
      jobs: 0,
      docs: [],
      docBytes: new Map(),
      stderrTail: "",
      rssMb: 0,
      idleSince: Date.now(),
    };
    child.stderr?.setEncoding("utf8");
    child.stderr?.on("data", (chunk: string) => {
      slot.stderrTail = (slot.stderrTail + chunk).slice(-4096);
      process.stderr.write(chunk);
    });
    this.slots.push(slot);
    if (lane === "inspect") this.watchIdle();

    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        void this.stop(slot, new OcrError("engine_failed", "Starting an OCR engine process timed out"));
        reject(new OcrError("engine_failed", "The OCR engine could not start (timed out)"));
      }, this.options.createTimeoutMs);
      child.on("message", (raw: unknown) => {
        const parsed = fromEngineSchema.safeParse(raw);
        if (!parsed.success) return;
        const message = parsed.data;
        if (message.type === "heavy") {
          if (message.acquire) this.acquireHeavy(slot);
          else this.releaseHeavy(slot);
          return;
        }
        if (message.type === "ready") {
          clearTimeout(timer);
          slot.ready = true;
          if (this.closed) void this.stop(slot, new OcrError("shutting_down", "The OCR engine stopped"));
          resolve();
          this.pump(lane);
          return;
        }
        const entry = slot.current;
        if (!entry || entry.id !== message.id) return;
        this.finishJob(slot, entry);
        if (message.ok) {
          this.learn(entry);
          this.settle(entry, null, message.value);
        } else {
          this.settle(entry, fromOcrErrorData(message.error));
        }
        this.afterJob(slot);
      });
      child.on("error", (error) => {
        clearTimeout(timer);
        reject(new OcrError("engine_failed", "The OCR engine could not start", { cause: error }));
        this.onExit(slot, null, null);
      });
      child.on("exit", (code, signal) => {
        clearTimeout(timer);
        if (!slot.ready) reject(new OcrError("engine_failed", `The OCR engine process exited at start (${signal ?? code})`));
        this.onExit(slot, code, signal);
      });
    });
  }

  /**
   * One process at a time may run a memory-heavy step (the second recognizer's pass: its detector's buffers come on
   * top of the process's Tesseract). The others wait for their turn in the middle of their job; a process that
   * finishes its job or dies gives the turn back.
   */
  private acquireHeavy(slot: Slot): void {
    if (!slot.busy || this.heavyWaiting.includes(slot) || this.heavyHolder === slot) return;
    if (this.heavyHolder) {
      this.heavyWaiting.push(slot);
      return;
    }
    this.heavyHolder = slot;
    slot.child.send({ type: "grant" } satisfies ToEngine);
  }

  private releaseHeavy(slot: Slot): void {
    this.heavyWaiting = this.heavyWaiting.filter((s) => s !== slot);
    if (this.heavyHolder !== slot) return;
    this.heavyHolder = undefined;
    for (let next = this.heavyWaiting.shift(); next; next = this.heavyWaiting.shift()) {
      if (!next.child.connected) continue;
      this.heavyHolder = next;
      next.child.send({ type: "grant" } satisfies ToEngine);
      return;
    }
  }

  private finishJob(slot: Slot, entry: QueuedJob): void {
    this.releaseHeavy(slot);
    slot.current = undefined;
    slot.busy = false;
    slot.idleSince = Date.now();
    slot.jobs++;
    entry.slot = undefined;
    this.completed[slot.lane]++;
  }

  /** After a job: a process that kept too much memory is replaced (glibc and wasm rarely give memory back). */
  private afterJob(slot: Slot): void {
    const rss = readRssMb(slot.child.pid);
    if (rss !== null) slot.rssMb = rss;
    // An open document is memory the process keeps on purpose (a job's large PDF, read page after page): its bytes,
    // and a quarter more for what pdf.js builds from them.
    let keptMb = 0;
    for (const bytes of slot.docBytes.values()) keptMb += (1.25 * bytes) / (1024 * 1024);
    if (rss !== null && rss > Math.min(RECYCLE_MB, this.options.memoryMb * 0.6) + keptMb) {
      this.recycled++;
      void this.stop(slot);
      // Its replacement starts now, while other work runs, rather than when the next job waits for it.
      if (!this.closed) this.spawn(slot.lane).catch((error: unknown) => this.failQueued(slot.lane, error));
    }
    this.pump(slot.lane);
  }

  private learn(entry: QueuedJob): void {
    if (!entry.startedAt) return;
    const recent = this.history[entry.job.kind];
    recent.push({ ms: Date.now() - entry.startedAt, size: entry.size });
    if (recent.length > ESTIMATE_HISTORY) recent.shift();
  }

  /** The deadline passed: drop a waiting job, or stop the process running it. */
  private expire(entry: QueuedJob): void {
    if (entry.settled) return;
    const error = deadlineError();
    const slot = entry.slot;
    if (slot) {
      this.stopped.timeout++;
      void this.stop(slot, error);
      return;
    }
    this.unqueue(entry);
    this.settle(entry, error);
  }

  /** Kill a process now. Its job (if any) is answered with `reason`; a replacement starts when jobs wait. */
  private async stop(slot: Slot, reason?: OcrError): Promise<void> {
    if (slot.retired) return;
    slot.retired = true;
    slot.killedFor = reason;
    const exited = new Promise<void>((resolve) => {
      if (slot.child.exitCode !== null || slot.child.signalCode !== null) resolve();
      else slot.child.once("exit", () => resolve());
    });
    if (slot.busy || reason) slot.child.kill("SIGKILL");
    else slot.child.disconnect?.(); // idle: let it exit on its own (it exits when the channel closes)
    const timer = setTimeout(() => slot.child.kill("SIGKILL"), 2_000);
    await exited;
    clearTimeout(timer);
  }

  private onExit(slot: Slot, code: number | null, signal: NodeJS.Signals | null): void {
    const index = this.slots.indexOf(slot);
    if (index < 0) return;
    this.slots.splice(index, 1);
    slot.retired = true;
    this.releaseHeavy(slot);
    const entry = slot.current;
    slot.current = undefined;
    if (entry && !entry.settled) {
      let error = slot.killedFor;
      if (!error) {
        // V8 says so when the JS heap ran out. A SIGKILL we did not send is the kernel's OOM killer only when the
        // process was near its ceiling; otherwise someone else killed it (an operator, a supervisor): a crash
        // (`engine_crashed`), which a client retries — not `out_of_memory`, which tells it the page is too large.
        const nearCeiling = slot.rssMb >= this.options.memoryMb * OOM_KILL_SHARE;
        const outOfMemory = /heap out of memory|Allocation failed/i.test(slot.stderrTail) || (signal === "SIGKILL" && nearCeiling);
        if (outOfMemory) {
          this.stopped.memory++;
          error = memoryError(this.options.memoryMb);
        } else {
          this.stopped.crashed++;
          console.error(`[engine] an engine process died during ${entry.job.kind} (${signal ?? `exit ${code}`})`);
          error = new OcrError("engine_crashed", "The OCR engine process stopped unexpectedly");
        }
      }
      this.settle(entry, error);
    }
    this.pump(slot.lane);
  }

  /**
   * Read the memory (and, for jobs with a budget, the processor time) of busy processes every 100 ms while any is busy;
   * kill one past the ceiling or its budget. This runs in the server, so a process whose event loop is stuck in pdf.js
   * is stopped all the same.
   */
  private watchMemory(): void {
    if (this.memoryTimer) return;
    this.memoryTimer = setInterval(() => {
      const busy = this.slots.filter((s) => s.busy && !s.retired);
      if (busy.length === 0) {
        clearInterval(this.memoryTimer);
        this.memoryTimer = undefined;
        return;
      }
      for (const slot of busy) {
        const rss = readRssMb(slot.child.pid);
        if (rss === null) continue;
        slot.rssMb = rss;
        if (rss > this.options.memoryMb) {
          this.stopped.memory++;
          void this.stop(slot, memoryError(this.options.memoryMb));
          continue;
        }
        const entry = slot.current;
        if (entry?.cpuBudgetMs !== undefined && workMs(entry, slot.child.pid) > entry.cpuBudgetMs) {
          this.stopped.work++;
          const seconds = Math.round(entry.cpuBudgetMs / 1000);
          void this.stop(slot, new OcrError("too_complex", entry.overBudget ?? `The job needs more than ${seconds} s of processing, the limit`));
        }
      }
    }, MEMORY_POLL_MS);
    this.memoryTimer.unref();
  }

  /** Inspect processes that had nothing to do for a minute exit (OCR processes stay warm: Tesseract takes ~0.4 s). */
  private watchIdle(): void {
    if (this.idleTimer) return;
    this.idleTimer = setInterval(() => {
      const inspect = this.slots.filter((s) => s.lane === "inspect" && !s.retired);
      if (inspect.length === 0) {
        clearInterval(this.idleTimer);
        this.idleTimer = undefined;
        return;
      }
      const now = Date.now();
      for (const slot of inspect) if (!slot.busy && now - slot.idleSince > INSPECT_IDLE_MS) void this.stop(slot);
    }, INSPECT_IDLE_MS / 4);
    this.idleTimer.unref();
  }

  private failQueued(lane: Lane, error: unknown): void {
    // No process could start: fail the jobs nobody can serve rather than leaving them to their deadline.
    if (this.slots.some((s) => s.lane === lane && !s.retired) || this.spawning[lane] > 0) return;
    console.error(`[engine] ${error instanceof Error ? error.message : String(error)}`);
    const failure = new OcrError("engine_failed", "The OCR engine could not start", { cause: error });
    for (const entry of [...this.queued(lane), ...this.queued(lane, true)]) this.settle(entry, failure);
    this.queues[lane].clear();
    this.backgroundQueues[lane].clear();
  }

  private settle(entry: QueuedJob, error: Error | null, value?: unknown): void {
    if (entry.settled) return;
    entry.settled = true;
    clearTimeout(entry.timer);
    if (error) entry.reject(error);
    else entry.resolve(value);
  }

  private workerScript(): string {
    const script = this.options.workerScript ?? defaultWorkerScript();
    if (!existsSync(script)) {
      throw new OcrError(
        "engine_failed",
        `The OCR engine is not built (${script} is missing): run \`npm run build:engine\` (npm run dev and npm run build do it)`,
      );
    }
    return script;
  }

  /** In development the engine bundle is rebuilt on change: idle processes running the old one are replaced. */
  private recycleIfRebuilt(): void {
    if (process.env.NODE_ENV !== "development") return;
    let stamp: number;
    try {
      stamp = statSync(this.workerScript()).mtimeMs;
    } catch {
      return;
    }
    if (this.scriptStamp !== undefined && stamp !== this.scriptStamp) {
      for (const slot of this.slots) if (!slot.busy) void this.stop(slot);
    }
    this.scriptStamp = stamp;
  }
}

/** A job's size in the duration model: √megapixels, at least ½ (unknown: 1). */
function sizeOf(pixels: number | undefined): number {
  return pixels === undefined ? 1 : Math.sqrt(Math.max(0.25, pixels / 1e6));
}

/** `build/engine/ocr-worker.mjs` under the app's directory (also in the standalone output, see next.config.ts). */
function defaultWorkerScript(): string {
  return path.join(process.cwd(), "build", "engine", "ocr-worker.mjs");
}

/**
 * The environment of an engine process: its configuration and what Node and the C library need — none of the
 * server's secrets. `MALLOC_MMAP_THRESHOLD_` makes glibc return freed page buffers to the system (without it, freed
 * pixel memory stays in per-thread arenas); it only works when set before the process starts, which is the case here.
 */
function engineEnvironment(config: EngineProcessConfig): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    [ENGINE_CONFIG_VARIABLE]: JSON.stringify(config),
    MALLOC_MMAP_THRESHOLD_: process.env.MALLOC_MMAP_THRESHOLD_ ?? "1048576",
    NODE_ENV: process.env.NODE_ENV,
  };
  for (const name of ["PATH", "HOME", "TMPDIR", "TMP", "TEMP", "LANG", "TZ", "SYSTEMROOT"]) {
    if (process.env[name] !== undefined) env[name] = process.env[name];
  }
  return env;
}

/** Processor time (user + system, all threads) of a process in ms, from /proc (Linux); null elsewhere or when it is gone. */
function readCpuMs(pid: number | undefined): number | null {
  if (pid === undefined) return null;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "latin1");
    // After the command name (in parentheses, which may hold anything): state is field 3, utime 14, stime 15.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const ticks = Number(fields[11]) + Number(fields[12]);
    return Number.isFinite(ticks) ? ticks * CLOCK_TICK_MS : null;
  } catch {
    return null;
  }
}

/** Linux reports process times in clock ticks of 1/100 s (USER_HZ, the same on every architecture it supports). */
const CLOCK_TICK_MS = 10;

/** The processor time a running job has used; its wall time where processor time cannot be read. */
function workMs(entry: QueuedJob, pid: number | undefined): number {
  const cpu = entry.cpuAtStart === undefined ? null : readCpuMs(pid);
  return cpu === null ? Date.now() - (entry.startedAt ?? Date.now()) : cpu - entry.cpuAtStart!;
}

/** Resident memory of a process in MB, from /proc (Linux); null elsewhere or when it is gone. */
function readRssMb(pid: number | undefined): number | null {
  if (pid === undefined) return null;
  try {
    const status = readFileSync(`/proc/${pid}/status`, "latin1");
    const match = /^VmRSS:\s+(\d+)\s+kB/m.exec(status);
    return match ? Math.round(Number(match[1]) / 1024) : null;
  } catch {
    return null;
  }
}

function memoryError(memoryMb: number): OcrError {
  return new OcrError(
    "out_of_memory",
    `Reading this document needs more than ${memoryMb} MB of memory for one page, the limit per page; send smaller pages or fewer megapixels`,
  );
}
