import { pathToFileURL } from "node:url";
import { Worker } from "node:worker_threads";
import { ApiError } from "@/lib/errors";
import { pdfDocumentOptions, pdfJsPath, type RawTextPage } from "./pdf";

/**
 * Text layers of long PDFs, read on several threads. pdf.js runs on the calling thread in Node (its "fake
 * worker"), so a 100-page born-digital document keeps one core busy for half a second while the others idle.
 * These threads each open their own copy of the document and return, for their share of the pages, exactly
 * what `readRawText` returns; the layout into lines and blocks stays on the main thread (one implementation).
 *
 * The thread's code is a string evaluated by `new Worker(…, { eval: true })`: there is no extra file for the
 * deployment to trace. Threads start on the first long PDF and exit after a minute idle.
 */

/** Fewer pages than this are read on the calling thread: starting threads and re-parsing would cost more. */
export const PARALLEL_TEXT_MIN_PAGES = 24;
const IDLE_MS = 60_000;

const WORKER_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads");
let pdfjs;
async function pages(doc, numbers) {
  const out = new Array(numbers.length);
  let next = 0;
  // Several pages in flight: pdf.js yields between its internal messages.
  await Promise.all(Array.from({ length: Math.min(8, numbers.length) }, async () => {
    while (next < numbers.length) {
      const i = next++;
      const page = await doc.getPage(numbers[i]);
      const viewport = page.getViewport({ scale: 1, rotation: 0 });
      const content = await page.getTextContent();
      out[i] = {
        number: numbers[i],
        raw: {
          items: content.items.filter((item) => "str" in item).map(({ str, transform, width, height, fontName, hasEOL }) => ({ str, transform, width, height, fontName, hasEOL })),
          styles: content.styles,
          viewTransform: viewport.transform,
          viewWidth: viewport.width,
          viewHeight: viewport.height,
          rotate: page.rotate,
        },
      };
      page.cleanup();
    }
  }));
  return out;
}
parentPort.on("message", async ({ id, data, numbers }) => {
  let task;
  try {
    pdfjs ??= await import(workerData.pdfjsUrl);
    task = pdfjs.getDocument({ data, ...workerData.options });
    const doc = await task.promise;
    parentPort.postMessage({ id, pages: await pages(doc, numbers) });
  } catch (error) {
    parentPort.postMessage({ id, error: String((error && error.message) || error) });
  } finally {
    if (task) await task.destroy().catch(() => {});
  }
});
`;

interface Reply {
  id: number;
  pages?: Array<{ number: number; raw: RawTextPage }>;
  error?: string;
}

interface Thread {
  worker: Worker;
  pending: Map<number, { resolve: (reply: Reply) => void; reject: (error: Error) => void }>;
}

export class PdfTextWorkers {
  private threads: Thread[] = [];
  private nextId = 1;
  private idleTimer: NodeJS.Timeout | undefined;

  constructor(private readonly size: number) {}

  /** Raw text of `numbers` (1-based) of the PDF in `bytes`, split across the threads; order preserved. */
  async read(bytes: Uint8Array, numbers: number[], deadline: number): Promise<Map<number, RawTextPage>> {
    clearTimeout(this.idleTimer);
    const count = Math.max(1, Math.min(this.size, Math.ceil(numbers.length / PARALLEL_TEXT_MIN_PAGES)));
    while (this.threads.length < count) this.threads.push(this.spawn());
    const share = Math.ceil(numbers.length / count);
    const chunks = Array.from({ length: count }, (_, i) => numbers.slice(i * share, (i + 1) * share)).filter((c) => c.length);
    try {
      const replies = await Promise.all(chunks.map((chunk, i) => this.request(this.threads[i]!, bytes, chunk, deadline)));
      const result = new Map<number, RawTextPage>();
      for (const reply of replies) for (const page of reply.pages ?? []) result.set(page.number, page.raw);
      return result;
    } finally {
      this.idleTimer = setTimeout(() => void this.terminate(), IDLE_MS);
      this.idleTimer.unref();
    }
  }

  async terminate(): Promise<void> {
    clearTimeout(this.idleTimer);
    const threads = this.threads.splice(0);
    await Promise.all(threads.map((t) => t.worker.terminate()));
  }

  private spawn(): Thread {
    const worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { pdfjsUrl: pathToFileURL(pdfJsPath()).href, options: pdfDocumentOptions() },
    });
    const thread: Thread = { worker, pending: new Map() };
    const fail = (error: Error) => {
      for (const waiter of thread.pending.values()) waiter.reject(error);
      thread.pending.clear();
      this.threads = this.threads.filter((t) => t !== thread);
    };
    worker.on("message", (reply: Reply) => {
      const waiter = thread.pending.get(reply.id);
      thread.pending.delete(reply.id);
      waiter?.resolve(reply);
    });
    worker.on("error", (error) => fail(error));
    worker.on("exit", (code) => fail(new Error(`PDF text thread exited (${code})`)));
    worker.unref(); // an idle thread must not keep the process alive
    return thread;
  }

  private request(thread: Thread, bytes: Uint8Array, numbers: number[], deadline: number): Promise<Reply> {
    const id = this.nextId++;
    return new Promise<Reply>((resolve, reject) => {
      const timer = setTimeout(() => {
        thread.pending.delete(id);
        void thread.worker.terminate(); // the thread is stuck in this document: replace it
        reject(new ApiError("timeout", "The request deadline passed before the document was read"));
      }, Math.max(0, deadline - Date.now()));
      thread.pending.set(id, {
        resolve: (reply) => {
          clearTimeout(timer);
          if (reply.error) reject(new Error(reply.error));
          else resolve(reply);
        },
        reject: (error) => {
          clearTimeout(timer);
          reject(error);
        },
      });
      thread.worker.ref(); // busy: keep the process alive until the answer arrives
      thread.worker.postMessage({ id, data: bytes, numbers });
    }).finally(() => {
      if (thread.pending.size === 0) thread.worker.unref();
    });
  }
}
