import { randomBytes } from "node:crypto";
import type { Env } from "@/lib/env";
import { ocrSettings, type OcrSettings } from "./model/settings";
import type { ExtractedPage } from "./model/document";
import { detectFileType, type FileType } from "./model/detect";
import { fromOcrErrorData, OcrError } from "./model/ocr-error";
import { readImageInfo } from "./model/image-info";
import { checkTiffPage, readTiffPages } from "./model/tiff";
import { availableLanguages, chooseLanguages, type LanguageChoice } from "./model/languages";
import { formatPageRanges, parsePageSelection } from "./model/pages";
import type { OcrPool } from "./pool/pool";
import type { InspectPdfResult, ReadLimits } from "./model/protocol";
import { checkImageSize, getOcrPool, pdfWorkBudgetMs } from "./read";

/*
 * An asynchronous job's document (lib/jobs), read a page at a time in the background: `describeDocument` when the
 * job is accepted (nothing read yet), `inspectJobPages` for the text layers, `readJobPage` for each page to OCR.
 */

/** A document an asynchronous job reads (lib/jobs): its bytes, read from the store once per process. */
export interface JobDocument {
  /** Names the document in the engine processes that hold it between pages: one per job. */
  docId: string;
  bytes: Uint8Array;
  type: FileType;
}

/** What accepting a job needs to know, with nothing read yet: type, page count, the pages it selects, the language. */
export interface DescribedDocument {
  type: FileType;
  pageCount: number;
  selectedPages: number[];
  language: LanguageChoice;
}

/**
 * Check a document for an asynchronous job: type from magic bytes, image size from the header, language, and for a
 * PDF its structure (inflate bombs, page count, selection within `maxPages`) in an inspect process — no text layer,
 * no OCR. Failures are `OcrError`s, as `openDocument`'s.
 */
export async function describeDocument(
  bytes: Uint8Array,
  options: {
    pages?: string;
    language?: string;
    maxPages: number;
    deadline: number;
    signal?: AbortSignal;
    pool?: OcrPool;
    tenant?: string;
    /** The configuration (the request context's): the languages. */
    env: Pick<Env, "OCR_LANGUAGES" | "OCR_DEFAULT_LANGUAGE">;
    /** The engine's settings (the request context's `settings.ocr`). Default: the constants. */
    ocr?: OcrSettings;
  },
): Promise<DescribedDocument> {
  const { env } = options;
  const settings = options.ocr ?? ocrSettings();
  const language = chooseLanguages(options.language, env.OCR_DEFAULT_LANGUAGE, availableLanguages(env.OCR_LANGUAGES));
  const type = detectFileType(bytes);
  if (type === "tiff") {
    const pages = readTiffPages(bytes);
    const selectedPages = parsePageSelection(options.pages, pages.length, options.maxPages);
    for (const number of selectedPages) checkTiffPage(pages[number - 1]!, settings.maxImagePixels);
    return { type, pageCount: pages.length, selectedPages, language };
  }
  if (type !== "pdf") {
    checkImageSize(bytes, type, settings.maxImagePixels);
    return { type, pageCount: 1, selectedPages: parsePageSelection(options.pages, 1), language };
  }
  const pool = options.pool ?? getOcrPool();
  const docId = `doc_${randomBytes(9).toString("base64url")}`;
  try {
    const inspected = await pool.run(
      "inspect",
      {
        kind: "inspect-pdf",
        doc: { id: docId, bytes },
        pages: options.pages,
        maxPages: options.maxPages,
        limits: jobReadLimits(settings),
        structureOnly: true,
      },
      {
        deadline: options.deadline,
        signal: options.signal,
        tenant: options.tenant,
        // The pre-check reads every stream of the file: its budget grows with the file (as a request's does).
        cpuBudgetMs: pdfWorkBudgetMs(bytes, settings.maxPdfWorkMs),
        overBudget:
          "Checking this PDF's structure takes too much processing (its streams or pages are built to be expensive)",
      },
    );
    return { type, pageCount: inspected.pageCount, selectedPages: inspected.selected, language };
  } finally {
    pool.release(docId);
  }
}

/**
 * A job's PDF pages as `inspect` reads them for a request: text-layer and blank pages come back read (`done`), the
 * others as pages to OCR. Runs in the background (after every request's job) with its own deadline.
 */
export async function inspectJobPages(
  document: JobDocument,
  options: {
    pages: number[];
    deadline: number;
    pool?: OcrPool;
    session?: string;
    tenant?: string;
    /** The engine's settings (the runner's). Default: the constants. */
    ocr?: OcrSettings;
  },
): Promise<Pick<InspectPdfResult, "done" | "ocr"> & { failed: Array<{ number: number; error: OcrError }> }> {
  const settings = options.ocr ?? ocrSettings();
  const seconds = Math.round(settings.maxPdfWorkMs / 1000);
  const pool = options.pool ?? getOcrPool();
  const inspected = await pool.run(
    "inspect",
    {
      kind: "inspect-pdf",
      doc: { id: document.docId, bytes: document.bytes },
      pages: formatPageRanges(options.pages),
      maxPages: options.pages.length,
      limits: jobReadLimits(settings),
      pageFailures: true,
      // Checked whole when the job was accepted (describeDocument).
      prechecked: true,
    },
    {
      deadline: options.deadline,
      background: true,
      session: options.session,
      tenant: options.tenant,
      // Opening the document (once per process) comes on top of the pages: as for its acceptance, a second more per MB.
      cpuBudgetMs: pdfWorkBudgetMs(document.bytes, settings.maxPdfWorkMs),
      overBudget: `Reading the text layers of ${options.pages.length === 1 ? `page ${options.pages[0]}` : `${options.pages.length} pages`} of this PDF needs more than ${seconds} s of processing (its pages draw too much, such as forms drawn inside forms)`,
    },
  );
  const failed = (inspected.failed ?? []).map(({ number, error }) => ({ number, error: fromOcrErrorData(error) }));
  return { done: inspected.done, ocr: inspected.ocr, failed };
}

/** Read one page of a job (an image's only page, a PDF or TIFF page), in the background. */
export async function readJobPage(
  document: JobDocument,
  options: {
    number: number;
    language: LanguageChoice;
    textLayer?: ExtractedPage;
    deadline: number;
    pool?: OcrPool;
    session?: string;
    tenant?: string;
    /** The languages installed (`OCR_LANGUAGES` of the configuration). */
    languages: Env["OCR_LANGUAGES"];
    /** The engine's settings (the runner's). Default: the constants. */
    ocr?: OcrSettings;
  },
): Promise<{ page: ExtractedPage; language: LanguageChoice }> {
  const pool = options.pool ?? getOcrPool();
  const limits = jobReadLimits(options.ocr ?? ocrSettings());
  const available = availableLanguages(options.languages);
  const run = { deadline: options.deadline, background: true, session: options.session, tenant: options.tenant };
  if (document.type === "tiff") {
    const doc = { id: document.docId, bytes: document.bytes };
    return pool.run(
      "ocr",
      { kind: "read-tiff-page", doc, number: options.number, language: options.language, available, limits },
      run,
    );
  }
  if (document.type !== "pdf") {
    const info = readImageInfo(document.bytes, document.type);
    return pool.run(
      "ocr",
      { kind: "read-image", bytes: document.bytes, type: document.type, language: options.language, available, limits },
      { ...run, pixels: info.width * info.height },
    );
  }
  return pool.run(
    "ocr",
    {
      kind: "read-pdf-page",
      doc: { id: document.docId, bytes: document.bytes },
      number: options.number,
      language: options.language,
      available,
      limits,
      ...(options.textLayer && { textLayer: options.textLayer }),
    },
    run,
  );
}

/** The engine's limits while it reads a job's pages: the settings', as for a request. */
function jobReadLimits(settings: OcrSettings): ReadLimits {
  return {
    maxImagePixels: settings.maxImagePixels,
    maxStreamBytes: settings.maxStreamBytes,
    maxWorkMs: settings.maxPdfWorkMs,
  };
}

/** A page of a job's document drawn for display (the MCP viewer): scaled, JPEG, bounded in bytes. */
export interface PagePreview {
  mimeType: "image/jpeg";
  bytes: Uint8Array;
  width: number;
  height: number;
}

/**
 * Draw page `number` of a job's document for display, in an inspect process: the page as sent (the stored page's word
 * boxes are normalized to it), at most `maxWidth` pixels wide and `maxBytes` bytes. Nothing is recognized. The
 * document is opened under its own name and released after, so a job's reading never shares it.
 */
export async function renderJobPagePreview(
  document: JobDocument,
  options: {
    number: number;
    maxWidth: number;
    maxBytes: number;
    deadline: number;
    signal?: AbortSignal;
    pool?: OcrPool;
    tenant?: string;
    /** The engine's settings. Default: the constants. */
    ocr?: OcrSettings;
  },
): Promise<PagePreview> {
  const pool = options.pool ?? getOcrPool();
  const settings = options.ocr ?? ocrSettings();
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
        limits: jobReadLimits(settings),
      },
      {
        deadline: options.deadline,
        signal: options.signal,
        tenant: options.tenant,
        ...(document.type === "pdf" && {
          cpuBudgetMs: pdfWorkBudgetMs(document.bytes, settings.maxPdfWorkMs),
          overBudget: `Drawing page ${options.number} of this PDF needs more processing than a page may take`,
        }),
      },
    );
  } finally {
    pool.release(docId);
  }
}
