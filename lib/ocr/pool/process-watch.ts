/**
 * The pool's watch over its engine processes from outside them (pool.ts): the memory and processor-time poll that
 * stops a busy process past its ceiling or its job's budget, the idle timer that lets an unused inspect process exit,
 * the memory check after a job that decides a process is replaced, and the engine bundle's path with the development
 * check that replaces idle processes when the bundle is rebuilt. None of it chooses which job runs where: that is
 * pool.ts's dispatch (with lane-dispatch.ts).
 */
import { existsSync, statSync } from "node:fs";
import { OcrError } from "../model/ocr-error";
import { defaultEngineScript, type EngineProcess } from "./engine-process";

/** How often busy processes' memory is read. */
const MEMORY_POLL_MS = 100;
/**
 * A process whose resident memory stays above this (MB) after a job is replaced: Tesseract's wasm heap and glibc
 * keep what a large page needed, and only a new process gives it back (docs/decisions.md#engine-process-memory).
 */
const RECYCLE_MB = 320;
/** An inspect process idle this long exits, its memory back to the system (docs/decisions.md#engine-process-memory). */
const INSPECT_IDLE_MS = 60_000;

type StopCause = NonNullable<ReturnType<EngineProcess["overLimit"]>>["cause"];

/** The pool's timers over `processes` (the pool's own array: processes join and leave it while they run). */
export class ProcessWatch {
  private memoryTimer?: NodeJS.Timeout;
  private idleTimer?: NodeJS.Timeout;

  constructor(
    private readonly processes: readonly EngineProcess[],
    private readonly memoryMb: number,
    /** A process was stopped past its memory ceiling or its job's processor budget. */
    private readonly onStop: (cause: StopCause) => void,
  ) {}

  /**
   * Read the memory (and, for jobs with a budget, the processor time) of busy processes every 100 ms while any is busy;
   * kill one past the ceiling or its budget. This runs in the server, so a process whose event loop is stuck in pdf.js
   * is stopped all the same.
   */
  watchMemory(): void {
    if (this.memoryTimer) return;
    this.memoryTimer = setInterval(() => {
      const busy = this.processes.filter((p) => p.busy && !p.retired);
      if (busy.length === 0) {
        clearInterval(this.memoryTimer);
        this.memoryTimer = undefined;
        return;
      }
      for (const process of busy) {
        const over = process.overLimit(this.memoryMb);
        if (!over) continue;
        this.onStop(over.cause);
        void process.stop(over.error);
      }
    }, MEMORY_POLL_MS);
    this.memoryTimer.unref();
  }

  /** Inspect processes that had nothing to do for a minute exit (OCR processes stay warm: Tesseract takes ~0.4 s). */
  watchIdle(): void {
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

  stopIdleWatch(): void {
    clearInterval(this.idleTimer);
  }
}

/** After a job: whether `process` kept too much memory and is replaced (glibc and wasm rarely give memory back). */
export function keepsTooMuchMemory(process: EngineProcess, memoryMb: number): boolean {
  const rss = process.readMemory();
  // An open document is memory the process keeps on purpose (a job's large PDF, read page after page): its bytes,
  // and a quarter more for what pdf.js builds from them.
  let keptMb = 0;
  for (const bytes of process.docBytes.values()) keptMb += (1.25 * bytes) / (1024 * 1024);
  return rss !== null && rss > Math.min(RECYCLE_MB, memoryMb * 0.6) + keptMb;
}

/** The engine bundle processes run (`PoolOptions.engineScript`, or the default), or `engine_failed` if not built. */
export function engineScript(configured: string | undefined): string {
  const script = configured ?? defaultEngineScript();
  if (!existsSync(script)) {
    throw new OcrError(
      "engine_failed",
      `The OCR engine is not built (${script} is missing): run \`npm run build:engine\` (npm run dev and npm run build do it)`,
    );
  }
  return script;
}

/** In development the engine bundle is rebuilt on change: idle processes running the old one are replaced. */
export class RebuildWatch {
  private scriptStamp?: number;

  recycleIfRebuilt(script: () => string, processes: readonly EngineProcess[]): void {
    if (process.env.NODE_ENV !== "development") return;
    let stamp: number;
    try {
      stamp = statSync(script()).mtimeMs;
    } catch {
      return;
    }
    if (this.scriptStamp !== undefined && stamp !== this.scriptStamp) {
      for (const engineProcess of processes) if (!engineProcess.busy) void engineProcess.stop();
    }
    this.scriptStamp = stamp;
  }
}
