import type { Env } from "@/lib/env";
import type { OcrSettings } from "../model/settings";
import { OcrPool } from "./pool";

const POOL_KEY = Symbol.for("ocr-service.pool");
type PoolHolder = { [POOL_KEY]?: OcrPool };

/**
 * The Tesseract instance inside an engine process is replaced after this many engine jobs: its wasm heap only grows
 * (what one large page needed stays).
 */
const TESSERACT_WORKER_MAX_JOBS = 200;
/**
 * How long starting one engine process (and loading its Tesseract instance) may take before it counts as failed: well
 * above a start on a loaded machine, below a request's deadline.
 */
const ENGINE_START_TIMEOUT_MS = 30_000;

/**
 * The process's engine pool, built on first use from the configuration `env` and the engine's `settings` (kept on
 * globalThis so dev-server reloads and bundle copies share one). Built by lib/services.ts only, with the other
 * services, and passed down from there: nothing below an entry point reaches for it.
 */
export function processOcrPool(env: Env, settings: OcrSettings): OcrPool {
  const holder = globalThis as PoolHolder;
  holder[POOL_KEY] ??= new OcrPool({
    size: env.OCR_ENGINE_PROCESSES,
    inspectSize: settings.inspectProcesses,
    queueLimit: settings.queueLimit,
    maxJobsPerWorker: TESSERACT_WORKER_MAX_JOBS,
    createTimeoutMs: ENGINE_START_TIMEOUT_MS,
    memoryMb: env.OCR_ENGINE_MEMORY_MB,
    engines: env.OCR_ENGINES,
    keepTesseract: settings.keepTesseractForPaddle,
    tesseract: env.OCR_TESSERACT,
    ...(env.OCR_TESSERACT_LIBRARY && { tesseractLibrary: env.OCR_TESSERACT_LIBRARY }),
    ...(env.OCR_MODEL_DIR && { modelDir: env.OCR_MODEL_DIR }),
  });
  return holder[POOL_KEY];
}
