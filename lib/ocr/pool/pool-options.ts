/**
 * What the engine pool (pool.ts) is configured with and what it reports: its options (`PoolOptions`), the options of
 * one job (`RunOptions`), its statistics (`PoolStats`), and the configuration an engine process of a lane starts with,
 * derived from the pool's options. Kept apart from the pool's queueing and dispatch so that reading pool.ts starts at
 * what it does; pool.ts re-exports the types.
 */
import type { OcrEngine } from "../model/document";
import type { EngineProcessConfig, TesseractInUse } from "../model/protocol";
import type { JobAdmission } from "./admission";
import type { Lane } from "./engine-process";

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
  /** PaddleOCR's first reading stands alone at this confidence or more (default: second-reading.ts's). */
  paddleFirstSure?: number;
  /** Keep Tesseract's thread while PaddleOCR reads (`ocrSettings().keepTesseractForPaddle`, was `OCR_KEEP_TESSERACT_FOR_PADDLE`). Default false. */
  keepTesseract?: boolean;
  /** Which Tesseract the OCR processes read with (`OCR_TESSERACT`). Default `auto`: libtesseract where it loads. */
  tesseract?: EngineProcessConfig["tesseract"];
  /** The libtesseract to load (`OCR_TESSERACT_LIBRARY`). */
  tesseractLibrary?: string;
  /** PaddleOCR's recognizer directory (`OCR_MODEL_DIR`); unset: the npm PP-OCRv4 fallback. */
  modelDir?: string;
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
   * Processor time the job may use, ms (its process's main thread's, read from /proc; wall time where that cannot be
   * read). Past it — or past `wallBudgetMs` of wall time — the process is stopped and the job answered `too_complex`
   * with `overBudget` as its message.
   */
  cpuBudgetMs?: number;
  /** With `cpuBudgetMs`: the wall time the job may take (default engine-process.ts `wallBudgetMs`, six times it). */
  wallBudgetMs?: number;
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

/** `PoolOptions` with its defaults filled in. */
export type ResolvedPoolOptions = Required<
  Omit<
    PoolOptions,
    | "engineScript"
    | "secondReadingBelow"
    | "paddleFirstSure"
    | "keepTesseract"
    | "tesseract"
    | "tesseractLibrary"
    | "modelDir"
  >
> &
  Pick<
    PoolOptions,
    | "engineScript"
    | "secondReadingBelow"
    | "paddleFirstSure"
    | "keepTesseract"
    | "tesseract"
    | "tesseractLibrary"
    | "modelDir"
  >;

export function resolvePoolOptions(options: PoolOptions): ResolvedPoolOptions {
  return { inspectSize: 2, memoryMb: 1024, warmLanguages: ["eng"], engines: ["tesseract"], ...options };
}

/** The configuration an engine process of `lane` starts with. */
export function processConfig(options: ResolvedPoolOptions, lane: Lane): EngineProcessConfig {
  return {
    maxJobsPerWorker: options.maxJobsPerWorker,
    createTimeoutMs: options.createTimeoutMs,
    engines: options.engines,
    ...(options.secondReadingBelow !== undefined && { secondReadingBelow: options.secondReadingBelow }),
    ...(options.paddleFirstSure !== undefined && { paddleFirstSure: options.paddleFirstSure }),
    ...(options.keepTesseract && { keepTesseract: true }),
    tesseract: options.tesseract ?? "auto",
    ...(options.tesseractLibrary && { tesseractLibrary: options.tesseractLibrary }),
    ...(options.modelDir && { modelDir: options.modelDir }),
    ...(lane === "ocr" && { warmLanguages: options.warmLanguages }),
  };
}
