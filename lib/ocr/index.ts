import { randomBytes } from "node:crypto";
import { getEnv } from "@/lib/env";
import type { OutputFormat } from "@/lib/vocabulary";
import { toPublicDocument, type ExtractedDocument, type ExtractedPage } from "./document";
import { detectFileType, type FileType } from "./detect";
import { deadlineError, isOcrError, OcrError } from "./ocr-error";
import { readImageInfo } from "./image-info";
import { availableLanguages, chooseLanguages, type LanguageChoice } from "./languages";
import { renderMarkdown } from "./markdown";
import { parsePageSelection } from "./pages";
import { OcrPool, type Admission } from "./pool";
import type { InspectPdfResult, ReadLimits } from "./worker/protocol";

export type { ExtractedDocument, ExtractedPage, OcrDocument, OcrPage } from "./document";
export { ocrDocumentSchema } from "./document";
export type { FileType } from "./detect";
export { detectFileType, mediaTypes, sniffFileType } from "./detect";
export { isOcrError, OcrError, ocrErrorCodes } from "./ocr-error";
export type { OcrErrorCode } from "./ocr-error";
export { availableLanguages } from "./languages";
export { OcrPool } from "./pool";
export type { Admission, PoolOptions, PoolStats } from "./pool";

export { outputFormats, type OutputFormat } from "@/lib/vocabulary";

export interface EngineLimits {
  maxPdfPages: number;
  maxImagePixels: number;
  /** Most bytes one PDF stream may inflate to. */
  maxStreamBytes: number;
}

export interface OpenOptions {
  /** PDF page selection, e.g. `"1-3,5"`; all pages by default. */
  pages?: string;
  /** `auto` (default), or Tesseract codes such as `eng`, `eng+fra`. */
  language?: string;
  limits?: Partial<EngineLimits>;
  /** Epoch ms; past it the work stops with a `deadline` error. Default: now + `REQUEST_DEADLINE_MS`. */
  deadline?: number;
  /** The engine processes to use (default: the process-wide pool). */
  pool?: OcrPool;
}

export interface ExtractOptions {
  /** Epoch ms; past it the work stops with a `deadline` error. Default: the deadline `openDocument` was given. */
  deadline?: number;
}

/** A validated document: type, page count and the pages that will be read are known; no OCR has run. */
export interface OpenedDocument {
  type: FileType;
  /** Pages in the file. */
  pageCount: number;
  /** 1-based pages that `extract` will read: what a request is charged for. */
  selectedPages: number[];
  extract(options?: ExtractOptions): Promise<ExtractedDocument>;
  /** Close the document in the engine processes that hold it. */
  close(): Promise<void>;
}

const POOL_KEY = Symbol.for("ocr-service.pool");
type PoolHolder = { [POOL_KEY]?: OcrPool };

/** The process-wide engine pool (kept on globalThis so dev-server reloads and bundle copies share one). */
export function getOcrPool(): OcrPool {
  const holder = globalThis as PoolHolder;
  if (!holder[POOL_KEY]) {
    const env = getEnv();
    holder[POOL_KEY] = new OcrPool({
      size: env.OCR_WORKERS,
      inspectSize: env.OCR_INSPECT_WORKERS,
      queueLimit: env.OCR_QUEUE_LIMIT,
      maxJobsPerWorker: env.OCR_WORKER_MAX_JOBS,
      createTimeoutMs: env.OCR_WORKER_CREATE_TIMEOUT_MS,
      memoryMb: env.OCR_WORKER_MEMORY_MB,
      engines: env.OCR_ENGINES,
    });
  }
  return holder[POOL_KEY];
}

/**
 * Check everything that can be checked before OCR, so a request can be refused (or charged) first: type from
 * magic bytes, image size from the header (here, bounded work), language; for a PDF, an engine process inspects it
 * (inflate bombs, structure, page count and selection, text layers, blank pages). Whether the OCR lane could start
 * this document before its deadline is checked too (`overloaded` at once otherwise). Failures are `OcrError`s.
 */
export async function openDocument(bytes: Uint8Array, options: OpenOptions = {}): Promise<OpenedDocument> {
  const env = getEnv();
  const limits: EngineLimits = {
    maxPdfPages: options.limits?.maxPdfPages ?? env.MAX_PDF_PAGES,
    maxImagePixels: options.limits?.maxImagePixels ?? env.MAX_IMAGE_PIXELS,
    maxStreamBytes: options.limits?.maxStreamBytes ?? env.MAX_PDF_STREAM_BYTES,
  };
  const readLimits: ReadLimits = { maxImagePixels: limits.maxImagePixels, maxStreamBytes: limits.maxStreamBytes };
  const available = availableLanguages(env.OCR_LANGUAGES);
  const language = chooseLanguages(options.language, env.OCR_DEFAULT_LANGUAGE, available);
  const type = detectFileType(bytes);
  const pool = options.pool ?? getOcrPool();
  const openDeadline = options.deadline ?? Date.now() + env.REQUEST_DEADLINE_MS;
  const work = { language, available, limits: readLimits };

  if (type !== "pdf") {
    const info = readImageInfo(bytes, type);
    if (info.width * info.height > limits.maxImagePixels) {
      throw new OcrError(
        "image_too_large",
        `The image is ${info.width}×${info.height} pixels; the limit is ${Math.round(limits.maxImagePixels / 1e6)} megapixels`,
      );
    }
    parsePageSelection(options.pages, 1);
    const pixels = info.width * info.height;
    const estimateMs = pool.estimate("read-image", pixels);
    const admission = pool.admit("ocr", estimateMs, openDeadline);
    return {
      type,
      pageCount: 1,
      selectedPages: [1],
      extract: async ({ deadline = openDeadline } = {}) => {
        checkDeadline(deadline);
        // Admitted when opened (before the request was charged): its place is taken now, not judged again.
        const { page } = await pool.run("ocr", { kind: "read-image", bytes, type, ...work }, { deadline, admission, estimateMs, pixels });
        return { pages: [page], pageCount: 1 };
      },
      close: async () => admission.release(),
    };
  }

  const docId = `doc_${randomBytes(9).toString("base64url")}`;
  const session = pool.session();
  try {
    const inspected = await pool.run(
      "inspect",
      { kind: "inspect-pdf", doc: { id: docId, bytes }, pages: options.pages, maxPages: limits.maxPdfPages, limits: readLimits },
      { deadline: openDeadline, session },
    );
    const admission = inspected.ocr.length > 0 ? pool.admit("ocr", pool.estimate("read-pdf-page"), openDeadline) : undefined;
    return {
      type,
      pageCount: inspected.pageCount,
      selectedPages: inspected.selected,
      extract: ({ deadline = openDeadline } = {}) => extractPdf({ pool, bytes, docId, session, inspected, deadline, admission, ...work }),
      close: async () => {
        admission?.release();
        pool.release(docId);
      },
    };
  } catch (error) {
    pool.release(docId);
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

function checkDeadline(deadline: number): void {
  if (Date.now() >= deadline) throw deadlineError();
}

interface PdfWork {
  pool: OcrPool;
  /** Held since the document was opened; its first page takes it. */
  admission?: Admission;
  bytes: Uint8Array;
  docId: string;
  session: string;
  inspected: InspectPdfResult;
  deadline: number;
  language: LanguageChoice;
  available: string[];
  limits: ReadLimits;
}

/**
 * The pages the inspection could not finish go to the OCR processes, all at once (the pool serves requests
 * round-robin, so a long document does not starve others). In `auto` mode the first scanned page decides the
 * language of the rest. The first failure drops the pages still waiting.
 */
async function extractPdf(work: PdfWork): Promise<ExtractedDocument> {
  const { pool, inspected, session } = work;
  checkDeadline(work.deadline);
  const pages = new Map<number, ExtractedPage>(inspected.done.map((page) => [page.number, page]));
  let language = work.language;
  let admission: Admission | false | undefined = work.admission ?? false;
  const readPage = async ({ number, textLayer }: InspectPdfResult["ocr"][number]): Promise<void> => {
    // The first page takes the place its document was admitted with; the later ones wait their turn.
    const place = admission;
    admission = false;
    const result = await pool.run(
      "ocr",
      {
        kind: "read-pdf-page",
        doc: { id: work.docId, bytes: work.bytes },
        number,
        language,
        available: work.available,
        limits: work.limits,
        ...(textLayer && { textLayer }),
      },
      { deadline: work.deadline, session, admission: place },
    );
    language = result.language;
    pages.set(number, result.page);
  };

  const queue = [...inspected.ocr];
  if (language.auto && queue.length > 1) await readPage(queue.shift()!);
  try {
    await Promise.all(queue.map(readPage));
  } catch (error) {
    pool.cancel(session, isOcrError(error) ? error : new OcrError("engine_failed", "The OCR engine failed", { cause: error }));
    throw error;
  }
  return { pages: inspected.selected.map((n) => pages.get(n)!), pageCount: inspected.pageCount };
}
