/**
 * PDFs through pdf.js inside an engine process: loading pdf.js (and refusing a Node it cannot run on), opening a
 * document and its pages, the warnings pdf.js logs, and drawing a page — to check it for ink, or at 300 DPI for OCR —
 * within its work bounds (operations, form depth, processor time; `too_complex` past them). A page's text layer is
 * pdf-text-layer.ts, re-exported here.
 */
import { createRequire } from "node:module";
import path from "node:path";
import { createCanvas, type Canvas } from "@napi-rs/canvas";
import type { PDFDocumentLoadingTask, PDFDocumentProxy, PDFPageProxy } from "pdfjs-dist";
import { isOcrError, OcrError } from "../model/ocr-error";
import { pixelSize } from "./pdf-text-layer";

export { readTextLayer, type TextLayer } from "./pdf-text-layer";

type PdfJs = typeof import("pdfjs-dist");

let pdfjsModule: Promise<PdfJs> | undefined;
/** pdf.js 6's own floor (its package.json `engines`): older Nodes import it, then fail inside every `getDocument`. */
const PDFJS_MIN_NODE: readonly [number, number] = [22, 13];

/**
 * pdf.js is large: load it on the first PDF. The legacy build is the one that runs in Node. On a Node older than pdf.js
 * supports, every document would fail inside `getDocument` (Node 20: "Promise.withResolvers is not a function") and
 * read as a corrupt file; it is an engine fault instead (`engine_failed`, answered 500, and a log line naming the versions).
 */
function loadPdfJs(): Promise<PdfJs> {
  const [major = 0, minor = 0] = process.versions.node.split(".").map(Number);
  if (major < PDFJS_MIN_NODE[0] || (major === PDFJS_MIN_NODE[0] && minor < PDFJS_MIN_NODE[1])) {
    const error = new Error(
      `pdf.js needs Node.js ${PDFJS_MIN_NODE.join(".")} or newer; this engine runs on Node.js ${process.versions.node}`,
    );
    return Promise.reject(new OcrError("engine_failed", "The PDF engine cannot run on this server", { cause: error }));
  }
  pdfjsModule ??= import("pdfjs-dist/legacy/build/pdf.mjs") as Promise<PdfJs>;
  return pdfjsModule;
}

const requireFromApp = createRequire(path.join(process.cwd(), "noop.js"));
let resourceDirs: { standardFontDataUrl: string; cMapUrl: string; wasmUrl: string } | undefined;
/** pdf.js resource directories, as paths with the trailing slash pdf.js insists on. */
function pdfResources() {
  if (!resourceDirs) {
    const root = path.dirname(requireFromApp.resolve("pdfjs-dist/package.json"));
    resourceDirs = {
      standardFontDataUrl: path.join(root, "standard_fonts") + path.sep,
      cMapUrl: path.join(root, "cmaps") + path.sep,
      // Without it JPEG 2000 scans render blank and OCR silently returns nothing.
      wasmUrl: path.join(root, "wasm") + path.sep,
    };
  }
  return resourceDirs;
}

export interface PdfHandle {
  doc: PDFDocumentProxy;
  pageCount: number;
  close(): Promise<void>;
}

export interface PdfOpenOptions {
  /**
   * Most pixels of one image drawn on a page (pdf.js `maxImageSize`): a larger one is not decoded at all, and pdf.js
   * says so in a warning that {@link takePdfWarnings} collects. Default: no limit.
   */
  maxImagePixels?: number;
  /**
   * The caller gives `bytes` away: pdf.js may take (and detach) them instead of a copy. An engine process's document
   * arrives over IPC for pdf.js alone; a 200 MB scan then takes 200 MB in the process, not 400. Default false.
   */
  give?: boolean;
}

/** pdf.js's `VerbosityLevel.WARNINGS`: the removed-image warning is how an image over `maxImageSize` shows. */
const PDFJS_WARNINGS = 1;

/** `getDocument` options besides the data. */
function pdfDocumentOptions({ maxImagePixels }: PdfOpenOptions) {
  return {
    ...pdfResources(),
    cMapPacked: true,
    disableFontFace: true,
    useSystemFonts: false,
    // Fonts' PostScript is interpreted, never compiled with `new Function` (CVE-2024-4367 was that path).
    isEvalSupported: false,
    maxImageSize: maxImagePixels ?? -1,
    verbosity: PDFJS_WARNINGS,
  };
}

const warnings: string[] = [];
const MAX_WARNINGS = 100;

/**
 * pdf.js reports through `console.warn("Warning: …")` (in Node it runs in this thread, as a "fake worker"). The
 * engine process routes those lines here instead of its log; the reader looks for the ones that matter.
 */
export function notePdfWarning(message: string): void {
  if (warnings.length < MAX_WARNINGS) warnings.push(message);
}

/** The pdf.js warnings since the last call. */
export function takePdfWarnings(): string[] {
  return warnings.splice(0);
}

/** Whether pdf.js removed an image for being over `maxImageSize` (see {@link PdfOpenOptions}). */
export function removedOversizedImage(pdfWarnings: string[]): boolean {
  return pdfWarnings.some((warning) => warning.includes("Image exceeded maximum allowed size"));
}

export async function openPdf(bytes: Uint8Array, options: PdfOpenOptions = {}): Promise<PdfHandle> {
  const pdfjs = await loadPdfJs();
  let task: PDFDocumentLoadingTask | undefined;
  try {
    // pdf.js takes ownership (and detaches) the buffer it is given: hand it a copy, unless the caller gives it away.
    task = pdfjs.getDocument({ data: options.give ? bytes : new Uint8Array(bytes), ...pdfDocumentOptions(options) });
    const doc = await task.promise;
    if (doc.numPages < 1) throw new OcrError("unreadable", "The PDF has no pages");
    const loading = task;
    return { doc, pageCount: doc.numPages, close: () => loading.destroy() };
  } catch (error) {
    await task?.destroy().catch(() => {});
    if (isOcrError(error)) throw error;
    const name = error instanceof Error ? error.name : "";
    if (name === "PasswordException") {
      throw new OcrError("encrypted", "The PDF is encrypted with a password", { cause: error });
    }
    throw new OcrError("unreadable", "The PDF is corrupt or truncated and could not be read", { cause: error });
  }
}

export async function getPdfPage(handle: PdfHandle, number: number): Promise<PDFPageProxy> {
  try {
    return await handle.doc.getPage(number);
  } catch (error) {
    throw new OcrError("unreadable", `Page ${number} of the PDF is corrupt`, { cause: error });
  }
}

/** The page's size in pixels at 300 DPI (what a text-layer page reports, and what OCR renders). */
function pagePixelSize(page: PDFPageProxy): { width: number; height: number; scale: number } {
  const viewport = page.getViewport({ scale: 1, rotation: 0 });
  return pixelSize(viewport.width, viewport.height, ((page.rotate % 360) + 360) % 360);
}

/**
 * Bounds on the work of drawing one page. A page can be built to draw without end: 32 form XObjects each drawing the
 * next twice make 2³² drawings from 6 KB, and pdf.js has no limit of its own (it expands every form where it is drawn).
 * Measured on the corpus' PDFs: at most 6,178 operations and 2 levels of forms on a page; drawing the nested-forms
 * page reached 1,000,000 operations only after 98 s (each drawing clipped through 32 levels).
 */
export interface PageWork {
  /** Most operations on the page, forms expanded (each kept in memory until the page is drawn). */
  maxOperations: number;
  /** Deepest nesting of form XObjects. */
  maxFormDepth: number;
  /** Most processor time drawing the page may take, ms. */
  maxCpuMs: number;
}

export const DEFAULT_PAGE_WORK: PageWork = { maxOperations: 1_000_000, maxFormDepth: 16, maxCpuMs: 10_000 };

/** How often (in operations) drawing checks the processor time it has used. */
const CPU_CHECK_EVERY = 256;

/**
 * pdf.js's `operationsFilter`, called for every operation it draws, used to stop a page past its bounds: it throws an
 * `OcrError` (`too_complex`), which ends the rendering (pdf.js cancels the page's operator list with it).
 */
async function boundedDrawing(
  pageNumber: number,
  work: PageWork,
): Promise<(index: number, list: { fnArray: number[] }) => boolean> {
  const { OPS } = await loadPdfJs();
  const started = cpuMs();
  let drawn = 0;
  let depth = 0;
  const tooComplex = (what: string) => new OcrError("too_complex", `Page ${pageNumber} of the PDF ${what}`);
  return (index, list) => {
    const op = list.fnArray[index];
    if (op === OPS.paintFormXObjectBegin && ++depth > work.maxFormDepth) {
      throw tooComplex(`nests forms more than ${work.maxFormDepth} deep, the limit`);
    }
    if (op === OPS.paintFormXObjectEnd) depth--;
    // Operations received count, not only those drawn: pdf.js keeps them all until the page is done.
    if (list.fnArray.length > work.maxOperations) {
      throw tooComplex(`draws more than ${work.maxOperations.toLocaleString("en-US")} operations, the limit per page`);
    }
    if (++drawn % CPU_CHECK_EVERY === 0 && cpuMs() - started > work.maxCpuMs) {
      throw tooComplex(
        `needs more than ${Math.round(work.maxCpuMs / 1000)} s of processing to draw, the limit per page`,
      );
    }
    return true;
  };
}

/** This thread's processor time (ms): the drawing's own, not the helper threads' (the collector's, Skia's). */
function cpuMs(): number {
  const { user, system } = process.threadCpuUsage();
  return (user + system) / 1000;
}

/** Resolution of the blank-page check. */
const INK_CHECK_SCALE = 0.5; // 36 DPI
/** …lowered for huge pages (a 200-inch page at 36 DPI would be a 52-megapixel canvas). */
const INK_CHECK_MAX_PIXELS = 2_000_000;
/** A pixel darker than this is a mark; lighter ones are paper (and rendering noise). */
const INK_LEVEL = 235;

/**
 * Whether anything visible is drawn on the page, from a 36-DPI rendering (a few milliseconds): a page with no
 * text layer and no ink is blank, and skips the 300-DPI rendering and OCR. A page past its work bounds is `too_complex`.
 */
export async function pageHasInk(page: PDFPageProxy, work: PageWork = DEFAULT_PAGE_WORK): Promise<boolean> {
  const unit = page.getViewport({ scale: 1 });
  const scale = Math.min(INK_CHECK_SCALE, Math.sqrt(INK_CHECK_MAX_PIXELS / Math.max(1, unit.width * unit.height)));
  const viewport = page.getViewport({ scale });
  const canvas = createCanvas(Math.max(1, Math.ceil(viewport.width)), Math.max(1, Math.ceil(viewport.height)));
  try {
    const operationsFilter = await boundedDrawing(page.pageNumber, work);
    await page.render({ canvas: canvas as unknown as HTMLCanvasElement, viewport, operationsFilter }).promise;
    const rgba = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height).data;
    for (let i = 0; i < rgba.length; i += 4) {
      // Transparent pixels are paper (pdf.js draws on a transparent canvas unless told otherwise).
      if (rgba[i + 3]! > 0 && Math.min(rgba[i]!, rgba[i + 1]!, rgba[i + 2]!) < INK_LEVEL) return true;
    }
    return false;
  } catch (error) {
    if (isOcrError(error)) throw error;
    return true; // when in doubt, read it
  } finally {
    canvas.width = 0;
    canvas.height = 0;
  }
}

/** The page at 300 DPI (lower for oversized pages), within its work bounds (`too_complex` past them). */
export async function renderPdfPage(page: PDFPageProxy, work: PageWork = DEFAULT_PAGE_WORK): Promise<Canvas> {
  const { width, height, scale } = pagePixelSize(page);
  const canvas = createCanvas(width, height);
  const viewport = page.getViewport({ scale });
  try {
    const operationsFilter = await boundedDrawing(page.pageNumber, work);
    // pdf.js types want a DOM canvas; in Node it draws through @napi-rs/canvas's compatible API.
    await page.render({ canvas: canvas as unknown as HTMLCanvasElement, viewport, operationsFilter }).promise;
  } catch (error) {
    canvas.width = 0;
    canvas.height = 0;
    if (isOcrError(error)) throw error;
    throw new OcrError("unreadable", `Page ${page.pageNumber} of the PDF could not be rendered`, { cause: error });
  }
  return canvas;
}
