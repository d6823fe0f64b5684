import { createRequire } from "node:module";
import path from "node:path";
import { createCanvas, type Canvas } from "@napi-rs/canvas";
import type { PDFDocumentLoadingTask, PDFDocumentProxy, PDFPageProxy } from "pdfjs-dist";
import type { TextItem, TextStyle } from "pdfjs-dist/types/src/display/api";
import { isOcrError, OcrError } from "../model/ocr-error";
import {
  round4,
  unionBBox,
  type BBox,
  type ExtractedPage,
  type LineStyle,
  type OcrBlock,
  type OcrLine,
  type OcrWord,
} from "../model/document";

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

/** PDF pages are reported (and rendered for OCR) at 300 DPI. */
const PDF_DPI = 300;
/** Rendering cap for oversized pages (posters, drawings): beyond it the DPI is lowered. */
const MAX_RENDER_PIXELS = 36_000_000;

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

/** Unrotated size in points + rotation → displayed size in pixels at 300 DPI (lower for oversized pages). */
function pixelSize(width: number, height: number, rotation: number): { width: number; height: number; scale: number } {
  const [w, h] = rotation === 90 || rotation === 270 ? [height, width] : [width, height];
  let scale = PDF_DPI / 72;
  const pixels = w * h * scale * scale;
  if (pixels > MAX_RENDER_PIXELS) scale *= Math.sqrt(MAX_RENDER_PIXELS / pixels);
  return { width: Math.max(1, Math.round(w * scale)), height: Math.max(1, Math.round(h * scale)), scale };
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

function cpuMs(): number {
  const { user, system } = process.cpuUsage();
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

export interface TextLayer {
  page: ExtractedPage;
  /** Non-whitespace characters in the text layer. */
  chars: number;
  /** Share of those that are unmapped glyphs (U+FFFD, private use, controls): fonts without a usable map. */
  garbage: number;
}

interface Fragment {
  text: string;
  x0: number;
  x1: number;
  top: number;
  bottom: number;
  baseline: number;
  size: number;
  monospace: boolean;
  eol: boolean;
}

interface LineDraft {
  fragments: Fragment[];
  x0: number;
  x1: number;
  top: number;
  bottom: number;
  baseline: number;
  size: number;
}

const GARBAGE = /[\uFFFD\uE000-\uF8FF\u0000-\u0008\u000E-\u001F]/gu;

/** What pdf.js says about a page's text, as plain data (it may come from another thread). */
export interface RawTextPage {
  items: Array<Pick<TextItem, "str" | "transform" | "width" | "height" | "fontName" | "hasEOL">>;
  styles: Record<string, Pick<TextStyle, "ascent" | "descent" | "fontFamily">>;
  /** The unrotated viewport at scale 1: its transform, width and height (PDF points). */
  viewTransform: number[];
  viewWidth: number;
  viewHeight: number;
  /** The page's display rotation in degrees. */
  rotate: number;
}

async function readRawText(page: PDFPageProxy): Promise<RawTextPage> {
  // Lay text out in the page's own (unrotated) space, where lines run as authored; boxes are rotated to the
  // displayed page at the end.
  const viewport = page.getViewport({ scale: 1, rotation: 0 });
  const content = await page.getTextContent();
  const items: RawTextPage["items"] = [];
  for (const item of content.items) {
    if ("str" in item) items.push(item);
  }
  return {
    items,
    styles: content.styles,
    viewTransform: viewport.transform,
    viewWidth: viewport.width,
    viewHeight: viewport.height,
    rotate: page.rotate,
  };
}

export async function readTextLayer(page: PDFPageProxy, number: number): Promise<TextLayer> {
  return layoutTextLayer(await readRawText(page), number);
}

/** `a × b` for PDF's 2×3 affine matrices `[a, b, c, d, e, f]`. */
function multiply(m: number[], n: number[]): number[] {
  const [a = 0, b = 0, c = 0, d = 0, e = 0, f = 0] = m;
  const [p = 0, q = 0, r = 0, s = 0, t = 0, u = 0] = n;
  return [a * p + c * q, b * p + d * q, a * r + c * s, b * r + d * s, a * t + c * u + e, b * t + d * u + f];
}

/**
 * The page's own text as the document model: fragments in content-stream order, joined into lines by
 * baseline, words split on spaces with proportional boxes, lines grouped into blocks by vertical gaps and
 * font-size changes. Font sizes travel along as line styles (markdown headings).
 */
function layoutTextLayer(raw: RawTextPage, number: number): TextLayer {
  const fragments: Fragment[] = [];
  let chars = 0;
  let garbage = 0;
  for (const item of raw.items) {
    const text = item.str;
    if (!text && !item.hasEOL) continue;
    const nonSpace = text.replace(/\s+/g, "");
    chars += nonSpace.length;
    garbage += nonSpace.match(GARBAGE)?.length ?? 0;
    // A text matrix may hold any number (a 400-digit one is Infinity to pdf.js): positions are kept finite, so a box
    // is clamped to the page instead of becoming NaN (null in JSON).
    const tx = multiply(raw.viewTransform, (item.transform as number[]).map(finiteCoordinate));
    const size = Math.hypot(tx[2]!, tx[3]!) || Math.abs(finiteCoordinate(item.height)) || 1;
    const style = raw.styles[item.fontName];
    const ascent = style?.ascent && style.ascent > 0 ? style.ascent : 0.8;
    const descent = style?.descent && style.descent < 0 ? style.descent : -0.2;
    const x0 = tx[4]!;
    const baseline = tx[5]!;
    fragments.push({
      text,
      x0,
      x1: x0 + Math.max(0, finiteCoordinate(item.width)),
      top: baseline - ascent * size,
      bottom: baseline - descent * size,
      baseline,
      size,
      monospace: style?.fontFamily === "monospace",
      eol: item.hasEOL,
    });
  }
  const rotation = ((raw.rotate % 360) + 360) % 360;
  const { width, height } = pixelSize(raw.viewWidth, raw.viewHeight, rotation);
  const pageBox: PageBox = { width: raw.viewWidth, height: raw.viewHeight, rotation };
  const lines = groupLines(fragments);
  const { blocks, lineStyles } = groupBlocks(lines, pageBox);
  const page: ExtractedPage = {
    number,
    width,
    height,
    source: "text-layer",
    confidence: 100,
    text: blocks.map((b) => b.text).join("\n\n"),
    blocks,
    lineStyles,
  };
  return { page, chars, garbage: chars === 0 ? 0 : garbage / chars };
}

function groupLines(fragments: Fragment[]): LineDraft[] {
  const lines: LineDraft[] = [];
  let current: LineDraft | undefined;
  let breakNext = false;
  for (const f of fragments) {
    const blank = f.text.trim() === "";
    if (current && !breakNext) {
      const tolerance = 0.5 * Math.min(f.size, current.size);
      const sameBaseline = Math.abs(f.baseline - current.baseline) <= tolerance;
      const continues = f.x0 >= current.x1 - current.size; // not a jump back to the left margin
      if (blank || (sameBaseline && continues)) {
        if (!blank) {
          current.fragments.push(f);
          current.x1 = Math.max(current.x1, f.x1);
          current.top = Math.min(current.top, f.top);
          current.bottom = Math.max(current.bottom, f.bottom);
        } else if (f.text.length > 0) {
          current.fragments.push({ ...f, text: " " });
        }
        breakNext = f.eol;
        continue;
      }
    }
    breakNext = f.eol;
    if (blank) continue;
    current = { fragments: [f], x0: f.x0, x1: f.x1, top: f.top, bottom: f.bottom, baseline: f.baseline, size: f.size };
    lines.push(current);
  }
  return lines;
}

/** Words of a line with boxes, assuming evenly spaced characters within each fragment. */
interface PageBox {
  width: number;
  height: number;
  /** Clockwise display rotation of the page: 0, 90, 180 or 270. */
  rotation: number;
}

function lineWords(line: LineDraft, page: PageBox): OcrWord[] {
  const words: OcrWord[] = [];
  let text = "";
  let x0 = 0;
  let x1 = 0;
  let prev: Fragment | undefined;
  const flush = () => {
    if (text) {
      words.push({ text, confidence: 100, bbox: normBox([x0, line.top, x1, line.bottom], page) });
    }
    text = "";
  };
  for (const f of line.fragments) {
    // A visible gap between fragments is a space even when the PDF has no space character.
    if (prev && f.x0 - prev.x1 > 0.15 * Math.min(f.size, prev.size)) flush();
    const step = f.text.length > 0 ? (f.x1 - f.x0) / f.text.length : 0;
    for (let i = 0; i < f.text.length; i++) {
      const ch = f.text[i]!;
      if (/\s/.test(ch)) {
        flush();
        continue;
      }
      if (!text) x0 = f.x0 + i * step;
      text += ch;
      x1 = f.x0 + (i + 1) * step;
    }
    prev = f;
  }
  flush();
  return words;
}

function groupBlocks(lines: LineDraft[], page: PageBox): { blocks: OcrBlock[]; lineStyles: LineStyle[][] } {
  const blocks: OcrBlock[] = [];
  const lineStyles: LineStyle[][] = [];
  let blockLines: OcrLine[] = [];
  let styles: LineStyle[] = [];
  let prev: LineDraft | undefined;
  const flush = () => {
    if (blockLines.length > 0) {
      blocks.push({
        text: blockLines.map((l) => l.text).join("\n"),
        confidence: 100,
        bbox: unionBBox(blockLines.map((l) => l.bbox)),
        lines: blockLines,
      });
      lineStyles.push(styles);
    }
    blockLines = [];
    styles = [];
  };
  for (const line of lines) {
    const words = lineWords(line, page);
    if (words.length === 0) continue;
    if (prev) {
      const gap = line.top - prev.bottom;
      const sizeChange = Math.abs(line.size - prev.size) > 0.15 * Math.max(line.size, prev.size);
      const movedUp = line.baseline < prev.baseline - 0.5 * prev.size; // next column or a float
      if (gap > 0.7 * prev.size || sizeChange || movedUp) flush();
    }
    blockLines.push({
      text: words.map((w) => w.text).join(" "),
      confidence: 100,
      bbox: normBox([line.x0, line.top, line.x1, line.bottom], page),
      words,
    });
    styles.push({ size: line.size, monospace: line.fragments.every((f) => f.monospace) });
    prev = line;
  }
  flush();
  return { blocks, lineStyles };
}

/** A box in unrotated page units → normalized to 0–1 of the displayed (rotated) page. */
/** Coordinates past a million points (350 m) are off any page; NaN is nowhere. Keeps every sum and product finite. */
function finiteCoordinate(value: number): number {
  if (Number.isNaN(value)) return 0;
  return Math.min(1e6, Math.max(-1e6, value));
}

function normBox([x0, y0, x1, y1]: BBox, page: PageBox): BBox {
  const clamp = (v: number) => round4(Number.isFinite(v) ? Math.min(1, Math.max(0, v)) : 0);
  const a = x0 / page.width;
  const b = y0 / page.height;
  const c = x1 / page.width;
  const d = y1 / page.height;
  switch (page.rotation) {
    case 90: // clockwise: (x, y) → (1 − y, x)
      return [clamp(1 - d), clamp(a), clamp(1 - b), clamp(c)];
    case 180:
      return [clamp(1 - c), clamp(1 - d), clamp(1 - a), clamp(1 - b)];
    case 270: // (x, y) → (y, 1 − x)
      return [clamp(b), clamp(1 - c), clamp(d), clamp(1 - a)];
    default:
      return [clamp(a), clamp(b), clamp(c), clamp(d)];
  }
}
