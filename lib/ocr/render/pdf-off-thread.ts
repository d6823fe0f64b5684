import { existsSync } from "node:fs";
import path from "node:path";
import { Worker } from "node:worker_threads";
import type { ExtractedPage } from "../model/document";
import { OcrError, fromOcrErrorData } from "../model/ocr-error";
import { renderSearchablePdf as renderHere, type PdfSource } from "./formats/pdf";
import type { PdfThreadAnswer, PdfThreadRequest } from "./pdf-thread";

/*
 * The searchable PDF (`format: "pdf"`), made on worker threads (./pdf-thread.ts), not on the server's main thread:
 * pdf-lib's parse of the source, its page copies and its writing are synchronous, so a 40 MB scan held the event loop
 * a second or more per page subset — every tenant's requests and `/api/health` waited (issue 39 point 14).
 *
 * At most `PDF_THREADS` threads per process, kept between PDFs (a thread's start loads pdf-lib and fontkit: about
 * half a second of CPU) and ended after `PDF_THREAD_IDLE_MS` without work; more PDFs at once wait their turn. A PDF
 * is bounded: its thread is ended past `timeoutMs` (the next PDF gets a new one), and a thread's heap is capped.
 *
 * Where the bundle is missing (a checkout where `node scripts/build-engine.mjs` has not run), it is made here, on the
 * calling thread, as before.
 */

/** How long one searchable PDF may take to make before its thread is ended. */
export const PDF_RENDER_TIMEOUT_MS = 120_000;
/** Threads making PDFs at once per process. */
export const PDF_THREADS = 2;
/** An idle thread is ended after this long. */
const PDF_THREAD_IDLE_MS = 60_000;
/** A thread's JavaScript heap (the source file and the result are outside it: array buffers). */
const PDF_THREAD_HEAP_MB = 2048;

/** `build/engine/pdf-render.mjs` under the app's directory (also in the standalone output, see next.config.ts). */
export function pdfThreadScript(): string {
  return path.join(process.cwd(), "build", "engine", "pdf-render.mjs");
}

interface Thread {
  worker: Worker;
  script: string;
  idle?: NodeJS.Timeout;
  /** The PDF it is making: its answer's handler. */
  pending?: { id: number; settle: (answer: PdfThreadAnswer | Error) => void };
}

const threads: Thread[] = [];
const waiting: Array<() => void> = [];
let nextId = 1;

function startThread(script: string): Thread {
  const worker = new Worker(/* turbopackIgnore: true */ script, {
    resourceLimits: { maxOldGenerationSizeMb: PDF_THREAD_HEAP_MB },
  });
  const thread: Thread = { worker, script };
  const fail = (error: Error) => {
    drop(thread);
    thread.pending?.settle(error);
  };
  worker.on("message", (answer: PdfThreadAnswer) => {
    if (thread.pending?.id === answer.id) thread.pending.settle(answer);
  });
  worker.on("error", (error: Error & { code?: string }) =>
    fail(
      error.code === "ERR_WORKER_OUT_OF_MEMORY"
        ? new OcrError("out_of_memory", "Making the searchable PDF needed more memory than allowed", { cause: error })
        : new OcrError("engine_failed", "The searchable PDF could not be made", { cause: error }),
    ),
  );
  worker.on("exit", (code) =>
    fail(new OcrError("engine_crashed", `The thread making the searchable PDF stopped (exit ${code})`)),
  );
  threads.push(thread);
  return thread;
}

function drop(thread: Thread): void {
  const index = threads.indexOf(thread);
  if (index < 0) return;
  threads.splice(index, 1);
  clearTimeout(thread.idle);
  void thread.worker.terminate();
  waiting.shift()?.();
}

async function takeThread(script: string): Promise<Thread> {
  for (;;) {
    const free = threads.find((thread) => thread.pending === undefined && thread.script === script);
    if (free) {
      clearTimeout(free.idle);
      free.worker.ref();
      return free;
    }
    if (threads.length < PDF_THREADS) return startThread(script);
    await new Promise<void>((resolve) => waiting.push(resolve));
  }
}

function giveBack(thread: Thread): void {
  thread.pending = undefined;
  if (!threads.includes(thread)) return;
  // Idle, it keeps no process alive, and ends after a while.
  thread.worker.unref();
  thread.idle = setTimeout(() => drop(thread), PDF_THREAD_IDLE_MS);
  thread.idle.unref();
  waiting.shift()?.();
}

interface RenderOptions {
  /** Default {@link PDF_RENDER_TIMEOUT_MS}. */
  timeoutMs?: number;
  /** The thread's bundle (default {@link pdfThreadScript}). */
  script?: string;
}

/** `pages`: the pages read from `source`, in order (each with the number it has in the file). */
export async function renderSearchablePdf(
  pages: readonly ExtractedPage[],
  source: PdfSource,
  { timeoutMs = PDF_RENDER_TIMEOUT_MS, script = pdfThreadScript() }: RenderOptions = {},
): Promise<Uint8Array> {
  // A path known at run time only: not for Next's tracer, which would take in the whole project (next.config.ts
  // traces the bundle).
  if (!existsSync(/* turbopackIgnore: true */ script)) return renderHere(pages, source);
  const thread = await takeThread(script);
  // The thread gets a copy of the file, moved to it: the caller keeps its own (a store may hand out what it holds).
  const bytes = new Uint8Array(source.bytes);
  const request: PdfThreadRequest = { id: nextId++, pages: [...pages], bytes, type: source.type };
  let timer: NodeJS.Timeout | undefined;
  try {
    const answer = await new Promise<PdfThreadAnswer | Error>((resolve) => {
      thread.pending = { id: request.id, settle: resolve };
      timer = setTimeout(() => {
        // Its work cannot be stopped otherwise: the thread goes, and the next PDF gets a new one.
        drop(thread);
        resolve(
          new OcrError(
            "too_complex",
            `Making the searchable PDF took more than ${Math.round(timeoutMs / 1000)} s; ask for another format`,
          ),
        );
      }, timeoutMs);
      thread.worker.postMessage(request, [bytes.buffer]);
    });
    if (answer instanceof Error) throw answer;
    if (answer.ok) return answer.pdf;
    throw answer.error.code !== undefined ? fromOcrErrorData(answer.error) : new Error(answer.error.message);
  } finally {
    clearTimeout(timer);
    giveBack(thread);
  }
}
