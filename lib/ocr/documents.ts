import { randomBytes } from "node:crypto";
import type { Env } from "@/lib/env";
import { ocrSettings, type OcrSettings } from "./model/settings";
import type { ExtractedDocument, ExtractedPage } from "./model/document";
import { detectFileType, type FileType } from "./model/detect";
import { deadlineError, fromOcrErrorData, isOcrError, OcrError } from "./model/ocr-error";
import { readImageInfo } from "./model/image-info";
import { checkTiffPage, readTiffPages, squareHeight } from "./model/tiff";
import { availableLanguages, chooseLanguages, type LanguageChoice } from "./model/languages";
import { formatPageRanges, parsePageSelection } from "./model/pages";
import type { OcrPool } from "./pool/pool";
import type { Admission, JobAdmission } from "./pool/admission";
import type { EngineJob, InspectPdfResult, PageResult, ReadLimits } from "./model/protocol";

/*
 * The engine client: a document read through the engine processes — only through the pool and the messages of
 * model/protocol.ts — whoever reads it, a request now or a job's pages in the background. Three steps:
 * `describeDocument` (type, pages, selection, language; for a PDF its structure, and with `textLayers` its text
 * layers and blank pages in the same pass), `inspectPages` (a PDF's text layers and blank pages, a chunk at a time)
 * and `readPage` (one page by OCR). The one switch on the file type is `describeDocument`'s; `pageJob` names the
 * engine job of a page. `openDocument` and `extractDocument` put the steps together for a document read now.
 */

/**
 * What a page read from its PDF's text layer (or blank) costs against `MAX_PDF_PAGES`, the synchronous limit on
 * pages that need OCR: ~30 ms of text layer against 1–3 s of OCR (docs/decisions.md#synchronous-limit).
 */
export const TEXT_PAGE_WEIGHT = 0.1;

/** A document in the engine processes: its bytes, and the name they hold it by between its pages. */
export interface EngineDocument {
  /** Names the document in the engine processes that hold it between pages (a job's: one per job). */
  docId: string;
  bytes: Uint8Array;
  type: FileType;
}

/** A page that needs OCR, with its sparse text layer when it has one. */
export type OcrPage = InspectPdfResult["ocr"][number];

export interface EngineLimits {
  /** Pages needing OCR one request reads; a text-layer page counts `TEXT_PAGE_WEIGHT` (so 10× as many in all). */
  maxPdfPages: number;
  maxImagePixels: number;
  /** Most bytes one PDF stream may inflate to. */
  maxStreamBytes: number;
  /** Most processor time (ms) opening a PDF, or drawing one of its pages, may take. */
  maxPdfWorkMs: number;
}

/** What every step is given: the engine processes, whose work it is, and the engine's settings. */
interface EngineCall {
  /** The engine processes (the caller's: passed down from the services, never a default here). */
  pool: OcrPool;
  /** Whose document it is (an account id): waiting work is served round-robin by tenant. Default: each its own. */
  tenant?: string;
  /** The engine's settings (the request context's or the runner's `settings.ocr`). Default: the constants. */
  ocr?: OcrSettings;
}

export interface DescribeOptions extends EngineCall {
  /** The configuration: the languages installed and the default one. */
  env: Pick<Env, "OCR_LANGUAGES" | "OCR_DEFAULT_LANGUAGE">;
  /** Page selection, e.g. `"1-3,5"`; all pages by default. */
  pages?: string;
  /** `auto` (default), or Tesseract codes such as `eng`, `eng+fra`. */
  language?: string;
  /** Most pages a selection may hold (`too_many_pages` past it). */
  maxPages: number;
  /**
   * A bound on the pages that need OCR (a read now's `MAX_PDF_PAGES`; a text-layer page counts `TEXT_PAGE_WEIGHT`):
   * past it `too_many_pages` (`refuse`), or the description says `overWork` (`report`). A TIFF's pages all count.
   */
  work?: { ocrPages: number; past: "refuse" | "report" };
  /**
   * Read a PDF's text layers and blank pages in the same pass (a document read now): `inspected` then holds them,
   * and the document stays held in the engine processes under `document.docId` (released by the caller). Without it
   * a PDF's structure only is checked, and nothing stays held.
   */
  textLayers?: { session: string };
  limits?: Partial<EngineLimits>;
  deadline: number;
  signal?: AbortSignal;
}

/** A checked document: what it is and what will be read of it; no OCR has run. */
export interface DescribedDocument {
  type: FileType;
  /** Pages in the file. */
  pageCount: number;
  /** 1-based pages that will be read: what is charged for. */
  selectedPages: number[];
  /** The languages it is read in (`options.language`, parsed once). */
  language: LanguageChoice;
  /** The engine's handle on it (`readPage`, `inspectPages`). */
  document: EngineDocument;
  /** Pixels of its first selected page, when its type tells them without drawing (an image, a TIFF). */
  pixels?: number;
  /**
   * The pages as far as they are known: an image's or a TIFF's all need OCR; a PDF's with `textLayers`, those read
   * from their text layers (or blank) and those that need OCR (past `work`, as far as it looked); a PDF's without,
   * nothing yet (`undefined`).
   */
  inspected?: Pick<InspectPdfResult, "done" | "ocr">;
  /** With `work.past: "report"`: the pages that need OCR pass the bound. */
  overWork: boolean;
}

/**
 * Check everything that can be checked before OCR, so a document can be refused (or charged) first: the type from
 * the magic bytes, an image's size from its header, a TIFF's pages from its directories (bounded work), the
 * language; for a PDF an inspect process checks its structure (inflate bombs, page count and selection), and with
 * `textLayers` reads its text layers and finds its blank pages. Failures are `OcrError`s.
 */
export async function describeDocument(bytes: Uint8Array, options: DescribeOptions): Promise<DescribedDocument> {
  const { pool, env } = options;
  const limits = readLimits(options.ocr, options.limits);
  const language = chooseLanguages(options.language, env.OCR_DEFAULT_LANGUAGE, availableLanguages(env.OCR_LANGUAGES));
  const type = detectFileType(bytes);
  const docId = `doc_${randomBytes(9).toString("base64url")}`;
  const document: EngineDocument = { docId, bytes, type };
  const { work } = options;
  const allOcr = (selectedPages: number[]) => ({ done: [], ocr: selectedPages.map((number) => ({ number })) });

  switch (type) {
    case "tiff": {
      // Every page of a TIFF needs OCR: a bound on OCR work that refuses is the selection's limit. Each selected
      // page's limits are checked here, from the file's directories, before any page is decoded.
      const pages = readTiffPages(bytes);
      const limit = work?.past === "refuse" ? work.ocrPages : options.maxPages;
      const selectedPages = parsePageSelection(options.pages, pages.length, limit);
      for (const number of selectedPages) checkTiffPage(pages[number - 1]!, limits.maxImagePixels);
      const first = pages[selectedPages[0]! - 1]!;
      return {
        type,
        pageCount: pages.length,
        selectedPages,
        language,
        document,
        pixels: first.width * squareHeight(first),
        inspected: allOcr(selectedPages),
        overWork: work !== undefined && selectedPages.length > work.ocrPages,
      };
    }
    case "pdf":
      break;
    default: {
      const pixels = checkImageSize(bytes, type, limits.maxImagePixels);
      const selectedPages = parsePageSelection(options.pages, 1);
      return {
        type,
        pageCount: 1,
        selectedPages,
        language,
        document,
        pixels,
        inspected: allOcr(selectedPages),
        overWork: false,
      };
    }
  }

  const keep = options.textLayers !== undefined;
  try {
    // The inspect process is watched from the server: pdf.js may be stuck in a page that draws without end, where
    // nothing inside the process gets to run. Its budget grows with the file (it reads every stream).
    const cpuBudgetMs = pdfWorkBudgetMs(bytes, limits.maxWorkMs);
    const inspected = await pool.run(
      "inspect",
      {
        kind: "inspect-pdf",
        doc: { id: docId, bytes },
        pages: options.pages,
        maxPages: options.maxPages,
        limits,
        ...(keep
          ? work && {
              // The bound counts work, not pages: a page read from its text layer costs a tenth of one OCR'd.
              maxWork: { ocrPages: work.ocrPages, textPageWeight: TEXT_PAGE_WEIGHT, past: work.past },
            }
          : { structureOnly: true }),
      },
      {
        deadline: options.deadline,
        signal: options.signal,
        tenant: options.tenant,
        ...(keep && { session: options.textLayers!.session }),
        cpuBudgetMs,
        overBudget: keep
          ? `Opening this PDF needs more than ${Math.round(cpuBudgetMs / 1000)} s of processing, the limit per document (its pages draw too much, such as forms drawn inside forms)`
          : "Checking this PDF's structure takes too much processing (its streams or pages are built to be expensive)",
      },
    );
    const overWork = inspected.overWork === true;
    if (!keep || overWork) pool.release(docId);
    return {
      type,
      pageCount: inspected.pageCount,
      selectedPages: inspected.selected,
      language,
      document,
      ...(keep && { inspected: { done: inspected.done, ocr: inspected.ocr } }),
      overWork,
    };
  } catch (error) {
    pool.release(docId);
    throw error;
  }
}

/**
 * The text layers and blank pages of some of a PDF's pages (checked whole by `describeDocument`): those come back
 * read (`done`), the others as pages to OCR; a page that cannot be read is reported in `failed` alone. Any other
 * type's pages all need OCR. Runs in the background lane (after every request's work).
 */
export async function inspectPages(
  document: EngineDocument,
  options: EngineCall & { pages: number[]; deadline: number; session?: string },
): Promise<Pick<InspectPdfResult, "done" | "ocr"> & { failed: Array<{ number: number; error: OcrError }> }> {
  if (document.type !== "pdf") return { done: [], ocr: options.pages.map((number) => ({ number })), failed: [] };
  const limits = readLimits(options.ocr);
  const seconds = Math.round(limits.maxWorkMs / 1000);
  const inspected = await options.pool.run(
    "inspect",
    {
      kind: "inspect-pdf",
      doc: { id: document.docId, bytes: document.bytes },
      pages: formatPageRanges(options.pages),
      maxPages: options.pages.length,
      limits,
      pageFailures: true,
      prechecked: true,
    },
    {
      deadline: options.deadline,
      background: true,
      session: options.session,
      tenant: options.tenant,
      // Opening the document (once per process) comes on top of the pages: as for its description, a second more per MB.
      cpuBudgetMs: pdfWorkBudgetMs(document.bytes, limits.maxWorkMs),
      overBudget: `Reading the text layers of ${options.pages.length === 1 ? `page ${options.pages[0]}` : `${options.pages.length} pages`} of this PDF needs more than ${seconds} s of processing (its pages draw too much, such as forms drawn inside forms)`,
    },
  );
  const failed = (inspected.failed ?? []).map(({ number, error }) => ({ number, error: fromOcrErrorData(error) }));
  return { done: inspected.done, ocr: inspected.ocr, failed };
}

export interface ReadPageOptions extends EngineCall {
  page: OcrPage;
  language: LanguageChoice;
  /** The languages installed (`OCR_LANGUAGES` of the configuration): what `auto` may read it in. */
  languages: Env["OCR_LANGUAGES"];
  deadline: number;
  signal?: AbortSignal;
  session?: string;
  /** In the background lane (a job's page, after every request's), or judged by admission (a request's). */
  background?: boolean;
  /** How a request's page passes admission (the first takes its document's place; the others follow). */
  admission?: JobAdmission;
  /** Pixels of the page when known (an image's, a TIFF's first page's): they scale the estimate. */
  pixels?: number;
  /** Measure the page's processor time per stage (`page.trace.profile`; the bench). */
  profile?: boolean;
  limits?: Partial<EngineLimits>;
}

/** Read one page by OCR: an image's only page, a TIFF's page decoded, a PDF's page drawn. */
export async function readPage(
  document: EngineDocument,
  options: ReadPageOptions,
): Promise<{ page: ExtractedPage; language: LanguageChoice }> {
  const job = pageJob(document, options);
  const result = await options.pool.run("ocr", job, {
    deadline: options.deadline,
    signal: options.signal,
    session: options.session,
    tenant: options.tenant,
    ...(options.background ? { background: true } : options.admission && { admission: options.admission }),
    ...(document.type !== "pdf" && document.type !== "tiff" && { pixels: options.pixels ?? imagePixels(document) }),
  });
  return { page: withProfile(result), language: result.language };
}

/** The engine job that reads a page of `document`. */
function pageJob(
  document: EngineDocument,
  options: ReadPageOptions,
): Extract<EngineJob, { kind: "read-image" | "read-tiff-page" | "read-pdf-page" }> {
  const common = {
    language: options.language,
    available: availableLanguages(options.languages),
    limits: readLimits(options.ocr, options.limits),
    ...(options.profile && { profile: true }),
  };
  const doc = { id: document.docId, bytes: document.bytes };
  switch (document.type) {
    case "pdf":
      return {
        kind: "read-pdf-page",
        doc,
        number: options.page.number,
        ...common,
        ...(options.page.textLayer && { textLayer: options.page.textLayer }),
      };
    case "tiff":
      return { kind: "read-tiff-page", doc, number: options.page.number, ...common };
    default:
      return { kind: "read-image", bytes: document.bytes, type: document.type, ...common };
  }
}

/**
 * Read `pages` of a described document by OCR, each reported to `onPage` as it is read: all at once (the pool serves
 * sessions round-robin, so a long document does not starve others); in `auto` mode the first page goes alone and
 * decides the language of the rest. The first failure drops the pages still waiting (`pool.cancel(session)`).
 */
export async function readPages(
  document: EngineDocument,
  pages: OcrPage[],
  options: Omit<ReadPageOptions, "page" | "session" | "admission"> & {
    session: string;
    /** The place the document was admitted with (`pool.admit`): its first page takes it, the others follow. */
    place?: Admission;
    onPage?: (page: ExtractedPage, language: LanguageChoice) => void | Promise<void>;
  },
): Promise<ExtractedPage[]> {
  let language = options.language;
  let place = options.place;
  const read: ExtractedPage[] = [];
  const readOne = async (page: OcrPage): Promise<void> => {
    const admission: JobAdmission = place ? { kind: "admitted", place } : { kind: "follows" };
    place = undefined;
    const result = await readPage(document, { ...options, page, language, admission });
    language = result.language;
    read.push(result.page);
    await options.onPage?.(result.page, result.language);
  };
  const queue = [...pages];
  try {
    if (language.auto && queue.length > 1) await readOne(queue.shift()!);
    await Promise.all(queue.map(readOne));
  } catch (error) {
    options.pool.cancel(
      options.session,
      isOcrError(error) ? error : new OcrError("engine_failed", "The OCR engine failed", { cause: error }),
    );
    throw error;
  }
  return read;
}

/** The configuration a document read now is opened with: its limits, languages and default deadline. */
export type OpenEnv = Pick<Env, "MAX_PDF_PAGES" | "OCR_LANGUAGES" | "OCR_DEFAULT_LANGUAGE" | "REQUEST_DEADLINE_MS">;

export interface OpenOptions extends EngineCall {
  /** The configuration (the request context's; a script or a test passes the process's). */
  env: OpenEnv;
  /** PDF page selection, e.g. `"1-3,5"`; all pages by default. */
  pages?: string;
  /** `auto` (default), or Tesseract codes such as `eng`, `eng+fra`. */
  language?: string;
  limits?: Partial<EngineLimits>;
  /** Epoch ms; past it the work stops with a `deadline` error. Default: now + `REQUEST_DEADLINE_MS`. */
  deadline?: number;
  /** The request's signal (lib/request-scope.ts): when it aborts, the work stops and answers with its reason. */
  signal?: AbortSignal;
  /**
   * For a caller that can read the document later as a job (MCP's `extract_text`): past the bound on work
   * (`limits.maxPdfPages`), or when the duration model expects the reading of its pages (more than one) to end after
   * `by` (epoch ms), the document is not opened but described, with `overWork` — no `too_many_pages`, no
   * `overloaded`. Unset: such a document is refused.
   */
  fit?: { by: number };
  /** Most pages a selection may hold. Default: `maxPdfPages / TEXT_PAGE_WEIGHT` (every page from a text layer). */
  maxPages?: number;
  /** Measure each OCR page's processor time per stage in the engine process (`page.trace.profile`; the bench). */
  profile?: boolean;
}

export interface ExtractOptions {
  /** Epoch ms; past it the work stops with a `deadline` error. Default: the deadline `openDocument` was given. */
  deadline?: number;
  /** Default: the signal `openDocument` was given. */
  signal?: AbortSignal;
}

/** A document read now, validated: type, page count and the pages that will be read are known; no OCR has run. */
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

/**
 * A document to read now: `describeDocument` with its text layers, then whether the OCR lane could start it before
 * its deadline (`overloaded` at once otherwise). `extract` reads its pages (`readPages`). Failures are `OcrError`s.
 */
export async function openDocument(bytes: Uint8Array, options: OpenOptions): Promise<OpenedDocument> {
  const { env, pool } = options;
  const maxPdfPages = options.limits?.maxPdfPages ?? env.MAX_PDF_PAGES;
  const openDeadline = options.deadline ?? Date.now() + env.REQUEST_DEADLINE_MS;
  const openSignal = options.signal;
  const session = pool.session();
  const described = await describeDocument(bytes, {
    ...options,
    maxPages: options.maxPages ?? Math.floor(maxPdfPages / TEXT_PAGE_WEIGHT),
    work: { ocrPages: maxPdfPages, past: options.fit ? "report" : "refuse" },
    textLayers: { session },
    deadline: openDeadline,
  });
  const { type, pageCount, selectedPages, language, document, pixels } = described;
  const ocrPages = described.inspected?.ocr ?? [];
  const kind = type === "pdf" ? "read-pdf-page" : type === "tiff" ? "read-tiff-page" : "read-image";
  const estimateMs = pool.estimateRead(kind, ocrPages.length, { pixels, firstAlone: language.auto });
  const release = () => pool.release(document.docId);
  const overWork = described.overWork ? "work" : pastFit(options.fit, estimateMs, ocrPages.length) && "time";
  if (overWork) {
    release();
    return {
      type,
      pageCount,
      selectedPages,
      language,
      estimateMs,
      overWork,
      extract: () =>
        Promise.reject(new OcrError("too_many_pages", "This document has more work than one request reads")),
      close: async () => undefined,
    };
  }
  const admission: Admission | undefined =
    ocrPages.length > 0 ? pool.admit("ocr", pool.estimate(kind, pixels), openDeadline) : undefined;
  return {
    type,
    pageCount,
    selectedPages,
    language,
    estimateMs,
    overWork: false,
    extract: async ({ deadline = openDeadline, signal = openSignal } = {}) => {
      // Nothing starts past the deadline, or once the request's signal aborted (pages read from text layers included).
      if (signal?.aborted) throw signal.reason;
      if (Date.now() >= deadline) throw deadlineError();
      const read = await readPages(document, ocrPages, {
        pool,
        tenant: options.tenant,
        ocr: options.ocr,
        limits: options.limits,
        languages: env.OCR_LANGUAGES,
        language,
        deadline,
        signal,
        session,
        pixels,
        profile: options.profile,
        // Admitted when opened (before the request was charged): its place is taken now, not judged again.
        place: admission,
      });
      const pages = new Map([...(described.inspected?.done ?? []), ...read].map((page) => [page.number, page]));
      return { pages: selectedPages.map((n) => pages.get(n)!), pageCount };
    },
    close: async () => {
      admission?.release();
      release();
    },
  };
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

/** A page of a document drawn for display (the MCP viewer): scaled, JPEG, bounded in bytes. */
export interface PagePreview {
  mimeType: "image/jpeg";
  bytes: Uint8Array;
  width: number;
  height: number;
}

/**
 * Draw page `number` of a document for display, in an inspect process: the page as sent (a stored page's word boxes
 * are normalized to it), at most `maxWidth` pixels wide and `maxBytes` bytes. Nothing is recognized. The document is
 * opened under its own name and released after, so a job's reading never shares it.
 */
export async function renderPagePreview(
  document: EngineDocument,
  options: EngineCall & { number: number; maxWidth: number; maxBytes: number; deadline: number; signal?: AbortSignal },
): Promise<PagePreview> {
  const { pool } = options;
  const limits = readLimits(options.ocr);
  const docId = `view_${randomBytes(9).toString("base64url")}`;
  try {
    return await pool.run(
      "inspect",
      {
        kind: "render-preview",
        doc: { id: docId, bytes: document.bytes },
        type: document.type,
        number: options.number,
        maxWidth: options.maxWidth,
        maxBytes: options.maxBytes,
        limits,
      },
      {
        deadline: options.deadline,
        signal: options.signal,
        tenant: options.tenant,
        ...(document.type === "pdf" && {
          cpuBudgetMs: pdfWorkBudgetMs(document.bytes, limits.maxWorkMs),
          overBudget: `Drawing page ${options.number} of this PDF needs more processing than a page may take`,
        }),
      },
    );
  } finally {
    pool.release(docId);
  }
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

/** The engine's limits on a read: the settings', each overridable (a test's small limit). */
function readLimits(settings: OcrSettings = ocrSettings(), limits: Partial<EngineLimits> = {}): ReadLimits {
  return {
    maxImagePixels: limits.maxImagePixels ?? settings.maxImagePixels,
    maxStreamBytes: limits.maxStreamBytes ?? settings.maxStreamBytes,
    maxWorkMs: limits.maxPdfWorkMs ?? settings.maxPdfWorkMs,
  };
}

/** An image's pixels, read from its header: `image_too_large` past `maxPixels` (before anything is decoded). */
function checkImageSize(bytes: Uint8Array, type: Exclude<FileType, "pdf" | "tiff">, maxPixels: number): number {
  const info = readImageInfo(bytes, type);
  if (info.width * info.height > maxPixels) {
    throw new OcrError(
      "image_too_large",
      `The image is ${info.width}×${info.height} pixels; the limit is ${Math.round(maxPixels / 1e6)} megapixels`,
    );
  }
  return info.width * info.height;
}

function imagePixels(document: EngineDocument): number {
  const info = readImageInfo(document.bytes, document.type as Exclude<FileType, "pdf" | "tiff">);
  return info.width * info.height;
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
