import { getEnv } from "@/lib/env";
import { installedOverrides } from "@/lib/settings/installed";
import { ocrSettings, type OcrSettings } from "../model/settings";
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
 * The process-wide engine pool (kept on globalThis so dev-server reloads and bundle copies share one), taken by the
 * entry points and passed down: the engine client (lib/ocr/documents.ts) never defaults to it.
 */
export function getOcrPool(): OcrPool {
  const holder = globalThis as PoolHolder;
  if (!holder[POOL_KEY]) {
    const env = getEnv();
    // A process-wide singleton: the process's settings (lib/settings/installed.ts), as `getEnv()`.
    const settings = ocrSettings(installedOverrides<OcrSettings>("ocr"));
    holder[POOL_KEY] = new OcrPool({
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
  }
  return holder[POOL_KEY];
}
