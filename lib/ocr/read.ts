import { randomBytes } from "node:crypto";
import { getEnv, type Env } from "@/lib/env";
import { installedOverrides } from "@/lib/settings/installed";
import { ocrSettings, type OcrSettings } from "./model/settings";
import type { ExtractedDocument, ExtractedPage } from "./model/document";
import { detectFileType, type FileType } from "./model/detect";
import { deadlineError, isOcrError, OcrError } from "./model/ocr-error";
import { readImageInfo } from "./model/image-info";
import { checkTiffPage, readTiffPages, squareHeight } from "./model/tiff";
import { availableLanguages, chooseLanguages, type LanguageChoice } from "./model/languages";
import { parsePageSelection } from "./model/pages";
import { OcrPool, type Admission, type JobAdmission } from "./pool/pool";
import type { InspectPdfResult, PageResult, ReadLimits, ReadPdfPageJob, ReadTiffPageJob } from "./model/protocol";

/*
 * A request's document read through the engine pool: `openDocument` checks it before anything is charged,
 * `extract` reads it. The process-wide pool (`getOcrPool`) is started here. A job's pages: job-pages.ts.
 */

/**
 * What a page read from its PDF's text layer (or blank) costs against `MAX_PDF_PAGES`, the synchronous limit on
 * pages that need OCR: ~30 ms of text layer against 1–3 s of OCR (docs/decisions.md#synchronous-limit).
 */
export const TEXT_PAGE_WEIGHT = 0.1;

export interface EngineLimits {
  /** Pages needing OCR one request reads; a text-layer page counts `TEXT_PAGE_WEIGHT` (so 10× as many in all). */
  maxPdfPages: number;
  maxImagePixels: number;
  /** Most bytes one PDF stream may inflate to. */
  maxStreamBytes: number;
  /** Most processor time (ms) opening a PDF, or drawing one of its pages, may take. */
  maxPdfWorkMs: number;
}

/** The configuration a document is opened with: its limits, languages and default deadline. */
export type OpenEnv = Pick<Env, "MAX_PDF_PAGES" | "OCR_LANGUAGES" | "OCR_DEFAULT_LANGUAGE" | "REQUEST_DEADLINE_MS">;

export interface OpenOptions {
  /** The configuration (the request context's; a script or a test passes the process's). */
  env: OpenEnv;
  /** PDF page selection, e.g. `"1-3,5"`; all pages by default. */
  pages?: string;
  /** `auto` (default), or Tesseract codes such as `eng`, `eng+fra`. */
  language?: string;
  limits?: Partial<EngineLimits>;
  /** The engine's settings (the request context's `settings.ocr`): the limits `limits` does not give. Default: the constants. */
  ocr?: OcrSettings;
  /** Epoch ms; past it the work stops with a `deadline` error. Default: now + `REQUEST_DEADLINE_MS`. */
  deadline?: number;
  /** The request's signal (lib/request-scope.ts): when it aborts, the work stops and answers with its reason. */
  signal?: AbortSignal;
  /**
   * For a caller that can read the document later as a job (MCP's `extract_text`): past the bound on work
   * (`limits.maxPdfPages`), or when the duration model expects the reading of its pages (more than one) to end after
   * `by` (epoch ms), the document
   * is not opened but described, with `overWork: true` — no `too_many_pages`, no `overloaded`. Unset: such a
   * document is refused.
   */
  fit?: { by: number };
  /** Most pages a selection may hold. Default: `maxPdfPages / TEXT_PAGE_WEIGHT` (every page from a text layer). */
  maxPages?: number;
  /** The engine processes to use (default: the process-wide pool). */
  pool?: OcrPool;
  /**
   * Whose document it is (an account id, opaque here): waiting work is served round-robin by tenant, so one tenant's
   * many or slow documents do not hold up the others'. Default: each document its own.
   */
  tenant?: string;
  /** Measure each OCR page's processor time per stage in the engine process (`page.trace.profile`; the bench). */
  profile?: boolean;
}

export interface ExtractOptions {
  /** Epoch ms; past it the work stops with a `deadline` error. Default: the deadline `openDocument` was given. */
  deadline?: number;
  /** Default: the signal `openDocument` was given. */
  signal?: AbortSignal;
}

/** A validated document: type, page count and the pages that will be read are known; no OCR has run. */
export interface OpenedDocument {
  type: FileType;
  /** Pages in the file. */
  pageCount: number;
  /** 1-based pages that `extract` will read: what a request is charged for. */
  selectedPages: number[];
  /** The languages it is read in (`options.language`, parsed once). */
  language: LanguageChoice;
  /**
   * With `fit` only: its OCR work passes `limits.maxPdfPages` (`work`), or its reading is expected to end after
   * `fit.by` (`time`). The document is then described, not open (`extract` must not be called): a job reads it.
   */
  overWork: false | "work" | "time";
  /** Expected time (ms) `extract` takes from now, from the duration model (`OcrPool.estimateRead`). */
  estimateMs: number;
  extract(options?: ExtractOptions): Promise<ExtractedDocument>;
  /** Close the document in the engine processes that hold it. */
  close(): Promise<void>;
}

const POOL_KEY = Symbol.for("ocr-service.pool");
type PoolHolder = { [POOL_KEY]?: OcrPool };

/**
 * The Tesseract instance inside an engine process is replaced after this many engine jobs: its wasm heap only grows
 * (what one large page needed stays).
 */
const TESSERACT_WORKER_MAX_JOBS = 200;
/**
 * How long starting one engine process (and loading its Tesseract instance) may take before it counts as failed: well
 * above a start on a loaded machine, below a request's deadline.
 */
const ENGINE_START_TIMEOUT_MS = 30_000;

/** The process-wide engine pool (kept on globalThis so dev-server reloads and bundle copies share one). */
export function getOcrPool(): OcrPool {
  const holder = globalThis as PoolHolder;
  if (!holder[POOL_KEY]) {
    const env = getEnv();
    // A process-wide singleton: the process's settings (lib/settings/installed.ts), as `getEnv()`.
    const settings = ocrSettings(installedOverrides<OcrSettings>("ocr"));
    holder[POOL_KEY] = new OcrPool({
      size: env.OCR_ENGINE_PROCESSES,
      inspectSize: settings.inspectProcesses,
      queueLimit: settings.queueLimit,
      maxJobsPerWorker: TESSERACT_WORKER_MAX_JOBS,
      createTimeoutMs: ENGINE_START_TIMEOUT_MS,
      memoryMb: env.OCR_ENGINE_MEMORY_MB,
      engines: env.OCR_ENGINES,
      keepTesseract: settings.keepTesseractForPaddle,
      tesseract: env.OCR_TESSERACT,
      ...(env.OCR_TESSERACT_LIBRARY && { tesseractLibrary: env.OCR_TESSERACT_LIBRARY }),
      ...(env.OCR_MODEL_DIR && { modelDir: env.OCR_MODEL_DIR }),
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
export async function openDocument(bytes: Uint8Array, options: OpenOptions): Promise<OpenedDocument> {
  const { env } = options;
  const settings = options.ocr ?? ocrSettings();
  const limits: EngineLimits = {
    maxPdfPages: options.limits?.maxPdfPages ?? env.MAX_PDF_PAGES,
    maxImagePixels: options.limits?.maxImagePixels ?? settings.maxImagePixels,
    maxStreamBytes: options.limits?.maxStreamBytes ?? settings.maxStreamBytes,
    maxPdfWorkMs: options.limits?.maxPdfWorkMs ?? settings.maxPdfWorkMs,
  };
  const readLimits: ReadLimits = {
    maxImagePixels: limits.maxImagePixels,
    maxStreamBytes: limits.maxStreamBytes,
    maxWorkMs: limits.maxPdfWorkMs,
  };
  const tenant = options.tenant;
  const available = availableLanguages(env.OCR_LANGUAGES);
  const language = chooseLanguages(options.language, env.OCR_DEFAULT_LANGUAGE, available);
  const type = detectFileType(bytes);
  const pool = options.pool ?? getOcrPool();
  const openDeadline = options.deadline ?? Date.now() + env.REQUEST_DEADLINE_MS;
  const openSignal = options.signal;
  const profile = options.profile === true;
  const work = { language, available, limits: readLimits, profile, ...(tenant !== undefined && { tenant }) };
  const maxPages = options.maxPages ?? Math.floor(limits.maxPdfPages / TEXT_PAGE_WEIGHT);

  if (type === "tiff") {
    // Every page of a TIFF needs OCR: the request's page limit counts them all. Each selected page's limits are
    // checked here, from the file's directories, before any page is decoded.
    const pages = readTiffPages(bytes);
    const selected = parsePageSelection(options.pages, pages.length, options.fit ? maxPages : limits.maxPdfPages);
    for (const number of selected) checkTiffPage(pages[number - 1]!, limits.maxImagePixels);
    const firstPage = pages[selected[0]! - 1]!;
    const pixels = firstPage.width * squareHeight(firstPage);
    const estimateMs = pool.estimateRead("read-tiff-page", selected.length, { pixels, firstAlone: language.auto });
    const overWork =
      selected.length > limits.maxPdfPages ? "work" : pastFit(options.fit, estimateMs, selected.length) && "time";
    if (overWork)
      return notOpened({ type, pageCount: pages.length, selectedPages: selected, language, estimateMs }, overWork);
    const admission = pool.admit("ocr", pool.estimate("read-tiff-page", pixels), openDeadline);
    const docId = `doc_${randomBytes(9).toString("base64url")}`;
    const session = pool.session();
    const inspected: InspectPdfResult = {
      pageCount: pages.length,
      selected,
      done: [],
      ocr: selected.map((number) => ({ number })),
    };
    return {
      type,
      pageCount: pages.length,
      selectedPages: selected,
      language,
      overWork,
      estimateMs,
      extract: ({ deadline = openDeadline, signal = openSignal } = {}) =>
        extractPages({
          pool,
          bytes,
          docId,
          session,
          inspected,
          deadline,
          signal,
          admission,
          kind: "read-tiff-page",
          ...work,
        }),
      close: async () => {
        admission.release();
        pool.release(docId);
      },
    };
  }

  if (type !== "pdf") {
    const pixels = checkImageSize(bytes, type, limits.maxImagePixels);
    parsePageSelection(options.pages, 1);
    const estimateMs = pool.estimate("read-image", pixels);
    const described = {
      type,
      pageCount: 1,
      selectedPages: [1],
      language,
      estimateMs: pool.estimateRead("read-image", 1, { pixels }),
    };
    const admission = pool.admit("ocr", estimateMs, openDeadline);
    return {
      ...described,
      overWork: false,
      extract: async ({ deadline = openDeadline, signal = openSignal } = {}) => {
        // Admitted when opened (before the request was charged): its place is taken now, not judged again.
        const result = await pool.run(
          "ocr",
          { kind: "read-image", bytes, type, language, available, limits: readLimits, ...(profile && { profile }) },
          { deadline, signal, admission: { kind: "admitted", place: admission }, estimateMs, pixels, tenant },
        );
        return { pages: [withProfile(result)], pageCount: 1 };
      },
      close: async () => admission.release(),
    };
  }

  const docId = `doc_${randomBytes(9).toString("base64url")}`;
  const session = pool.session();
  try {
    // The inspect process is watched from the server: pdf.js may be stuck in a page that draws without end, where
    // nothing inside the process gets to run.
    const cpuBudgetMs = pdfWorkBudgetMs(bytes, limits.maxPdfWorkMs);
    const inspected = await pool.run(
      "inspect",
      {
        kind: "inspect-pdf",
        doc: { id: docId, bytes },
        pages: options.pages,
        // The limit counts work, not pages: a page read from its text layer costs a tenth of one OCR'd.
        maxPages,
        maxWork: {
          ocrPages: limits.maxPdfPages,
          textPageWeight: TEXT_PAGE_WEIGHT,
          past: options.fit ? "report" : "refuse",
        },
        limits: readLimits,
      },
      {
        deadline: openDeadline,
        signal: openSignal,
        session,
        tenant,
        cpuBudgetMs,
        overBudget: `Opening this PDF needs more than ${Math.round(cpuBudgetMs / 1000)} s of processing, the limit per document (its pages draw too much, such as forms drawn inside forms)`,
      },
    );
    const estimateMs = pool.estimateRead("read-pdf-page", inspected.ocr.length, { firstAlone: language.auto });
    const described = { type, pageCount: inspected.pageCount, selectedPages: inspected.selected, language, estimateMs };
    if (inspected.overWork === true || pastFit(options.fit, estimateMs, inspected.ocr.length)) {
      pool.release(docId);
      return notOpened(described, inspected.overWork === true ? "work" : "time");
    }
    const admission =
      inspected.ocr.length > 0 ? pool.admit("ocr", pool.estimate("read-pdf-page"), openDeadline) : undefined;
    return {
      ...described,
      overWork: false,
      extract: ({ deadline = openDeadline, signal = openSignal } = {}) =>
        extractPages({
          pool,
          bytes,
          docId,
          session,
          inspected,
          deadline,
          signal,
          admission,
          kind: "read-pdf-page",
          ...work,
        }),
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
  options: OpenOptions & ExtractOptions,
): Promise<ExtractedDocument> {
  const opened = await openDocument(bytes, options);
  try {
    return await opened.extract(options);
  } finally {
    await opened.close();
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

/** A page read by an engine process, with its stage profile (when one was asked for) in its trace. */
function withProfile({ page, profile }: PageResult): ExtractedPage {
  return profile ? { ...page, trace: { ...page.trace, profile } } : page;
}

/**
 * With `fit`: the reading of more than one page of OCR is expected to end after `fit.by`. One page is read now
 * whatever its estimate: a job would read it no sooner, and the request's deadline still bounds it.
 */
function pastFit(fit: OpenOptions["fit"], estimateMs: number, ocrPages: number): boolean {
  return fit !== undefined && ocrPages > 1 && Date.now() + estimateMs > fit.by;
}

/** A document whose work passed the bound or the budget (`fit`): described, not open; a job reads it. */
function notOpened(
  described: Omit<OpenedDocument, "extract" | "close" | "overWork">,
  why: "work" | "time",
): OpenedDocument {
  return {
    ...described,
    overWork: why,
    extract: () => Promise.reject(new OcrError("too_many_pages", "This document has more work than one request reads")),
    close: async () => undefined,
  };
}

/** An image's pixels, read from its header: `image_too_large` past `maxPixels` (before anything is decoded). */
export function checkImageSize(bytes: Uint8Array, type: Exclude<FileType, "pdf" | "tiff">, maxPixels: number): number {
  const info = readImageInfo(bytes, type);
  if (info.width * info.height > maxPixels) {
    throw new OcrError(
      "image_too_large",
      `The image is ${info.width}×${info.height} pixels; the limit is ${Math.round(maxPixels / 1e6)} megapixels`,
    );
  }
  return info.width * info.height;
}

/**
 * Processor time (of the inspect process's main thread) opening a PDF may take — its structure check reads every
 * stream, its blank-page check draws every page without a text layer: `baseMs` (`settings.ocr.maxPdfWorkMs`) and a
 * second per MB of file — the same for a request, a job's acceptance and a job's pages. An 80-page 35 MB scan took
 * 15 s of it (21 s of the whole process) on two cores loaded twentyfold: 0.42 s per MB (issue 39 point 6: an 80-page
 * 10.9 MB scan had 10 s in all, and was refused on a busy machine); a hostile file is small and draws without end.
 */
export function pdfWorkBudgetMs(bytes: Uint8Array, baseMs: number): number {
  return baseMs + (bytes.byteLength / 1_000_000) * 1000;
}

interface PageWork {
  pool: OcrPool;
  /** How each page is read: a PDF page drawn by pdf.js, or a TIFF page decoded. */
  kind: "read-pdf-page" | "read-tiff-page";
  /** Held since the document was opened; its first page takes it. */
  admission?: Admission;
  bytes: Uint8Array;
  docId: string;
  session: string;
  inspected: InspectPdfResult;
  deadline: number;
  signal?: AbortSignal;
  language: LanguageChoice;
  available: string[];
  limits: ReadLimits;
  tenant?: string;
  profile: boolean;
}

/**
 * The pages the inspection could not finish (a TIFF: all of them) go to the OCR processes, all at once (the pool
 * serves requests round-robin, so a long document does not starve others). In `auto` mode the first scanned page
 * decides the language of the rest. The first failure drops the pages still waiting.
 */
async function extractPages(work: PageWork): Promise<ExtractedDocument> {
  const { pool, inspected, session } = work;
  // Nothing starts past the deadline, or once the request's signal aborted (pages read from text layers included).
  if (work.signal?.aborted) throw work.signal.reason;
  if (Date.now() >= work.deadline) throw deadlineError();
  const pages = new Map<number, ExtractedPage>(inspected.done.map((page) => [page.number, page]));
  let language = work.language;
  let place = work.admission;
  const readPage = async ({ number, textLayer }: InspectPdfResult["ocr"][number]): Promise<void> => {
    // The first page takes the place its document was admitted with; the later ones wait their turn.
    const admission: JobAdmission = place ? { kind: "admitted", place } : { kind: "follows" };
    place = undefined;
    const page = {
      doc: { id: work.docId, bytes: work.bytes },
      number,
      language,
      available: work.available,
      limits: work.limits,
    };
    const options = { deadline: work.deadline, signal: work.signal, session, admission, tenant: work.tenant };
    const result =
      work.kind === "read-tiff-page"
        ? await pool.run(
            "ocr",
            { kind: "read-tiff-page", ...page, ...(work.profile && { profile: true }) } satisfies ReadTiffPageJob,
            options,
          )
        : await pool.run(
            "ocr",
            {
              kind: "read-pdf-page",
              ...page,
              ...(textLayer && { textLayer }),
              ...(work.profile && { profile: true }),
            } satisfies ReadPdfPageJob,
            options,
          );
    language = result.language;
    pages.set(number, withProfile(result));
  };

  const queue = [...inspected.ocr];
  if (language.auto && queue.length > 1) await readPage(queue.shift()!);
  try {
    await Promise.all(queue.map(readPage));
  } catch (error) {
    pool.cancel(
      session,
      isOcrError(error) ? error : new OcrError("engine_failed", "The OCR engine failed", { cause: error }),
    );
    throw error;
  }
  return { pages: inspected.selected.map((n) => pages.get(n)!), pageCount: inspected.pageCount };
}
