import { checkStoreMarker, startEventLoopMonitor } from "@/lib/health";
import { ensureJobRunner } from "@/lib/jobs";
import { configuredAllowList } from "@/lib/input";
import { recognizerInUse } from "@/lib/ocr";
import type { TesseractInUse } from "@/lib/ocr/model";
import { getEnv, ignoredVariablesNotice } from "@/lib/env";
import { services } from "@/lib/services";
import { assertStoreConfigured, getStore, isRedisConnectionError } from "@/lib/store";

/**
 * What a Node.js server instance does once at start, before it serves requests (called by instrumentation.ts):
 *
 * - Configuration is checked up front (with URL_ALLOW_HOSTS), so a production deployment without Redis (or with a bad variable) exits at
 *   start with a clear message instead of failing on every request, or silently losing keys.
 * - One OCR engine process (and the PDF inspect process) starts warming in the background: the first request then
 *   skips the ~0.5 s of process start, Tesseract creation and language-data loading. A failure here is logged,
 *   never thrown; requests start processes on demand anyway.
 * - The event-loop delay monitor starts (reported by `/api/health`).
 * - The job runner starts (`JOBS_RUNNER=background`): this instance reads asynchronous jobs' pages whenever an engine
 *   process is free (lib/jobs/workers.ts).
 * - The store's marker is read, or written on a Redis the service has not used yet, so that `/api/health` can tell a
 *   Redis that comes back empty from a new one (lib/health/health.ts, `checkStoreMarker`).
 *
 * Node.js only (process.exit, child processes, worker threads): instrumentation.ts imports this module only when
 * `NEXT_RUNTIME` is "nodejs", so the Edge compile of instrumentation.ts never contains it.
 */
export function startNodeServer(): void {
  try {
    assertStoreConfigured();
    configuredAllowList(getEnv());
  } catch (error) {
    // Exit rather than stay up answering 500 on every path: a self-hosted `npm start` stops here with the message; on
    // Vercel the function fails to start and its log shows the same line.
    console.error(`[startup] refusing to start: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  }

  const ignored = ignoredVariablesNotice();
  if (ignored) console.warn(`[startup] ${ignored}`);

  // The store's marker is read (written on a new Redis) now, so this instance can tell if Redis later comes back empty.
  // Redis not reachable at start is said once by the store (lib/store/redis-link.ts); health checks read the marker again.
  // (The store is taken inside the promise: one that cannot be built is logged, as before, not thrown from here.)
  Promise.resolve()
    .then(() => checkStoreMarker(getStore()))
    .catch((error: unknown) => {
      if (!isRedisConnectionError(error)) {
        console.error(
          "[startup] the store marker could not be checked (health checks retry):",
          error instanceof Error ? error.message : error,
        );
      }
    });

  startEventLoopMonitor();
  const given = services();
  const { env, pool } = given;
  ensureJobRunner(given);

  const started = performance.now();
  pool.warm().then(
    () =>
      console.info(
        `[startup] OCR engine warm in ${Math.round(performance.now() - started)} ms; ${describeTesseract(pool.stats().tesseract)}; ${describeRecognizer(recognizerInUse(env.OCR_ENGINES, env.OCR_MODEL_DIR))}`,
      ),
    (error: unknown) =>
      console.error(
        "[startup] warming the OCR engine failed (requests will retry):",
        error instanceof Error ? error.message : error,
      ),
  );
}

/** The start log's words for PaddleOCR's recognizer (OCR_MODEL_DIR, else the npm fallback). */
export function describeRecognizer(recognizer: { name: string; note?: string } | null): string {
  if (!recognizer) return "PaddleOCR off (OCR_ENGINES)";
  return `PaddleOCR recognizer: ${recognizer.name}${recognizer.note ? ` — ${recognizer.note}` : ""}`;
}

/** The start log's words for the Tesseract the OCR processes loaded (OCR_TESSERACT). */
export function describeTesseract(tesseract: TesseractInUse | null): string {
  if (!tesseract) return "Tesseract not loaded yet";
  if (tesseract.kind === "native") return `Tesseract: native libtesseract ${tesseract.version ?? ""}`.trimEnd();
  return `Tesseract: tesseract.js (WebAssembly)${tesseract.note ? ` — ${tesseract.note}` : ""}`;
}
