import type { PDFPageProxy } from "pdfjs-dist";
import { ApiError } from "@/lib/errors";
import { getEnv } from "@/lib/env";
import { toPublicDocument, type ExtractedDocument, type ExtractedPage } from "./document";
import { detectFileType, type FileType } from "./detect";
import { readImageInfo } from "./image-info";
import { detectLanguage } from "./language-detect";
import { availableLanguages, chooseLanguages, type LanguageChoice } from "./languages";
import { renderMarkdown } from "./markdown";
import { parsePageSelection } from "./pages";
import { getPdfPage, openPdf, pageHasInk, readTextLayer, renderPdfPage, type PdfHandle } from "./pdf";
import { OcrPool } from "./pool";
import { decodeImage, releaseSource } from "./raster";
import { prepareRaster, recognizeRaster, type PageReading, type PreparedRaster } from "./recognize";

export type { ExtractedDocument, ExtractedPage, OcrDocument, OcrPage } from "./document";
export { ocrDocumentSchema } from "./document";
export type { FileType } from "./detect";
export { detectFileType, mediaTypes, sniffFileType } from "./detect";
export { OcrPool } from "./pool";

export const outputFormats = ["text", "json", "markdown"] as const;
export type OutputFormat = (typeof outputFormats)[number];

export interface EngineLimits {
  maxPdfPages: number;
  maxImagePixels: number;
}

export interface OpenOptions {
  /** PDF page selection, e.g. `"1-3,5"`; all pages by default. */
  pages?: string;
  /** `auto` (default), or Tesseract codes such as `eng`, `eng+fra`. */
  language?: string;
  limits?: Partial<EngineLimits>;
}

export interface ExtractOptions {
  /** Epoch ms; past it the work stops with `504 timeout`. */
  deadline?: number;
  /** The worker pool to use (default: the process-wide pool). */
  pool?: OcrPool;
}

/** A validated document: type, page count and the pages that will be read are known; nothing is decoded. */
export interface OpenedDocument {
  type: FileType;
  /** Pages in the file. */
  pageCount: number;
  /** 1-based pages that `extract` will read: what a request is charged for. */
  selectedPages: number[];
  extract(options?: ExtractOptions): Promise<ExtractedDocument>;
  close(): Promise<void>;
}

/** Pages whose text layer has fewer characters than this are also OCR'd (a scan with a stamped page number). */
const SPARSE_TEXT_LAYER = 40;
/** A text layer with more unmapped glyphs than this share is unusable: OCR instead. */
const MAX_GARBAGE = 0.3;
const TEXT_LAYER_CONCURRENCY = 8;

const POOL_KEY = Symbol.for("ocr-service.pool");
type PoolHolder = { [POOL_KEY]?: OcrPool };

/** The process-wide worker pool (kept on globalThis so dev-server reloads do not leak workers). */
export function getOcrPool(): OcrPool {
  const holder = globalThis as PoolHolder;
  if (!holder[POOL_KEY]) {
    const env = getEnv();
    holder[POOL_KEY] = new OcrPool({
      size: env.OCR_WORKERS,
      queueLimit: env.OCR_QUEUE_LIMIT,
      maxJobsPerWorker: env.OCR_WORKER_MAX_JOBS,
      createTimeoutMs: env.OCR_WORKER_CREATE_TIMEOUT_MS,
    });
  }
  return holder[POOL_KEY];
}

/**
 * Check everything that can be checked cheaply — type from magic bytes, header sizes, PDF structure, page
 * selection and limits, language — so a request can be refused (or charged) before any expensive work.
 */
export async function openDocument(bytes: Uint8Array, options: OpenOptions = {}): Promise<OpenedDocument> {
  const env = getEnv();
  const limits: EngineLimits = {
    maxPdfPages: options.limits?.maxPdfPages ?? env.MAX_PDF_PAGES,
    maxImagePixels: options.limits?.maxImagePixels ?? env.MAX_IMAGE_PIXELS,
  };
  const available = availableLanguages(env.OCR_LANGUAGES);
  const language = chooseLanguages(options.language, env.OCR_DEFAULT_LANGUAGE, available);
  const type = detectFileType(bytes);

  if (type !== "pdf") {
    const info = readImageInfo(bytes, type);
    if (info.width * info.height > limits.maxImagePixels) {
      throw new ApiError(
        "payload_too_large",
        `The image is ${info.width}×${info.height} pixels; the limit is ${Math.round(limits.maxImagePixels / 1e6)} megapixels`,
      );
    }
    parsePageSelection(options.pages, 1);
    return {
      type,
      pageCount: 1,
      selectedPages: [1],
      extract: (extractOptions = {}) =>
        extractImage(bytes, type, limits, { language, available, ...resolveExtractOptions(extractOptions) }),
      close: async () => {},
    };
  }

  const handle = await openPdf(bytes);
  try {
    const selectedPages = parsePageSelection(options.pages, handle.pageCount, limits.maxPdfPages);
    return {
      type,
      pageCount: handle.pageCount,
      selectedPages,
      extract: (extractOptions = {}) =>
        extractPdf(handle, selectedPages, { language, available, ...resolveExtractOptions(extractOptions) }),
      close: () => handle.close(),
    };
  } catch (error) {
    await handle.close();
    throw error;
  }
}

/** Open, extract and close in one call. */
export async function extractDocument(
  bytes: Uint8Array,
  options: OpenOptions & ExtractOptions = {},
): Promise<ExtractedDocument> {
  const opened = await openDocument(bytes, options);
  try {
    return await opened.extract(options);
  } finally {
    await opened.close();
  }
}

/** `text`: pages separated by a form feed; `json`: the document model; `markdown`: reconstructed layout. */
export function render(document: ExtractedDocument, format: OutputFormat): string {
  switch (format) {
    case "text":
      return document.pages.map((page) => page.text).join("\f");
    case "json":
      return JSON.stringify(toPublicDocument(document));
    case "markdown":
      return renderMarkdown(document);
  }
}

/** Character-weighted confidence of a whole document (text-layer pages count as 100). */
export function documentConfidence(document: ExtractedDocument): number {
  let sum = 0;
  let chars = 0;
  for (const page of document.pages) {
    const n = page.text.replace(/\s+/g, "").length;
    sum += page.confidence * n;
    chars += n;
  }
  return chars === 0 ? 0 : Math.round((sum / chars) * 10) / 10;
}

interface Work {
  language: LanguageChoice;
  available: string[];
  deadline: number;
  pool: OcrPool;
}

function resolveExtractOptions(options: ExtractOptions): Pick<Work, "deadline" | "pool"> {
  return {
    deadline: options.deadline ?? Date.now() + getEnv().REQUEST_DEADLINE_MS,
    pool: options.pool ?? getOcrPool(),
  };
}

function checkDeadline(deadline: number): void {
  if (Date.now() >= deadline) throw new ApiError("timeout", "The request deadline passed before the document was read");
}

async function extractImage(
  bytes: Uint8Array,
  type: Exclude<FileType, "pdf">,
  limits: EngineLimits,
  work: Work,
): Promise<ExtractedDocument> {
  const image = await decodeImage(bytes, type, limits.maxImagePixels);
  try {
    checkDeadline(work.deadline);
    const prepared = prepareRaster(image.source, image.width, image.height);
    const { reading } = await readWithLanguage(prepared, 1, work, work.language);
    return { pages: [reading.page], pageCount: 1 };
  } finally {
    releaseSource(image.source);
  }
}

/**
 * Read a page; in `auto` mode, re-read it in another installed language when the English reading is
 * clearly in that language. Returns the languages to use for the rest of the document.
 */
async function readWithLanguage(
  prepared: PreparedRaster,
  number: number,
  work: Work,
  language: LanguageChoice,
): Promise<{ reading: PageReading; language: LanguageChoice }> {
  const context = { pool: work.pool, deadline: work.deadline };
  const reading = await recognizeRaster(prepared, number, { ...context, langs: language.langs });
  if (!language.auto) return { reading, language };
  const guess = detectLanguage(reading.page.text, work.available);
  if (!guess) return { reading, language: { langs: language.langs, auto: false } };
  const decided: LanguageChoice = { langs: [guess.lang, "eng"], auto: false };
  const again = await recognizeRaster(prepared, number, { ...context, langs: decided.langs });
  if (again.page.trace) again.page.trace.passes = (again.page.trace.passes ?? 1) + (reading.page.trace?.passes ?? 1);
  return { reading: again, language: decided };
}

async function extractPdf(handle: PdfHandle, selected: number[], work: Work): Promise<ExtractedDocument> {
  const pages = new Map<number, ExtractedPage>();
  const needsOcr: Array<{ number: number; page: PDFPageProxy; textLayer?: ExtractedPage }> = [];

  // Text layers first, several pages in flight: pdf.js's in-thread worker yields between messages, so pipelining
  // pages roughly halves the time of a long document. (Reading them on several threads was tried: each thread
  // parses the document's embedded fonts again, which made real documents slower, not faster.)
  const pending = [...selected];
  await Promise.all(
    Array.from({ length: Math.min(TEXT_LAYER_CONCURRENCY, pending.length) }, async () => {
      for (let number = pending.shift(); number !== undefined; number = pending.shift()) {
        checkDeadline(work.deadline);
        const page = await getPdfPage(handle, number);
        const layer = await readTextLayer(page, number);
        if (layer.chars >= SPARSE_TEXT_LAYER && layer.garbage <= MAX_GARBAGE) {
          pages.set(number, layer.page);
          page.cleanup();
        } else if (layer.chars === 0 && !(await pageHasInk(page))) {
          // Nothing to read and nothing drawn: a blank page needs no 300-DPI rendering and no OCR.
          pages.set(number, layer.page);
          page.cleanup();
        } else {
          needsOcr.push({ number, page, textLayer: layer.chars > 0 && layer.garbage <= MAX_GARBAGE ? layer.page : undefined });
        }
      }
    }),
  );
  needsOcr.sort((a, b) => a.number - b.number);

  let language = work.language;
  const ocrOne = async (item: (typeof needsOcr)[number]): Promise<void> => {
    checkDeadline(work.deadline);
    const canvas = await renderPdfPage(item.page);
    item.page.cleanup();
    try {
      const prepared = prepareRaster(canvas, canvas.width, canvas.height);
      const result = await readWithLanguage(prepared, item.number, work, language);
      language = result.language;
      pages.set(item.number, pickSparsePage(item.textLayer, result.reading.page));
    } finally {
      releaseSource(canvas);
    }
  };

  // In auto mode the first scanned page decides the language for the rest; then pages run concurrently,
  // rendering the next page while the pool recognizes the previous ones.
  const queue = [...needsOcr];
  if (language.auto && queue.length > 1) await ocrOne(queue.shift()!);
  const concurrency = Math.max(1, work.pool.stats().size);
  let failed = false;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, queue.length) }, async () => {
      for (let item = queue.shift(); item && !failed; item = queue.shift()) {
        await ocrOne(item).catch((error: unknown) => {
          failed = true; // the other lanes stop taking pages
          throw error;
        });
      }
    }),
  );

  return { pages: selected.map((n) => pages.get(n)!), pageCount: handle.pageCount };
}

/** A sparse text layer against OCR of the same page: keep the exact text unless OCR found clearly more. */
function pickSparsePage(textLayer: ExtractedPage | undefined, ocr: ExtractedPage): ExtractedPage {
  if (!textLayer) return ocr;
  const count = (p: ExtractedPage) => p.text.replace(/\s+/g, "").length;
  return count(ocr) > count(textLayer) * 1.5 + 10 ? ocr : textLayer;
}
