import { Worker as ThreadWorker } from "node:worker_threads";
import { createWorker, OEM, type ImageLike, type RecognizeOptions, type Worker } from "tesseract.js";
import { withTimeout } from "@/lib/async";
import { deadlineError, isOcrError, OcrError } from "../model/ocr-error";
import { refuseJob } from "./tesseract-queue";
import { languageDataPath } from "../model/languages";
import { profiledAsync } from "../model/profile";
import { toPgm } from "./raster";
import type { RecognizeJob, TesseractOutput, TesseractReader } from "./tesseract";

export type { RecognizeJob, TesseractOutput } from "./tesseract";

export interface PoolOptions {
  /** Workers (threads with their own wasm instance, ~100–150 MB each). */
  size: number;
  /** Jobs allowed to wait; past it `recognize` throws `overloaded`. */
  queueLimit: number;
  /** A worker is replaced after this many jobs: wasm memory only grows. */
  maxJobsPerWorker: number;
  createTimeoutMs: number;
  /** A worker that recognized an image larger than this is replaced afterwards, returning its heap. */
  recycleAbovePixels?: number;
}

export interface PoolStats {
  size: number;
  workers: number;
  busy: number;
  queued: number;
  completed: number;
}

interface Slot {
  id: number;
  worker: Worker | null;
  langs: string;
  busy: boolean;
  jobs: number;
  retired: boolean;
  /** Rejects the running job when the thread dies under it. */
  onDeath?: (error: Error) => void;
}

interface QueuedJob {
  job: RecognizeJob;
  resolve: (output: TesseractOutput) => void;
  reject: (error: Error) => void;
  timer: NodeJS.Timeout;
  slot?: Slot;
  settled: boolean;
}

const LSTM_ONLY = OEM.LSTM_ONLY;

/**
 * A pool of tesseract.js workers (inside one engine process; see lib/ocr/pool/ for the processes): created lazily, kept warm, bounded queue, deadlines, and replacement of a
 * worker after a failure, a timeout, a crash, N jobs or a very large image.
 */
export class TesseractPool implements TesseractReader {
  readonly kind = "wasm";
  private readonly options: Required<PoolOptions>;
  private readonly slots: Slot[] = [];
  private readonly queue: QueuedJob[] = [];
  private spawning = 0;
  private nextId = 1;
  private completed = 0;
  private closed = false;

  constructor(options: PoolOptions) {
    this.options = { recycleAbovePixels: 30_000_000, ...options };
  }

  stats(): PoolStats {
    return {
      size: this.options.size,
      workers: this.slots.length,
      busy: this.slots.filter((s) => s.busy).length,
      queued: this.queue.length,
      completed: this.completed,
    };
  }

  /** Recognize one image; resolves with Tesseract's TSV (one row per page/block/paragraph/line/word). */
  async recognize(job: RecognizeJob): Promise<string> {
    return (await this.recognizeOutput(job)).tsv;
  }

  /** Recognize one image; resolves with Tesseract's TSV, and its hOCR when `job.hocr` asks for it. */
  recognizeOutput(job: RecognizeJob): Promise<TesseractOutput> {
    const refused = refuseJob(this.closed, job.deadline, this.queue.length, this.options.queueLimit);
    if (refused) return Promise.reject(refused);
    const remaining = job.deadline - Date.now();
    return new Promise<TesseractOutput>((resolve, reject) => {
      const entry: QueuedJob = {
        job,
        resolve,
        reject,
        settled: false,
        timer: setTimeout(() => this.expire(entry), remaining),
      };
      this.queue.push(entry);
      this.pump();
    });
  }

  /** Start one worker ahead of the first request (cold-start latency). */
  async warm(langs: string[] = ["eng"]): Promise<void> {
    if (this.slots.length > 0 || this.spawning > 0) return;
    await this.spawn(langs.join("+"));
    this.pump();
  }

  /**
   * Stop the idle workers, returning their wasm heaps (which only grow) to the system; the next job starts one
   * again. For a process about to need memory for something else (a second recognizer).
   */
  async shed(): Promise<void> {
    await profiledAsync("tesseract-shed", () =>
      Promise.all(this.slots.filter((s) => !s.busy).map((slot) => this.retire(slot))),
    );
  }

  async terminate(): Promise<void> {
    this.closed = true;
    for (const entry of this.queue.splice(0))
      this.settle(entry, new OcrError("shutting_down", "The OCR engine stopped"));
    await Promise.all(this.slots.splice(0).map((slot) => this.retire(slot)));
  }

  private pump(): void {
    if (this.closed) return;
    while (this.queue.length > 0) {
      const idle = this.slots.filter((s) => !s.busy && !s.retired);
      if (idle.length === 0) break;
      const head = this.queue[0]!;
      const key = head.job.langs.join("+");
      const slot = idle.find((s) => s.langs === key) ?? idle[0]!;
      this.queue.shift();
      void this.run(slot, head);
    }
    // Grow towards `size` while jobs wait for more workers than are starting.
    while (this.queue.length > this.spawning && this.slots.length + this.spawning < this.options.size) {
      const langs = this.queue[this.spawning]?.job.langs.join("+") ?? "eng";
      void this.spawn(langs).then(
        () => this.pump(),
        (error: unknown) => this.failQueued(error),
      );
    }
  }

  private spawn(langs: string): Promise<void> {
    return profiledAsync("tesseract-start", () => this.spawnWorker(langs));
  }

  private async spawnWorker(langs: string): Promise<void> {
    this.spawning++;
    try {
      const langPath = await languageDataPath(langs.split("+"));
      const creating = createWorker(langs, LSTM_ONLY, {
        langPath,
        gzip: true,
        cacheMethod: "none",
        // Mandatory: without it one bad job throws on the worker's message loop and kills the process.
        errorHandler: () => {},
      });
      const worker = await withTimeout(creating, this.options.createTimeoutMs, "Starting an OCR worker timed out");
      const slot: Slot = { id: this.nextId++, worker, langs, busy: false, jobs: 0, retired: false };
      if (this.closed) {
        await worker.terminate();
        return;
      }
      watchThread(worker, (error) => {
        slot.onDeath?.(error);
        void this.retire(slot);
      });
      this.slots.push(slot);
    } catch (error) {
      // A creation that timed out may still finish later: nothing holds it, and its thread exits with us.
      throw new OcrError("engine_failed", "The OCR engine could not start", { cause: error });
    } finally {
      this.spawning--;
    }
  }

  private async run(slot: Slot, entry: QueuedJob): Promise<void> {
    slot.busy = true;
    entry.slot = slot;
    const { job } = entry;
    const key = job.langs.join("+");
    const died = new Promise<never>((_, reject) => {
      slot.onDeath = (error) => reject(error);
    });
    let failed = false;
    try {
      const worker = slot.worker!;
      if (slot.langs !== key) {
        await languageDataPath(job.langs);
        await Promise.race([worker.reinitialize(key, LSTM_ONLY), died]);
        slot.langs = key;
      }
      const options = job.params as Partial<RecognizeOptions>;
      const output = { text: false, tsv: true, ...(job.hocr && { hocr: true }) };
      const image = job.image instanceof Uint8Array ? job.image : toPgm(job.image);
      const result = await Promise.race([worker.recognize(asImageLike(image), options, output), died]);
      slot.jobs++;
      this.completed++;
      this.settle(entry, null, { tsv: result.data.tsv ?? "", ...(result.data.hocr && { hocr: result.data.hocr }) });
    } catch (error) {
      failed = true;
      this.settle(entry, toRecognizeError(error));
    } finally {
      slot.onDeath = undefined;
      entry.slot = undefined;
      const worn = slot.jobs >= this.options.maxJobsPerWorker || job.pixels > this.options.recycleAbovePixels;
      if (failed || worn) await this.retire(slot);
      else slot.busy = false;
      this.pump();
    }
  }

  /** The deadline passed: drop a waiting job, or abandon a running one together with its worker. */
  private expire(entry: QueuedJob): void {
    if (entry.settled) return;
    const index = this.queue.indexOf(entry);
    if (index >= 0) this.queue.splice(index, 1);
    const slot = entry.slot;
    this.settle(entry, deadlineError());
    if (slot) {
      void this.retire(slot).then(() => this.pump());
    }
  }

  private async retire(slot: Slot): Promise<void> {
    if (slot.retired) return;
    slot.retired = true;
    slot.busy = true;
    const index = this.slots.indexOf(slot);
    if (index >= 0) this.slots.splice(index, 1);
    const worker = slot.worker;
    slot.worker = null;
    // tesseract.js's recognize() awaits its own image loading before posting to the thread, in a promise
    // nobody can catch; terminating in that window makes it post to a null worker and crash the process.
    // One macrotask lets any such post go out first.
    await new Promise((resolve) => setImmediate(resolve));
    await worker?.terminate().catch(() => {});
  }

  private failQueued(error: unknown): void {
    // Workers could not start: fail the jobs nobody can serve rather than leaving them to their deadline.
    if (this.slots.length > 0 || this.spawning > 0) return;
    const failure = isOcrError(error)
      ? error
      : new OcrError("engine_failed", "The OCR engine could not start", { cause: error });
    for (const entry of this.queue.splice(0)) this.settle(entry, failure);
  }

  private settle(entry: QueuedJob, error: Error | null, output: TesseractOutput = { tsv: "" }): void {
    if (entry.settled) return;
    entry.settled = true;
    clearTimeout(entry.timer);
    if (error) entry.reject(error);
    else entry.resolve(output);
  }
}

/**
 * tesseract.js copies a Buffer or Uint8Array before posting it to the worker (which copies again); an
 * ArrayBuffer it only wraps. Hand over the bytes' own buffer when they fill it.
 */
function asImageLike(bytes: Uint8Array): ImageLike {
  const whole = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength;
  const buffer = whole ? bytes.buffer : bytes.slice().buffer;
  return buffer as unknown as ImageLike;
}

function toRecognizeError(error: unknown): Error {
  if (isOcrError(error)) return error;
  const message = typeof error === "string" ? error : error instanceof Error ? error.message : "";
  if (/read image/i.test(message)) {
    return new OcrError("unreadable", "The image could not be read", { cause: error });
  }
  return new OcrError("engine_failed", "Recognition failed", { cause: error });
}

/** tesseract.js sets `worker.onerror`, which Node's Worker ignores: listen to the thread ourselves. */
function watchThread(worker: Worker, onDeath: (error: Error) => void): void {
  const thread: unknown = (worker as unknown as { worker?: unknown }).worker;
  if (!(thread instanceof ThreadWorker)) return;
  thread.on("error", (error) => onDeath(new OcrError("engine_crashed", "An OCR worker crashed", { cause: error })));
  thread.on("exit", (code) => onDeath(new OcrError("engine_crashed", `An OCR worker exited (${code})`)));
}
