import { deadlineError, fromOcrErrorData, OcrError } from "../model/ocr-error";
import {
  ENGINE_DEADLINE_SLACK_MS,
  type EngineJob,
  type JobKind,
  type JobResults,
  type TesseractInUse,
} from "../model/protocol";
import { HeldPlaces, judgeAdmission, judgeFollowing, type Admission, type JobAdmission } from "./admission";
import {
  abortReason,
  EngineProcess,
  settleJob,
  type EngineProcessEvents,
  type JobAnswer,
  type Lane,
  type QueuedJob,
} from "./engine-process";
import { DurationModel, expectedWaitMs, sizeOf } from "./estimates";
import { HeavyTurn } from "./heavy-turn";
import {
  dropDocument,
  holdings,
  jobForProcess,
  overflowTenant,
  pickProcess,
  processList,
  runningJobs,
} from "./lane-dispatch";
import {
  processConfig,
  resolvePoolOptions,
  type PoolOptions,
  type PoolStats,
  type ResolvedPoolOptions,
  type RunOptions,
} from "./pool-options";
import { engineScript, keepsTooMuchMemory, ProcessWatch, RebuildWatch } from "./process-watch";
import { FairQueue } from "./queue";

export type { Admission, JobAdmission } from "./admission";
export type { Lane } from "./engine-process";
export type { PoolOptions, PoolStats, RunOptions } from "./pool-options";

/**
 * The engine's processes, seen from the server: the queue and the dispatch of jobs to them. Every byte of a document
 * is read in a child process (lib/ocr/engine/jobs.ts): the server's event loop only routes messages, a job past its
 * deadline or its memory ceiling is stopped by killing its process — which returns all of its memory to the system —
 * and a process that dies is replaced while its job is answered with an engine error (lib/ocr/model/ocr-error.ts).
 *
 * Two lanes: `ocr` processes (Tesseract, one per core by default) and `inspect` processes that only open PDFs and
 * read their text layers, so that opening a document never waits behind someone else's OCR.
 *
 * The parts: the options and statistics (pool-options.ts), the duration model and the expected wait (estimates.ts),
 * admission (admission.ts), one engine process (engine-process.ts), the watch over processes' memory, idleness and
 * bundle (process-watch.ts), which job goes to which process (lane-dispatch.ts), the one-at-a-time turn for the heavy
 * recognizer (heavy-turn.ts), the round-robin queue (queue.ts). Waiting jobs are served round-robin by tenant (the
 * account), then by request. A job may carry a budget of processor time, watched from outside its process like the
 * memory ceiling: past it, the process is killed and the job answered `too_complex` (a PDF whose pages draw without
 * end cannot hold an inspect process until its deadline).
 */

const LANES = ["ocr", "inspect"] as const;

export class OcrPool {
  private readonly options: ResolvedPoolOptions;
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
  private readonly watch: ProcessWatch;
  private readonly rebuild = new RebuildWatch();

  constructor(options: PoolOptions) {
    this.options = resolvePoolOptions(options);
    this.watch = new ProcessWatch(this.processes, this.options.memoryMb, (cause) => this.stopped[cause]++);
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
        ...(options.wallBudgetMs !== undefined && { wallBudgetMs: options.wallBudgetMs }),
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
        for (const entry of queue.takeSession(session)) settleJob(entry, error);
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
    dropDocument(this.processes, docId);
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
    const running = runningJobs(this.processes, lane, now);
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
      processes: processList(this.processes),
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
    this.watch.stopIdleWatch();
    for (const lane of LANES) {
      for (const entry of [...this.queues[lane], ...this.backgroundQueues[lane]]) {
        settleJob(entry, new OcrError("shutting_down", "The OCR engine stopped"));
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
    this.rebuild.recycleIfRebuilt(() => engineScript(this.options.engineScript), this.processes);
    const requests = this.queues[lane];
    const background = this.backgroundQueues[lane];
    const size = this.laneSize(lane);
    const members = () => this.processes.filter((p) => p.lane === lane && !p.retired);
    while (!requests.isEmpty || !background.isEmpty) {
      const idle = members().filter((p) => p.ready && !p.busy);
      if (idle.length === 0) break;
      const held = holdings(this.processes, lane);
      const busy = members().filter((p) => p.busy).length;
      // At the lane's size, only a tenant with nothing while another holds more than one takes a process more.
      if (busy >= size && overflowTenant(lane, held, requests.waitingTenants()) === undefined) break;
      const entry = (requests.isEmpty ? background : requests).shift((tenant) => held.get(tenant) ?? 0)!;
      this.dispatch(pickProcess(idle, entry), entry);
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
      overflowTenant(lane, holdings(this.processes, lane), requests.waitingTenants()) !== undefined
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

  private dispatch(process: EngineProcess, entry: QueuedJob): void {
    process.busy = true;
    process.current = entry;
    entry.process = process;
    entry.startedAt = Date.now();
    const cpu = process.cpuMs();
    if (cpu !== null) entry.cpuAtStart = cpu;
    const job = jobForProcess(process, entry.job);
    // The process is stopped from here at the deadline; its own deadline, a little later, is only a backstop.
    process.send({ type: "job", id: entry.id, deadline: entry.deadline + ENGINE_DEADLINE_SLACK_MS, job });
    this.watch.watchMemory();
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
    const process = new EngineProcess(
      {
        id: this.nextProcessId++,
        lane,
        script: engineScript(this.options.engineScript),
        config: processConfig(this.options, lane),
        memoryMb: this.options.memoryMb,
        createTimeoutMs: this.options.createTimeoutMs,
      },
      this.events,
    );
    this.processes.push(process);
    if (lane === "inspect") this.watch.watchIdle();
    return process.started;
  }

  private onAnswer(process: EngineProcess, message: JobAnswer): void {
    const entry = process.current;
    if (!entry || entry.id !== message.id) return;
    this.finishJob(process, entry);
    if (message.ok) {
      if (entry.startedAt) this.durations.learn(entry.job.kind, Date.now() - entry.startedAt, entry.size);
      settleJob(entry, null, message.value);
    } else {
      settleJob(entry, fromOcrErrorData(message.error));
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
    if (keepsTooMuchMemory(process, this.options.memoryMb)) {
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
    settleJob(entry, reason);
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
      settleJob(entry, entry.abortedWith ?? error);
    }
    this.pump(process.lane);
  }

  private failQueued(lane: Lane, error: unknown): void {
    // No process could start: fail the jobs nobody can serve rather than leaving them to their deadline.
    if (this.processes.some((p) => p.lane === lane && !p.retired) || this.spawning[lane] > 0) return;
    console.error(`[engine] ${error instanceof Error ? error.message : String(error)}`);
    const failure = new OcrError("engine_failed", "The OCR engine could not start", { cause: error });
    for (const entry of [...this.queues[lane], ...this.backgroundQueues[lane]]) settleJob(entry, failure);
    this.queues[lane].clear();
    this.backgroundQueues[lane].clear();
  }
}
