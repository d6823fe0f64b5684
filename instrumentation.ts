/**
 * Next.js calls `register()` once when a server instance starts, before it serves requests (see
 * node_modules/next/dist/docs/01-app/03-api-reference/03-file-conventions/instrumentation.md).
 *
 * - Configuration is checked up front, so a production deployment without Redis (or with a bad variable) exits at
 *   start with a clear message instead of failing on every request, or silently losing keys.
 * - One OCR engine process (and the PDF inspect process) starts warming in the background: the first request then
 *   skips the ~0.5 s of process start, Tesseract creation and language-data loading. A failure here is logged,
 *   never thrown; requests start processes on demand anyway.
 * - The event-loop delay monitor starts (reported by `/api/health`).
 */
export async function register(): Promise<void> {
  // Node.js runtime only (the engine needs worker threads and wasm files); nothing to do while `next build` runs.
  if (process.env.NEXT_RUNTIME !== "nodejs" || process.env.NEXT_PHASE === "phase-production-build") return;

  const { assertStoreConfigured } = await import("@/lib/store");
  try {
    assertStoreConfigured();
  } catch (error) {
    // Exit rather than stay up answering 500 on every path: a self-hosted `npm start` stops here with the message; on
    // Vercel the function fails to start and its log shows the same line.
    console.error(`[startup] refusing to start: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  }

  const { startEventLoopMonitor } = await import("@/lib/event-loop");
  startEventLoopMonitor();

  const { getOcrPool } = await import("@/lib/ocr");
  const started = performance.now();
  getOcrPool()
    .warm()
    .then(
      () => console.info(`[startup] OCR engine warm in ${Math.round(performance.now() - started)} ms`),
      (error: unknown) =>
        console.error("[startup] warming the OCR engine failed (requests will retry):", error instanceof Error ? error.message : error),
    );
}
