/**
 * The system's libtesseract 5 (Debian/Ubuntu `libtesseract5`) in the engine process, through its C API and `koffi`
 * (an FFI with prebuilt binaries on npm, no compiler). One instance per process, kept across pages: the language
 * data is loaded once, and a page is one `Recognize` on libuv's thread pool, so the process's event loop stays free.
 * Measured against tesseract.js on the same pages: the same text (each page within ±0.01 CER), 1.3–1.9× less processor
 * time per pass (docs/decisions.md#native-tesseract).
 *
 * Jobs are the ones tesseract.js takes (tesseract.ts): the same parameters, set for the job and restored after it,
 * the same best_int models unpacked from the `@tesseract.js-data` packages (never the distribution's tessdata), and
 * Tesseract's own TSV and hOCR back.
 */
import { deadlineError, isOcrError, OcrError } from "../model/ocr-error";
import { refuseJob } from "./tesseract-queue";
import { nativeLanguageDataPath } from "../model/languages";
import type { GreyRaster } from "./raster";
import type { RecognizeJob, TesseractOutput, TesseractReader } from "./tesseract";

/** The library `OCR_TESSERACT_LIBRARY` defaults to: the dynamic loader's name for Tesseract 5. */
export const DEFAULT_TESSERACT_LIBRARY = process.platform === "darwin" ? "libtesseract.5.dylib" : "libtesseract.so.5";

/** `tesseract::OEM_LSTM_ONLY`: the best_int models hold only the LSTM. */
const OEM_LSTM_ONLY = 1;

/**
 * koffi runs a foreign call on a stack of its own, 128 KiB for asynchronous calls by default: a page's recognition
 * ran in 64 KiB here, but nothing bounds Tesseract's depth on stranger pages, and an overflow there would write over
 * the heap unnoticed. 8 MiB, a thread's usual stack; only the pages a call touches become resident.
 */
const CALL_STACK_BYTES = 8 * 1024 * 1024;

type Handle = object;

/** The C functions used, typed. */
export interface Libtesseract {
  version: string;
  create(): Handle;
  init(handle: Handle, dataPath: string, langs: string, oem: number): Promise<number>;
  setVariable(handle: Handle, name: string, value: string): boolean;
  /** The parameter's value as text, or null when Tesseract has no such parameter. */
  getVariable(handle: Handle, name: string): string | null;
  setImage(
    handle: Handle,
    data: Uint8Array,
    width: number,
    height: number,
    bytesPerPixel: number,
    bytesPerLine: number,
  ): void;
  recognize(handle: Handle, monitor: Handle): Promise<number>;
  tsv(handle: Handle, page: number): string;
  hocr(handle: Handle, page: number): string;
  clear(handle: Handle): void;
  end(handle: Handle): void;
  destroy(handle: Handle): void;
  monitor(deadlineMs: number): Handle;
  dropMonitor(monitor: Handle): void;
}

const loaded = new Map<string, Promise<Libtesseract>>();

/**
 * Load `library` (a name the dynamic loader finds, or a path) and bind its C API; throws when koffi or the library
 * cannot be loaded, or the library is not Tesseract 5.
 */
export function loadLibtesseract(library: string): Promise<Libtesseract> {
  let loading = loaded.get(library);
  if (!loading) {
    loading = bind(library);
    loaded.set(library, loading);
    loading.catch(() => loaded.delete(library));
  }
  return loading;
}

/** koffi's settings and type names are the process's: set and declared once, whatever library is bound. */
let declared = false;

async function bind(library: string): Promise<Libtesseract> {
  // OpenMP (Debian's build uses it) reads this when the library loads: one thread per process, one process per core.
  process.env.OMP_THREAD_LIMIT ??= "1";
  const koffi = await import("koffi");
  if (!declared) {
    koffi.config({ ...koffi.config(), sync_stack_size: CALL_STACK_BYTES, async_stack_size: CALL_STACK_BYTES });
    koffi.opaque("TessBaseAPI");
    koffi.opaque("ETEXT_DESC");
    declared = true;
  }
  const lib = koffi.load(library);
  const version = String(lib.func("const char* TessVersion()")());
  if (!/^5\./.test(version)) throw new Error(`${library} is Tesseract ${version}, not 5`);
  const deleteText = lib.func("void TessDeleteText(void* text)");
  // Text Tesseract allocates: copied into a JS string, then freed by Tesseract's own function.
  const text = koffi.disposable("const char*", deleteText);
  const create = lib.func("TessBaseAPI* TessBaseAPICreate()");
  const init = lib.func(
    "int TessBaseAPIInit2(TessBaseAPI* handle, const char* datapath, const char* language, int oem)",
  );
  // The C API's BOOL is an int.
  const setVariable = lib.func("int TessBaseAPISetVariable(TessBaseAPI* handle, const char* name, const char* value)");
  const getInt = lib.func("int TessBaseAPIGetIntVariable(TessBaseAPI* handle, const char* name, _Out_ int* value)");
  const getBool = lib.func("int TessBaseAPIGetBoolVariable(TessBaseAPI* handle, const char* name, _Out_ int* value)");
  const getDouble = lib.func(
    "int TessBaseAPIGetDoubleVariable(TessBaseAPI* handle, const char* name, _Out_ double* value)",
  );
  const getString = lib.func("const char* TessBaseAPIGetStringVariable(TessBaseAPI* handle, const char* name)");
  const setImage = lib.func(
    "void TessBaseAPISetImage(TessBaseAPI* handle, const uint8_t* data, int width, int height, int bpp, int bpl)",
  );
  const recognize = lib.func("int TessBaseAPIRecognize(TessBaseAPI* handle, ETEXT_DESC* monitor)");
  const tsv = lib.func("TessBaseAPIGetTsvText", text, ["TessBaseAPI*", "int"]);
  const hocr = lib.func("TessBaseAPIGetHOCRText", text, ["TessBaseAPI*", "int"]);
  const clear = lib.func("void TessBaseAPIClear(TessBaseAPI* handle)");
  const end = lib.func("void TessBaseAPIEnd(TessBaseAPI* handle)");
  const destroy = lib.func("void TessBaseAPIDelete(TessBaseAPI* handle)");
  const monitorCreate = lib.func("ETEXT_DESC* TessMonitorCreate()");
  const monitorDeadline = lib.func("void TessMonitorSetDeadlineMSecs(ETEXT_DESC* monitor, int deadline)");
  const monitorDelete = lib.func("void TessMonitorDelete(ETEXT_DESC* monitor)");

  const onPool = (fn: { async: (...args: unknown[]) => void }, ...args: unknown[]) =>
    new Promise<number>((resolve, reject) => {
      fn.async(...args, (error: unknown, result: unknown) => (error ? reject(error) : resolve(Number(result))));
    });
  return {
    version,
    create: () => create() as Handle,
    init: (handle, dataPath, langs, oem) => onPool(init, handle, dataPath, langs, oem),
    setVariable: (handle, name, value) => Boolean(setVariable(handle, name, value)),
    getVariable: (handle, name) => {
      const number = [0];
      if (getInt(handle, name, number)) return String(number[0]);
      if (getBool(handle, name, number)) return number[0] ? "1" : "0";
      if (getDouble(handle, name, number)) return String(number[0]);
      const text: unknown = getString(handle, name);
      return typeof text === "string" ? text : null;
    },
    setImage: (handle, data, width, height, bytesPerPixel, bytesPerLine) =>
      setImage(handle, data, width, height, bytesPerPixel, bytesPerLine),
    recognize: (handle, monitor) => onPool(recognize, handle, monitor),
    tsv: (handle, page) => String(tsv(handle, page) ?? ""),
    hocr: (handle, page) => String(hocr(handle, page) ?? ""),
    clear: (handle) => clear(handle),
    end: (handle) => end(handle),
    destroy: (handle) => destroy(handle),
    monitor: (deadlineMs) => {
      const monitor = monitorCreate() as Handle;
      monitorDeadline(monitor, Math.max(1, Math.min(2 ** 31 - 1, Math.round(deadlineMs))));
      return monitor;
    },
    dropMonitor: (monitor) => monitorDelete(monitor),
  };
}

interface QueuedJob {
  job: RecognizeJob;
  resolve: (output: TesseractOutput) => void;
  reject: (error: Error) => void;
  timer: NodeJS.Timeout;
  settled: boolean;
}

/**
 * One libtesseract instance: jobs run one at a time in arrival order, a waiting job past its deadline is dropped and a
 * running one is stopped by Tesseract itself at the deadline (its monitor), the languages are loaded again only when
 * a job asks for others.
 */
export class NativeTesseract implements TesseractReader {
  readonly kind = "native";
  private handle: Handle | null = null;
  /** The languages the instance holds (`eng+fra`), "" before the first load. */
  private langs = "";
  private readonly queue: QueuedJob[] = [];
  private running = false;
  private closed = false;

  constructor(
    private readonly api: Libtesseract,
    private readonly options: { queueLimit: number },
  ) {}

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

  async warm(langs: string[]): Promise<void> {
    if (this.running || this.queue.length > 0) return;
    this.running = true;
    try {
      await this.load(langs);
    } finally {
      this.running = false;
      this.pump();
    }
  }

  /** Nothing to give back: each page's data is freed after it (`Clear`); the model stays for the next page. */
  async shed(): Promise<void> {}

  async terminate(): Promise<void> {
    this.closed = true;
    for (const entry of this.queue.splice(0))
      this.settle(entry, new OcrError("shutting_down", "The OCR engine stopped"));
    // A recognition still running finishes first (deleting the instance under it would crash the process).
    if (!this.running) this.release();
  }

  private pump(): void {
    if (this.running) return;
    if (this.closed) {
      this.release();
      return;
    }
    const entry = this.queue.shift();
    if (!entry) return;
    this.running = true;
    this.run(entry.job)
      .then(
        (output) => this.settle(entry, null, output),
        (error: unknown) => this.settle(entry, toRecognizeError(error)),
      )
      .finally(() => {
        this.running = false;
        this.pump();
      });
  }

  private async run(job: RecognizeJob): Promise<TesseractOutput> {
    const raster = greyOf(job.image);
    const handle = await this.load(job.langs);
    const { api } = this;
    // Set for this job, then put back as they were (as tesseract.js does), so one job's parameters never leak into
    // the next one's reading.
    const saved: Array<[string, string]> = [];
    try {
      for (const [name, value] of Object.entries(job.params)) {
        const before = api.getVariable(handle, name);
        if (before === null || !api.setVariable(handle, name, value)) {
          throw new OcrError("engine_failed", `Tesseract has no parameter ${name}`);
        }
        saved.push([name, before]);
      }
      api.setImage(handle, raster.data, raster.width, raster.height, 1, raster.width);
      const monitor = api.monitor(job.deadline - Date.now());
      let status: number;
      try {
        status = await api.recognize(handle, monitor);
      } finally {
        api.dropMonitor(monitor);
      }
      if (Date.now() >= job.deadline) throw deadlineError();
      if (status !== 0) throw new OcrError("engine_failed", "Recognition failed");
      const tsv = api.tsv(handle, 0);
      return job.hocr ? { tsv, hocr: api.hocr(handle, 0) } : { tsv };
    } finally {
      api.clear(handle);
      for (const [name, value] of saved.reverse()) api.setVariable(handle, name, value);
    }
  }

  /** The instance with `langs` loaded (created, or loaded again with other languages). */
  private async load(langs: string[]): Promise<Handle> {
    const key = langs.join("+");
    if (this.handle && this.langs === key) return this.handle;
    const dataPath = await nativeLanguageDataPath(langs);
    this.handle ??= this.api.create();
    this.langs = "";
    const status = await this.api.init(this.handle, dataPath, key, OEM_LSTM_ONLY);
    if (status !== 0) throw new OcrError("engine_failed", `Tesseract could not load the language data for ${key}`);
    this.langs = key;
    return this.handle;
  }

  /** The deadline passed: a waiting job is dropped; a running one is answered now (Tesseract stops at its monitor). */
  private expire(entry: QueuedJob): void {
    const index = this.queue.indexOf(entry);
    if (index >= 0) this.queue.splice(index, 1);
    this.settle(entry, deadlineError());
  }

  private settle(entry: QueuedJob, error: Error | null, output: TesseractOutput = { tsv: "" }): void {
    if (entry.settled) return;
    entry.settled = true;
    clearTimeout(entry.timer);
    if (error) entry.reject(error);
    else entry.resolve(output);
  }

  private release(): void {
    const handle = this.handle;
    this.handle = null;
    if (!handle) return;
    this.api.end(handle);
    this.api.destroy(handle);
  }
}

/** A job's image as grey pixels: the raster itself, or a binary PGM (what tesseract.js is handed) read back. */
function greyOf(image: GreyRaster | Uint8Array): GreyRaster {
  if (!(image instanceof Uint8Array)) return image;
  const header = /^P5\s+(\d+)\s+(\d+)\s+255\s/.exec(new TextDecoder("latin1").decode(image.subarray(0, 64)));
  if (!header)
    throw new OcrError("unreadable", "The image could not be read (the native reader takes grey pixels or PGM)");
  const width = Number(header[1]);
  const height = Number(header[2]);
  const data = image.subarray(header[0].length);
  if (data.length < width * height || width < 1 || height < 1)
    throw new OcrError("unreadable", "The image is truncated");
  return { width, height, data: data.subarray(0, width * height) };
}

function toRecognizeError(error: unknown): Error {
  if (isOcrError(error)) return error;
  return new OcrError("engine_failed", "Recognition failed", { cause: error });
}
