/**
 * A PDF page's text layer made into the page model: pdf.js's text items (as plain data, `RawTextPage`) laid out in the
 * page's own unrotated space, grouped into lines by baseline and into blocks by spacing, with word boxes from evenly
 * spaced characters, rotated and normalized to the displayed page; plus how much of it is unmapped glyphs. Also the
 * page's size in pixels at 300 DPI, which the text layer reports and pdf.ts renders at. Opening documents, drawing
 * pages and their work bounds are pdf.ts's.
 */
import type { PDFPageProxy } from "pdfjs-dist";
import type { TextItem, TextStyle } from "pdfjs-dist/types/src/display/api";
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

/** PDF pages are reported (and rendered for OCR) at 300 DPI. */
const PDF_DPI = 300;
/** Rendering cap for oversized pages (posters, drawings): beyond it the DPI is lowered. */
const MAX_RENDER_PIXELS = 36_000_000;

/** Unrotated size in points + rotation → displayed size in pixels at 300 DPI (lower for oversized pages). */
export function pixelSize(
  width: number,
  height: number,
  rotation: number,
): { width: number; height: number; scale: number } {
  const [w, h] = rotation === 90 || rotation === 270 ? [height, width] : [width, height];
  let scale = PDF_DPI / 72;
  const pixels = w * h * scale * scale;
  if (pixels > MAX_RENDER_PIXELS) scale *= Math.sqrt(MAX_RENDER_PIXELS / pixels);
  return { width: Math.max(1, Math.round(w * scale)), height: Math.max(1, Math.round(h * scale)), scale };
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
