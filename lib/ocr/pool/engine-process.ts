import { fork, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { deadlineError, OcrError } from "../model/ocr-error";
import {
  ENGINE_CONFIG_VARIABLE,
  fromEngineSchema,
  type EngineJob,
  type EngineProcessConfig,
  type FromEngine,
  type TesseractInUse,
  type ToEngine,
} from "../model/protocol";
import type { TurnTaker } from "./heavy-turn";

/** The engine processes' two lanes: `ocr` (Tesseract, PaddleOCR) and `inspect` (PDF structure and text layers). */
export type Lane = "ocr" | "inspect";

/** A job from `run()` until it is answered (it and the process running it point at each other, so both live here). */
export interface QueuedJob {
  id: number;
  lane: Lane;
  background: boolean;
  job: EngineJob;
  deadline: number;
  session: string;
  tenant: string;
  cpuBudgetMs?: number;
  /** Wall time the job may take past which it is stopped as over its budget all the same (`wallBudgetMs`). */
  wallBudgetMs?: number;
  overBudget?: string;
  /** The processor time (ms) of the process's main thread when the job started on it. */
  cpuAtStart?: number;
  estimateMs: number;
  /** The job's size in the duration model (estimates.ts `sizeOf`). */
  size: number;
  resolve: (value: unknown) => void;
  reject: (error: Error) => void;
  timer: NodeJS.Timeout;
  /** Stops listening to the request's signal (`RunOptions.signal`) once the job is answered. */
  unlisten?: () => void;
  /** Why the request's signal aborted while the job ran: its answer once its process has exited. */
  abortedWith?: Error;
  settled: boolean;
  startedAt?: number;
  /** The process running it. */
  process?: EngineProcess;
}

/** Answer a job once: its result, or `error`; it stops listening to its deadline and its request's signal. */
export function settleJob(entry: QueuedJob, error: Error | null, value?: unknown): void {
  if (entry.settled) return;
  entry.settled = true;
  clearTimeout(entry.timer);
  entry.unlisten?.();
  if (error) entry.reject(error);
  else entry.resolve(value);
}

/** Why a request's signal aborted: its reason when it is an error (the API's own), else the engine's `deadline`. */
export function abortReason(signal: AbortSignal): Error {
  return signal.reason instanceof Error && signal.reason.name !== "AbortError" && signal.reason.name !== "TimeoutError"
    ? signal.reason
    : deadlineError();
}

/**
 * One engine process, seen from the server: a child started from the engine bundle (lib/ocr/engine/main.ts), its
 * messages, its memory and processor time read from /proc, how it is stopped and why it exited. What it runs and
 * when is the pool's business (pool.ts).
 */

/** A SIGKILL the pool did not send counts as out of memory when the process's last reading was this share of the ceiling. */
const OOM_KILL_SHARE = 0.8;
/** How long a process stopped while idle may take to exit on its own before it is killed. */
const STOP_GRACE_MS = 2_000;
/** Characters of stderr kept per process (the end of it tells a V8 out-of-memory from a crash). */
const STDERR_TAIL_CHARS = 4096;

/** A job's answer from its process. */
export type JobAnswer = Extract<FromEngine, { type: "result" }>;

/** What the pool hears from a process. */
export interface EngineProcessEvents {
  /** It loaded (and warmed) its recognizers and takes jobs. */
  ready(process: EngineProcess): void;
  /** It asks for (`acquire`) or gives back the turn for a memory-heavy step (heavy-turn.ts). */
  heavy(process: EngineProcess, acquire: boolean): void;
  answer(process: EngineProcess, message: JobAnswer): void;
  /** It is gone (exited, killed, or could not start). */
  exit(process: EngineProcess, code: number | null, signal: NodeJS.Signals | null): void;
}

export interface EngineProcessOptions {
  id: number;
  lane: Lane;
  /** The engine bundle to start. */
  script: string;
  config: EngineProcessConfig;
  /** Resident-memory ceiling, MB; also the process's JS heap limit. */
  memoryMb: number;
  /** How long starting may take before the process is killed. */
  createTimeoutMs: number;
}

export class EngineProcess implements TurnTaker {
  readonly id: number;
  readonly lane: Lane;
  readonly child: ChildProcess;
  /** Resolves when the process is ready; rejects (`engine_failed`) when it could not start. */
  readonly started: Promise<void>;
  ready = false;
  busy = false;
  retired = false;
  /** Jobs it has answered. */
  jobs = 0;
  /** Documents held in the process (parsed, between pages), oldest first. */
  docs: string[] = [];
  /** Bytes of each open document (a large one raises the memory the process may keep between jobs). */
  docBytes = new Map<string, number>();
  current?: QueuedJob;
  /** Why we killed it (the answer of its job), if we did. */
  killedFor?: OcrError;
  stderrTail = "";
  /** Its last resident-memory reading, MB. */
  rssMb = 0;
  /** Epoch ms of its last job's end (or of its start). */
  idleSince = Date.now();
  /** The Tesseract it loaded, as its `ready` message said (OCR processes). */
  tesseract?: TesseractInUse;

  constructor(options: EngineProcessOptions, events: EngineProcessEvents) {
    this.id = options.id;
    this.lane = options.lane;
    this.child = fork(options.script, [], {
      // The JS heap gets the same ceiling (typed arrays and wasm memory are outside it: the RSS watch covers them).
      execArgv: [`--max-old-space-size=${options.memoryMb}`],
      serialization: "advanced",
      stdio: ["ignore", "inherit", "pipe", "ipc"],
      env: engineEnvironment(options.config),
    });
    const child = this.child;
    child.stderr?.setEncoding("utf8");
    child.stderr?.on("data", (chunk: string) => {
      this.stderrTail = (this.stderrTail + chunk).slice(-STDERR_TAIL_CHARS);
      process.stderr.write(chunk);
    });
    this.started = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        void this.stop(new OcrError("engine_failed", "Starting an OCR engine process timed out"));
        reject(new OcrError("engine_failed", "The OCR engine could not start (timed out)"));
      }, options.createTimeoutMs);
      child.on("message", (raw: unknown) => {
        const parsed = fromEngineSchema.safeParse(raw);
        if (!parsed.success) return;
        const message = parsed.data;
        if (message.type === "heavy") {
          events.heavy(this, message.acquire);
        } else if (message.type === "ready") {
          clearTimeout(timer);
          this.ready = true;
          if (message.tesseract) this.tesseract = message.tesseract;
          resolve();
          events.ready(this);
        } else {
          events.answer(this, message);
        }
      });
      child.on("error", (error) => {
        clearTimeout(timer);
        reject(new OcrError("engine_failed", "The OCR engine could not start", { cause: error }));
        events.exit(this, null, null);
      });
      child.on("exit", (code, signal) => {
        clearTimeout(timer);
        if (!this.ready)
          reject(new OcrError("engine_failed", `The OCR engine process exited at start (${signal ?? code})`));
        events.exit(this, code, signal);
      });
    });
  }

  get connected(): boolean {
    return this.child.connected;
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** The turn for a memory-heavy step is this process's (heavy-turn.ts). */
  grant(): void {
    this.child.send({ type: "grant" } satisfies ToEngine);
  }

  /** Post a message; a process that cannot take it is stopped (its job, if any, answers `engine_failed`). */
  send(message: ToEngine): void {
    const unreachable = (cause: unknown) =>
      void this.stop(new OcrError("engine_failed", "The OCR engine process could not be reached", { cause }));
    if (!this.child.connected) {
      unreachable(new Error("disconnected"));
      return;
    }
    try {
      this.child.send(message, (error) => {
        if (error) unreachable(error);
      });
    } catch (error) {
      unreachable(error);
    }
  }

  /** Kill the process now (idle and without `reason`: let it exit on its own). Its job, if any, is answered with `reason`. */
  async stop(reason?: OcrError): Promise<void> {
    if (this.retired) return;
    this.retired = true;
    this.killedFor = reason;
    const child = this.child;
    const exited = new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) resolve();
      else child.once("exit", () => resolve());
    });
    if (this.busy || reason) child.kill("SIGKILL");
    else child.disconnect?.(); // idle: let it exit on its own (it exits when the channel closes)
    const timer = setTimeout(() => child.kill("SIGKILL"), STOP_GRACE_MS);
    await exited;
    clearTimeout(timer);
  }

  /** Read its resident memory (MB), keeping the last reading when it cannot be read. */
  readMemory(): number | null {
    const rss = readRssMb(this.child.pid);
    if (rss !== null) this.rssMb = rss;
    return rss;
  }

  /**
   * Past its memory ceiling, or its job past its processor-time budget: the answer its job gets when it is stopped for
   * that. Null when neither, or when its memory cannot be read.
   */
  overLimit(memoryMb: number): { error: OcrError; cause: "memory" | "work" } | null {
    const rss = this.readMemory();
    if (rss === null) return null;
    if (rss > memoryMb) return { error: memoryError(memoryMb), cause: "memory" };
    const entry = this.current;
    if (
      entry?.cpuBudgetMs !== undefined &&
      (workMs(entry, this) > entry.cpuBudgetMs ||
        Date.now() - (entry.startedAt ?? Date.now()) > (entry.wallBudgetMs ?? wallBudgetMs(entry.cpuBudgetMs)))
    ) {
      const seconds = Math.round(entry.cpuBudgetMs / 1000);
      const message = entry.overBudget ?? `The job needs more than ${seconds} s of processing, the limit`;
      return { error: new OcrError("too_complex", message), cause: "work" };
    }
    return null;
  }

  /**
   * Its main thread's processor time so far (ms), where the job's work runs: not its helper threads (the garbage
   * collector's, Skia's, libuv's), whose time grows with the machine's load more than with the document. Null where
   * /proc cannot be read.
   */
  cpuMs(): number | null {
    const pid = this.child.pid;
    return pid === undefined ? null : readCpuMs(`/proc/${pid}/task/${pid}/stat`);
  }

  /**
   * Why it exited, as the answer of the job it was running: what we killed it for; else out of memory (V8 says so
   * when the JS heap ran out; a SIGKILL we did not send is the kernel's OOM killer only when the process was near its
   * ceiling) or a crash — someone else killed it (an operator, a supervisor), which a client retries, not
   * `out_of_memory`, which tells it the page is too large.
   */
  exitReason(
    signal: NodeJS.Signals | null,
    memoryMb: number,
  ): { error: OcrError; cause: "ours" | "memory" | "crashed" } {
    if (this.killedFor) return { error: this.killedFor, cause: "ours" };
    const nearCeiling = this.rssMb >= memoryMb * OOM_KILL_SHARE;
    const outOfMemory =
      /heap out of memory|Allocation failed/i.test(this.stderrTail) || (signal === "SIGKILL" && nearCeiling);
    if (outOfMemory) return { error: memoryError(memoryMb), cause: "memory" };
    return { error: new OcrError("engine_crashed", "The OCR engine process stopped unexpectedly"), cause: "crashed" };
  }
}

/** `build/engine/ocr-worker.mjs` under the app's directory (also in the standalone output, see next.config.ts). */
export function defaultEngineScript(): string {
  return path.join(process.cwd(), "build", "engine", "ocr-worker.mjs");
}

/** A page that needed more than the memory ceiling. */
function memoryError(memoryMb: number): OcrError {
  return new OcrError(
    "out_of_memory",
    `Reading this document needs more than ${memoryMb} MB of memory for one page, the limit per page; send smaller pages or fewer megapixels`,
  );
}

/**
 * The wall time a job with a processor budget of `cpuBudgetMs` may take: six times its budget, and at least a
 * minute — a loaded machine gives a process a sixth of a core and more; a process that does not run at all (stopped,
 * or waiting on something that never comes) is stopped here, as its processor time does not grow.
 */
export function wallBudgetMs(cpuBudgetMs: number): number {
  return Math.max(60_000, 6 * cpuBudgetMs);
}

/** The processor time a running job has used; its wall time where processor time cannot be read. */
function workMs(entry: QueuedJob, process: EngineProcess): number {
  const cpu = entry.cpuAtStart === undefined ? null : process.cpuMs();
  return cpu === null ? Date.now() - (entry.startedAt ?? Date.now()) : cpu - entry.cpuAtStart!;
}

/**
 * The environment of an engine process: its configuration and what Node and the C library need — none of the
 * server's secrets. `MALLOC_MMAP_THRESHOLD_` makes glibc return freed page buffers to the system (without it, freed
 * pixel memory stays in per-thread arenas); it only works when set before the process starts, which is the case here.
 * `OMP_THREAD_LIMIT=1`: a native libtesseract built with OpenMP (Debian's) would otherwise start a thread per core in
 * each of the processes, which already run one per core.
 */
function engineEnvironment(config: EngineProcessConfig): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    [ENGINE_CONFIG_VARIABLE]: JSON.stringify(config),
    MALLOC_MMAP_THRESHOLD_: process.env.MALLOC_MMAP_THRESHOLD_ ?? "1048576",
    OMP_THREAD_LIMIT: process.env.OMP_THREAD_LIMIT ?? "1",
    NODE_ENV: process.env.NODE_ENV,
  };
  for (const name of ["PATH", "HOME", "TMPDIR", "TMP", "TEMP", "LANG", "TZ", "SYSTEMROOT"]) {
    if (process.env[name] !== undefined) env[name] = process.env[name];
  }
  return env;
}

/** Linux reports process times in clock ticks of 1/100 s (USER_HZ, the same on every architecture it supports). */
const CLOCK_TICK_MS = 10;

/** Processor time (user + system) in ms from a /proc `stat` file (Linux); null elsewhere or when it is gone. */
function readCpuMs(statFile: string): number | null {
  try {
    const stat = readFileSync(statFile, "latin1");
    // After the command name (in parentheses, which may hold anything): state is field 3, utime 14, stime 15.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const ticks = Number(fields[11]) + Number(fields[12]);
    return Number.isFinite(ticks) ? ticks * CLOCK_TICK_MS : null;
  } catch {
    return null;
  }
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
