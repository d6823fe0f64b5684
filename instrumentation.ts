/**
 * Next.js calls `register()` once when a server instance starts, before it serves requests (see
 * node_modules/next/dist/docs/01-app/03-api-reference/03-file-conventions/instrumentation.md). The startup itself —
 * configuration check (production without Redis exits here), OCR warm-up, event-loop monitor — is lib/startup.ts.
 *
 * Next.js compiles this file for the Edge runtime as well. `process.env.NEXT_RUNTIME` is inlined in each compile, so the
 * import below exists only in the Node.js one: with Node-only code here (process.exit), the development server printed
 * a 13-line "Node.js API … not supported in the Edge Runtime" warning before every request (issue 20).
 */
export async function register(): Promise<void> {
  // Nothing to do while `next build` runs.
  if (process.env.NEXT_RUNTIME === "nodejs" && process.env.NEXT_PHASE !== "phase-production-build") {
    const { startNodeServer } = await import("@/lib/startup");
    startNodeServer();
  }
}
