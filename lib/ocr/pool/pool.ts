import { existsSync, statSync } from "node:fs";
import type { OcrEngine } from "../model/document";
import { deadlineError, fromOcrErrorData, OcrError } from "../model/ocr-error";
import {
  ENGINE_DEADLINE_SLACK_MS,
  type EngineJob,
  type EngineProcessConfig,
  type JobKind,
  type JobResults,
  type TesseractInUse,
} from "../model/protocol";
import { HeldPlaces, judgeAdmission, judgeFollowing, type Admission, type JobAdmission } from "./admission";
import {
  defaultEngineScript,
  EngineProcess,
  type EngineProcessEvents,
  type JobAnswer,
  type Lane,
  type QueuedJob,
} from "./engine-process";
import { DurationModel, expectedWaitMs, sizeOf, type RunningJob } from "./estimates";
import { HeavyTurn } from "./heavy-turn";
import { FairQueue } from "./queue";

export type { Admission, JobAdmission } from "./admission";
export type { Lane } from "./engine-process";

/**
 * The engine's processes, seen from the server: the queue and the dispatch of jobs to them. Every byte of a document
 * is read in a child process (lib/ocr/engine/jobs.ts): the server's event loop only routes messages, a job past its
 * deadline or its memory ceiling is stopped by killing its process — which returns all of its memory to the system —
 * and a process that dies is replaced while its job is answered with an engine error (lib/ocr/model/ocr-error.ts).
 *
 * Two lanes: `ocr` processes (Tesseract, one per core by default) and `inspect` processes that only open PDFs and
 * read their text layers, so that opening a document never waits behind someone else's OCR.
 *
 * The parts: the duration model and the expected wait (estimates.ts), admission (admission.ts), one engine process
 * (engine-process.ts), the one-at-a-time turn for the heavy recognizer (heavy-turn.ts), the round-robin queue
 * (queue.ts). Waiting jobs are served round-robin by tenant (the account), then by request. A job may carry a budget
 * of processor time, watched from outside its process like the memory ceiling: past it, the process is killed and
 * the job answered `too_complex` (a PDF whose pages draw without end cannot hold an inspect process until its
 * deadline).
 */

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
  /** The Tesseract worker inside a process is replaced after this many jobs (wasm memory only grows). */
  maxJobsPerWorker: number;
  /** How long starting a process (and its Tesseract worker) may take. */
  createTimeoutMs: number;
  /** Resident-memory ceiling of one process, MB: a job that passes it is stopped with `out_of_memory`. Default 1024. */
  memoryMb?: number;
  /** Recognizers the OCR processes use (`OCR_ENGINES`). Default `["tesseract"]`. */
  engines?: OcrEngine[];
  /** Tesseract confidence under which a page is also read by the second recognizer (default: second-reading.ts's). */
  secondReadingBelow?: number;
  /** Keep Tesseract's thread while PaddleOCR reads (`OCR_KEEP_TESSERACT_FOR_PADDLE`). Default false. */
  keepTesseract?: boolean;
  /** Which Tesseract the OCR processes read with (`OCR_TESSERACT`). Default `auto`: libtesseract where it loads. */
  tesseract?: EngineProcessConfig["tesseract"];
  /** The libtesseract to load (`OCR_TESSERACT_LIBRARY`). */
  tesseractLibrary?: string;
  /** Languages the OCR processes load at start. Default `["eng"]`. */
  warmLanguages?: string[];
  /** The engine process bundle (default: `build/engine/ocr-worker.mjs` under the app's directory). */
  engineScript?: string;
}

export interface RunOptions {
  /** Epoch ms: a job still waiting then is dropped, a running one is stopped; both answer `deadline`. */
  deadline: number;
  /**
   * The request's signal (lib/request-scope.ts): when it aborts (its deadline, or the client went away) a waiting job
   * is dropped and a running one's process stopped, and the job answers at once with the signal's reason.
   */
  signal?: AbortSignal;
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
  /** How the job passes admission (admission.ts). Default `{ kind: "judge" }`. */
  admission?: JobAdmission;
  /**
   * A job of an asynchronous OCR job (lib/jobs): it starts only when no request's job waits in its lane, and is not
   * judged by admission (the job runner asks for work only when `capacity()` says a process is free). Default false.
   */
  background?: boolean;
}

export interface PoolStats {
  size: number;
  /** Live OCR processes (the name is the health report's). */
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
  /** The Tesseract the last OCR process to start reads with (native or tesseract.js); null before one started. */
  tesseract: TesseractInUse | null;
}

/** Why a request's signal aborted: its reason when it is an error (the API's own), else the engine's `deadline`. */
function abortReason(signal: AbortSignal): Error {
  return signal.reason instanceof Error && signal.reason.name !== "AbortError" && signal.reason.name !== "TimeoutError"
    ? signal.reason
    : deadlineError();
}

/** Documents the server keeps open in one process (the process itself allows a few more). */
const MAX_DOCS_PER_PROCESS = 2;
/** How often busy processes' memory is read. */
const MEMORY_POLL_MS = 100;
/**
 * A process whose resident memory stays above this (MB) after a job is replaced: Tesseract's wasm heap and glibc
 * keep what a large page needed, and only a new process gives it back (docs/decisions.md#engine-process-memory).
 */
const RECYCLE_MB = 320;
/** An inspect process idle this long exits, its memory back to the system (docs/decisions.md#engine-process-memory). */
const INSPECT_IDLE_MS = 60_000;
const LANES = ["ocr", "inspect"] as const;

export class OcrPool {
  private readonly options: Required<
    Omit<PoolOptions, "engineScript" | "secondReadingBelow" | "keepTesseract" | "tesseract" | "tesseractLibrary">
  > &
    Pick<PoolOptions, "engineScript" | "secondReadingBelow" | "keepTesseract" | "tesseract" | "tesseractLibrary">;
  private readonly processes: EngineProcess[] = [];
  private readonly spawning: Record<Lane, number> = { ocr: 0, inspect: 0 };
  /** Requests' waiting jobs per lane. */
  private readonly queues: Record<Lane, FairQueue<QueuedJob>> = { ocr: new FairQueue(), inspect: new FairQueue() };
  /** Waiting background jobs (`RunOptions.background`), likewise: served only when no request's job waits. */
  private readonly backgroundQueues: Record<Lane, FairQueue<QueuedJob>> = {
    ocr: new FairQueue(),
    inspect: new FairQueue(),
  };
  private readonly capacityListeners = new Set<() => void>();
  private readonly durations = new DurationModel();
  private readonly stopped = { timeout: 0, work: 0, memory: 0, crashed: 0 };
  /** Admitted requests whose first job is not queued yet (see `Admission`). */
  private readonly held: Record<Lane, HeldPlaces> = { ocr: new HeldPlaces(), inspect: new HeldPlaces() };
  private readonly heavyTurn = new HeavyTurn<EngineProcess>();
  /** What the last OCR process to start said it reads with. */
  private tesseract: TesseractInUse | null = null;
  private readonly events: EngineProcessEvents = {
    ready: (process) => {
      if (process.tesseract) this.tesseract = process.tesseract;
      if (this.closed) void process.stop(new OcrError("shutting_down", "The OCR engine stopped"));
      this.pump(process.lane);
    },
    heavy: (process, acquire) => (acquire ? this.heavyTurn.acquire(process) : this.heavyTurn.release(process)),
    answer: (process, message) => this.onAnswer(process, message),
    exit: (process, code, signal) => this.onExit(process, code, signal),
  };
  private recycled = 0;
  private nextProcessId = 1;
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
  run<K extends JobKind>(
    lane: Lane,
    job: Extract<EngineJob, { kind: K }>,
    options: RunOptions,
  ): Promise<JobResults[K]> {
    if (this.closed) return Promise.reject(new OcrError("shutting_down", "The OCR engine is shutting down"));
    const now = Date.now();
    if (options.deadline <= now) return Promise.reject(deadlineError());
    if (options.signal?.aborted) return Promise.reject(abortReason(options.signal));
    const estimateMs = options.estimateMs ?? this.estimate(job.kind, options.pixels);
    try {
      // A background job is judged by the job runner, which asks only when a process is free (`capacity`).
      if (!options.background)
        this.passAdmission(lane, options.admission ?? { kind: "judge" }, estimateMs, options.deadline, now);
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
      const signal = options.signal;
      if (signal) {
        const onAbort = () => this.abort(entry, abortReason(signal));
        signal.addEventListener("abort", onAbort, { once: true });
        entry.unlisten = () => signal.removeEventListener("abort", onAbort);
      }
      this.queueOf(entry).push(entry);
      this.pump(lane);
    });
  }

  /**
   * Refuse now what could not start (and get a second of work done) before its deadline: `overloaded`, retry after
   * the expected wait (admission.ts). Also refuses when `queueLimit` jobs already wait. An admitted request holds
   * its place (its estimate counts in the wait others see) until its job is queued or `release()` is called.
   */
  admit(lane: Lane, estimateMs: number, deadline: number, now = Date.now()): Admission {
    judgeAdmission({
      waitMs: this.expectedWaitMs(lane),
      queued: this.queues[lane].count + this.held[lane].count,
      queueLimit: this.options.queueLimit,
      estimateMs,
      deadline,
      now,
    });
    return this.held[lane].hold(estimateMs);
  }

  /** A fresh session key for the jobs of one request. */
  session(): string {
    return `s${this.nextSession++}`;
  }

  /** Drop the waiting jobs of a session with `error` (its running jobs finish). */
  cancel(session: string, error: OcrError): void {
    for (const lane of LANES) {
      for (const queue of [this.queues[lane], this.backgroundQueues[lane]]) {
        for (const entry of queue.takeSession(session)) this.settle(entry, error);
      }
    }
  }

  /**
   * Processes of `lane` that could start a background job now: the lane's size less its busy processes and every
   * job waiting in it. Processes not started yet count (a job waiting starts one).
   */
  capacity(lane: Lane = "ocr"): number {
    if (this.closed) return 0;
    const busy = this.processes.filter((p) => p.lane === lane && p.busy && !p.retired).length;
    return Math.max(0, this.laneSize(lane) - busy - this.queues[lane].count - this.backgroundQueues[lane].count);
  }

  /** Call `listener` whenever a job of any lane ends or a process exits (capacity may have grown). */
  onCapacity(listener: () => void): () => void {
    this.capacityListeners.add(listener);
    return () => this.capacityListeners.delete(listener);
  }

  /** Close a document in every process that holds it (the end of a request). */
  release(docId: string): void {
    for (const process of this.processes) {
      const index = process.docs.indexOf(docId);
      if (index < 0) continue;
      process.docs.splice(index, 1);
      process.docBytes.delete(docId);
      process.send({ type: "drop", docId });
    }
  }

  /** Expected duration of a job (ms), from the jobs run so far (estimates.ts `DurationModel`). */
  estimate(kind: JobKind, pixels?: number): number {
    return this.durations.estimate(kind, pixels);
  }

  /**
   * Expected time (ms) until `pages` jobs of `kind` of one request are all read, from now: the wait before the first
   * starts, then the pages spread over the OCR processes (the first alone when it decides the language of the rest).
   * What the intake weighs against a caller's budget (read now, or a job).
   */
  estimateRead(
    kind: JobKind,
    pages: number,
    { pixels, firstAlone = false }: { pixels?: number; firstAlone?: boolean } = {},
  ): number {
    if (pages <= 0) return 0;
    const pageMs = this.estimate(kind, pixels);
    const lanes = this.laneSize("ocr");
    const rounds = firstAlone ? 1 + Math.ceil((pages - 1) / lanes) : Math.ceil(pages / lanes);
    return this.expectedWaitMs("ocr") + rounds * pageMs;
  }

  /** Expected wait before a new job of `lane` starts (estimates.ts `expectedWaitMs`). */
  expectedWaitMs(lane: Lane = "ocr", now = Date.now()): number {
    const running: RunningJob[] = [];
    for (const process of this.processes) {
      const entry = process.current;
      if (process.lane !== lane || !entry?.startedAt) continue;
      running.push({
        estimateMs: entry.estimateMs,
        elapsedMs: now - entry.startedAt,
        ...(entry.cpuBudgetMs !== undefined && { cpuBudgetMs: entry.cpuBudgetMs }),
      });
    }
    const queuedMs = Array.from(this.queues[lane], (entry) => entry.estimateMs);
    return expectedWaitMs({ processes: this.laneSize(lane), heldMs: this.held[lane].ms, queuedMs, running });
  }

  stats(): PoolStats {
    for (const process of this.processes) process.readMemory();
    const lane = (name: Lane) => ({
      workers: this.processes.filter((p) => p.lane === name).length,
      busy: this.processes.filter((p) => p.lane === name && p.busy).length,
      queued: this.queues[name].count,
      completed: this.completed[name],
    });
    return {
      size: this.options.size,
      ...lane("ocr"),
      expectedWaitMs: this.expectedWaitMs("ocr"),
      inspect: { size: this.laneSize("inspect"), ...lane("inspect") },
      stopped: { ...this.stopped },
      recycled: this.recycled,
      processes: this.processes
        .filter((process) => !process.retired && process.pid !== undefined)
        .map((process) => ({
          pid: process.pid!,
          lane: process.lane,
          busy: process.busy,
          jobs: process.jobs,
          rssMb: process.rssMb,
        })),
      tesseract: this.tesseract,
    };
  }

  /**
   * Start processes ahead of the first request (cold-start latency): `ocr` OCR processes (default 1) and the inspect
   * lane. Resolves when they are ready, their Tesseract loaded.
   */
  async warm({ ocr = 1 }: { ocr?: number } = {}): Promise<void> {
    const starting: Promise<void>[] = [];
    const want: Record<Lane, number> = { ocr: Math.min(ocr, this.laneSize("ocr")), inspect: this.laneSize("inspect") };
    for (const lane of LANES) {
      const have = this.processes.filter((p) => p.lane === lane && !p.retired).length + this.spawning[lane];
      for (let i = have; i < want[lane]; i++) starting.push(this.spawn(lane));
    }
    await Promise.all(starting);
  }

  async terminate(): Promise<void> {
    this.closed = true;
    clearInterval(this.idleTimer);
    for (const lane of LANES) {
      for (const entry of [...this.queues[lane], ...this.backgroundQueues[lane]]) {
        this.settle(entry, new OcrError("shutting_down", "The OCR engine stopped"));
      }
      this.queues[lane].clear();
      this.backgroundQueues[lane].clear();
    }
    await Promise.all(
      this.processes.map((process) => process.stop(new OcrError("shutting_down", "The OCR engine stopped"))),
    );
  }

  private passAdmission(lane: Lane, admission: JobAdmission, estimateMs: number, deadline: number, now: number): void {
    switch (admission.kind) {
      case "admitted":
        admission.place.release();
        return;
      case "judge":
        this.admit(lane, estimateMs, deadline, now).release();
        return;
      case "follows":
        judgeFollowing(this.queues[lane].count, this.options.queueLimit);
        return;
    }
  }

  private laneSize(lane: Lane): number {
    return Math.max(1, lane === "ocr" ? this.options.size : this.options.inspectSize);
  }

  private queueOf(entry: QueuedJob): FairQueue<QueuedJob> {
    return (entry.background ? this.backgroundQueues : this.queues)[entry.lane];
  }

  /**
   * Hand waiting jobs to idle processes (requests' jobs first; among tenants, those holding the fewest processes of
   * the lane), and start processes while jobs wait for them. In the inspect lane, a request of a tenant holding none
   * while another holds two or more gets a process beyond the lane's size (docs/decisions.md#lane-fair-share).
   */
  private pump(lane: Lane): void {
    if (this.closed) return;
    this.recycleIfRebuilt();
    const requests = this.queues[lane];
    const background = this.backgroundQueues[lane];
    const size = this.laneSize(lane);
    const members = () => this.processes.filter((p) => p.lane === lane && !p.retired);
    while (!requests.isEmpty || !background.isEmpty) {
      const idle = members().filter((p) => p.ready && !p.busy);
      if (idle.length === 0) break;
      const holdings = this.holdings(lane);
      const busy = members().filter((p) => p.busy).length;
      // At the lane's size, only a tenant with nothing while another holds more than one takes a process more.
      if (busy >= size && this.overflowTenant(lane, holdings) === undefined) break;
      const entry = (requests.isEmpty ? background : requests).shift((tenant) => holdings.get(tenant) ?? 0)!;
      const docId = "doc" in entry.job ? entry.job.doc.id : undefined;
      // A process that holds the job's document already takes it (the document is not sent again).
      const process = idle.find((p) => docId !== undefined && p.docs.includes(docId)) ?? idle[0]!;
      this.dispatch(process, entry);
    }
    // Grow towards the lane's size while jobs wait for more processes than are starting. (A starting process is a
    // member already: counting `spawning` too kept a second PDF waiting while the first process started.)
    while (requests.count + background.count > members().filter((p) => !p.ready).length && members().length < size) {
      this.spawn(lane).catch((error: unknown) => this.failQueued(lane, error));
    }
    const current = members();
    if (
      current.length === size &&
      current.every((p) => p.busy) &&
      this.overflowTenant(lane, this.holdings(lane)) !== undefined
    ) {
      this.spawn(lane).catch((error: unknown) => this.failQueued(lane, error));
    }
    // Back to the lane's size once no such tenant waits: a process beyond it exits when idle.
    let surplus = current.length - size;
    for (const process of current) {
      if (surplus <= 0) break;
      if (!process.ready || process.busy) continue;
      surplus--;
      void process.stop();
    }
    if (this.capacityListeners.size > 0 && this.capacity(lane) > 0) {
      queueMicrotask(() => {
        for (const listener of this.capacityListeners) listener();
      });
    }
  }

  /** Processes of `lane` running a job, per tenant. */
  private holdings(lane: Lane): Map<string, number> {
    const held = new Map<string, number>();
    for (const process of this.processes) {
      const tenant = process.lane === lane && !process.retired ? process.current?.tenant : undefined;
      if (tenant !== undefined) held.set(tenant, (held.get(tenant) ?? 0) + 1);
    }
    return held;
  }

  /**
   * A tenant whose request waits in the inspect lane holding no process of it while another tenant holds two or more:
   * it may have one process beyond the lane's size. Inspect jobs may run for their whole processor budget (a PDF
   * that draws without end: 10 s), so one account's two such PDFs would otherwise hold everyone else's PDFs that long;
   * an OCR job is one page, and a waiting tenant gets the next process that frees.
   */
  private overflowTenant(lane: Lane, holdings: Map<string, number>): string | undefined {
    if (lane !== "inspect") return undefined;
    let most = 0;
    for (const held of holdings.values()) most = Math.max(most, held);
    if (most < 2) return undefined;
    for (const tenant of this.queues[lane].waitingTenants()) if (!holdings.get(tenant)) return tenant;
    return undefined;
  }

  private dispatch(process: EngineProcess, entry: QueuedJob): void {
    process.busy = true;
    process.current = entry;
    entry.process = process;
    entry.startedAt = Date.now();
    const cpu = process.cpuMs();
    if (cpu !== null) entry.cpuAtStart = cpu;
    let job = entry.job;
    if ("doc" in job) {
      const { id, bytes } = job.doc;
      if (process.docs.includes(id)) {
        job = { ...job, doc: { id } };
      } else {
        while (process.docs.length >= MAX_DOCS_PER_PROCESS) {
          const dropped = process.docs.shift()!;
          process.docBytes.delete(dropped);
          process.send({ type: "drop", docId: dropped });
        }
        process.docs.push(id);
        process.docBytes.set(id, bytes?.byteLength ?? 0);
        job = { ...job, doc: { id, bytes } };
      }
    }
    // The process is stopped from here at the deadline; its own deadline, a little later, is only a backstop.
    process.send({ type: "job", id: entry.id, deadline: entry.deadline + ENGINE_DEADLINE_SLACK_MS, job });
    this.watchMemory();
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
    const config: EngineProcessConfig = {
      maxJobsPerWorker: this.options.maxJobsPerWorker,
      createTimeoutMs: this.options.createTimeoutMs,
      engines: this.options.engines,
      ...(this.options.secondReadingBelow !== undefined && { secondReadingBelow: this.options.secondReadingBelow }),
      ...(this.options.keepTesseract && { keepTesseract: true }),
      tesseract: this.options.tesseract ?? "auto",
      ...(this.options.tesseractLibrary && { tesseractLibrary: this.options.tesseractLibrary }),
      ...(lane === "ocr" && { warmLanguages: this.options.warmLanguages }),
    };
    const process = new EngineProcess(
      {
        id: this.nextProcessId++,
        lane,
        script: this.engineScript(),
        config,
        memoryMb: this.options.memoryMb,
        createTimeoutMs: this.options.createTimeoutMs,
      },
      this.events,
    );
    this.processes.push(process);
    if (lane === "inspect") this.watchIdle();
    return process.started;
  }

  private onAnswer(process: EngineProcess, message: JobAnswer): void {
    const entry = process.current;
    if (!entry || entry.id !== message.id) return;
    this.finishJob(process, entry);
    if (message.ok) {
      if (entry.startedAt) this.durations.learn(entry.job.kind, Date.now() - entry.startedAt, entry.size);
      this.settle(entry, null, message.value);
    } else {
      this.settle(entry, fromOcrErrorData(message.error));
    }
    this.afterJob(process);
  }

  private finishJob(process: EngineProcess, entry: QueuedJob): void {
    this.heavyTurn.release(process);
    process.current = undefined;
    process.busy = false;
    process.idleSince = Date.now();
    process.jobs++;
    entry.process = undefined;
    this.completed[process.lane]++;
  }

  /** After a job: a process that kept too much memory is replaced (glibc and wasm rarely give memory back). */
  private afterJob(process: EngineProcess): void {
    const rss = process.readMemory();
    // An open document is memory the process keeps on purpose (a job's large PDF, read page after page): its bytes,
    // and a quarter more for what pdf.js builds from them.
    let keptMb = 0;
    for (const bytes of process.docBytes.values()) keptMb += (1.25 * bytes) / (1024 * 1024);
    if (rss !== null && rss > Math.min(RECYCLE_MB, this.options.memoryMb * 0.6) + keptMb) {
      this.recycled++;
      void process.stop();
      // Its replacement starts now, while other work runs, rather than when the next job waits for it.
      if (!this.closed) this.spawn(process.lane).catch((error: unknown) => this.failQueued(process.lane, error));
    }
    this.pump(process.lane);
  }

  /** The deadline passed: drop a waiting job, or stop the process running it. */
  private expire(entry: QueuedJob): void {
    this.abort(entry, deadlineError());
  }

  /**
   * The deadline passed, or the request's signal aborted: a waiting job answers at once with `reason`; a running one's
   * process is stopped, and the job answers with `reason` once the process has exited (its lane is free again then).
   */
  private abort(entry: QueuedJob, reason: Error): void {
    if (entry.settled || entry.abortedWith) return;
    const process = entry.process;
    if (process) {
      this.stopped.timeout++;
      entry.abortedWith = reason;
      void process.stop(deadlineError());
      return;
    }
    this.queueOf(entry).remove(entry);
    this.settle(entry, reason);
  }

  private onExit(process: EngineProcess, code: number | null, signal: NodeJS.Signals | null): void {
    const index = this.processes.indexOf(process);
    if (index < 0) return;
    this.processes.splice(index, 1);
    process.retired = true;
    this.heavyTurn.release(process);
    const entry = process.current;
    process.current = undefined;
    if (entry && !entry.settled) {
      const { error, cause } = process.exitReason(signal, this.options.memoryMb);
      if (cause === "memory") this.stopped.memory++;
      if (cause === "crashed") {
        this.stopped.crashed++;
        console.error(`[engine] an engine process died during ${entry.job.kind} (${signal ?? `exit ${code}`})`);
      }
      this.settle(entry, entry.abortedWith ?? error);
    }
    this.pump(process.lane);
  }

  /**
   * Read the memory (and, for jobs with a budget, the processor time) of busy processes every 100 ms while any is busy;
   * kill one past the ceiling or its budget. This runs in the server, so a process whose event loop is stuck in pdf.js
   * is stopped all the same.
   */
  private watchMemory(): void {
    if (this.memoryTimer) return;
    this.memoryTimer = setInterval(() => {
      const busy = this.processes.filter((p) => p.busy && !p.retired);
      if (busy.length === 0) {
        clearInterval(this.memoryTimer);
        this.memoryTimer = undefined;
        return;
      }
      for (const process of busy) {
        const over = process.overLimit(this.options.memoryMb);
        if (!over) continue;
        this.stopped[over.cause]++;
        void process.stop(over.error);
      }
    }, MEMORY_POLL_MS);
    this.memoryTimer.unref();
  }

  /** Inspect processes that had nothing to do for a minute exit (OCR processes stay warm: Tesseract takes ~0.4 s). */
  private watchIdle(): void {
    if (this.idleTimer) return;
    this.idleTimer = setInterval(() => {
      const inspect = this.processes.filter((p) => p.lane === "inspect" && !p.retired);
      if (inspect.length === 0) {
        clearInterval(this.idleTimer);
        this.idleTimer = undefined;
        return;
      }
      const now = Date.now();
      for (const process of inspect)
        if (!process.busy && now - process.idleSince > INSPECT_IDLE_MS) void process.stop();
    }, INSPECT_IDLE_MS / 4);
    this.idleTimer.unref();
  }

  private failQueued(lane: Lane, error: unknown): void {
    // No process could start: fail the jobs nobody can serve rather than leaving them to their deadline.
    if (this.processes.some((p) => p.lane === lane && !p.retired) || this.spawning[lane] > 0) return;
    console.error(`[engine] ${error instanceof Error ? error.message : String(error)}`);
    const failure = new OcrError("engine_failed", "The OCR engine could not start", { cause: error });
    for (const entry of [...this.queues[lane], ...this.backgroundQueues[lane]]) this.settle(entry, failure);
    this.queues[lane].clear();
    this.backgroundQueues[lane].clear();
  }

  private settle(entry: QueuedJob, error: Error | null, value?: unknown): void {
    if (entry.settled) return;
    entry.settled = true;
    clearTimeout(entry.timer);
    entry.unlisten?.();
    if (error) entry.reject(error);
    else entry.resolve(value);
  }

  private engineScript(): string {
    const script = this.options.engineScript ?? defaultEngineScript();
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
      stamp = statSync(this.engineScript()).mtimeMs;
    } catch {
      return;
    }
    if (this.scriptStamp !== undefined && stamp !== this.scriptStamp) {
      for (const engineProcess of this.processes) if (!engineProcess.busy) void engineProcess.stop();
    }
    this.scriptStamp = stamp;
  }
}
