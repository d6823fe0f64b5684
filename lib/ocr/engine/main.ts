/**
 * The entry of an engine process: a child of the server, started by lib/ocr/pool/pool.ts from the bundle that
 * scripts/build-engine.mjs makes of this file. It serves one job at a time over the IPC channel and exits when the
 * channel closes (the server stopped or died). Nothing here is trusted by the server beyond the message envelope.
 */
import { Worker } from "node:worker_threads";
import { describeError } from "@/lib/error-log";
import { isEngineFault, isOcrError, toOcrErrorData } from "../model/ocr-error";
import { notePdfWarning } from "./pdf";
import { Engine } from "./jobs";
import {
  ENGINE_CONFIG_VARIABLE,
  engineProcessConfigSchema,
  toEngineEnvelopeSchema,
  type EngineJob,
  type FromEngine,
  type ToEngine,
} from "../model/protocol";

if (!process.send) {
  console.error("The OCR engine process must be started by the server (it talks over an IPC channel).");
  process.exit(2);
}

// pdf.js warns through console.warn; those lines are data for the reader (removed oversized images), not log noise.
const warn = console.warn.bind(console);
console.warn = (...args: unknown[]) => {
  const first = args[0];
  if (typeof first === "string" && first.startsWith("Warning: ")) notePdfWarning(first);
  else warn(...args);
};

const config = engineProcessConfigSchema.parse(JSON.parse(process.env[ENGINE_CONFIG_VARIABLE] ?? "null"));
let work = Promise.resolve();

function send(message: FromEngine): void {
  process.send?.(message);
}

/**
 * The pool lets one process at a time run a memory-heavy step (the second recognizer): two at once would put both
 * processes at their peak together. Asking is a message to the server; the grant arrives while a job runs, so it is
 * handled at once rather than queued behind the job.
 */
let granted: (() => void) | undefined;
const engine = new Engine(config, {
  acquire: (waitMs) =>
    new Promise<boolean>((resolve) => {
      // Past `waitMs` the job goes on without the heavy step: the request is withdrawn (a grant already on its way
      // is given back when it arrives).
      const timer = setTimeout(
        () => {
          granted = undefined;
          send({ type: "heavy", acquire: false });
          resolve(false);
        },
        Math.max(0, waitMs),
      );
      granted = () => {
        clearTimeout(timer);
        resolve(true);
      };
      send({ type: "heavy", acquire: true });
    }),
  release: () => send({ type: "heavy", acquire: false }),
});

process.on("message", (raw: unknown) => {
  const envelope = toEngineEnvelopeSchema.safeParse(raw);
  if (!envelope.success) return;
  const message = raw as ToEngine;
  if (message.type === "grant") {
    if (granted) granted();
    else send({ type: "heavy", acquire: false });
    granted = undefined;
    return;
  }
  // Messages are handled in order: a `drop` sent before a job is done before it.
  work = work.then(() => handle(message));
});

// The channel closed (the server stopped or let this process go): release Tesseract first — a native instance left
// alive prints a warning per loaded model as the process exits — but exit within a second whatever happens.
process.on("disconnect", () => {
  setTimeout(() => process.exit(0), 1000).unref();
  void engine.close().finally(() => process.exit(0));
});

async function handle(message: Exclude<ToEngine, { type: "grant" }>): Promise<void> {
  switch (message.type) {
    case "drop":
      await engine.drop(message.docId);
      return;
    case "job":
      await runJob(message.id, message.job, message.deadline);
      return;
  }
}

// An OCR process is ready once its Tesseract is (a failure here is logged; the first job tries again).
const warming = config.warmLanguages
  ? engine
      .warm(config.warmLanguages)
      .catch((error: unknown) =>
        console.error(
          `[engine] warming Tesseract failed: ${describeError(isOcrError(error) ? (error.cause ?? error) : error)}`,
        ),
      )
  : Promise.resolve();
// It says which Tesseract it loaded (native or tesseract.js: OCR_TESSERACT), for the start log and /api/health.
void warming.then(() => send({ type: "ready", ...(engine.tesseractInUse && { tesseract: engine.tesseractInUse }) }));

/**
 * pdf.js's work on a page is one chain of promises that never yields to the event loop, so an engine process busy with
 * a hostile PDF does not see its channel close when the server dies (killed, or a test process ending), and spins on,
 * orphaned, for as long as the page's work lasts (minutes and more: the server's work budget, `ocrSettings().maxPdfWorkMs`, stops it
 * only while the server lives). A thread watches instead: once this process is no longer its parent's child (the
 * parent died), it kills it. Started at the first PDF job: the thread costs ~18 MB, which image-only processes never pay.
 */
let watchingParent = false;
const WATCH_PARENT = `const { workerData } = require("node:worker_threads");
setInterval(() => { if (process.ppid !== workerData) process.kill(process.pid, "SIGKILL"); }, 1000);`;

function watchParent(): void {
  if (watchingParent) return;
  watchingParent = true;
  new Worker(WATCH_PARENT, { eval: true, workerData: process.ppid }).unref();
}

async function runJob(id: number, job: EngineJob, deadline: number): Promise<void> {
  if (job.kind !== "read-image") watchParent();
  try {
    const value = await engine.run(job, deadline);
    send({ type: "result", id, ok: true, value });
  } catch (error) {
    if (isOcrError(error)) {
      if (isEngineFault(error.code)) console.error(`[engine] ${job.kind} failed:`, describeError(error.cause ?? error));
      send({ type: "result", id, ok: false, error: toOcrErrorData(error) });
      return;
    }
    console.error(`[engine] ${job.kind} failed:`, describeError(error));
    send({ type: "result", id, ok: false, error: { code: "engine_failed", message: "The OCR engine failed" } });
  }
}
