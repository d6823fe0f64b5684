import { z } from "zod";
import type { StageProfile } from "./profile";

/** `[x0, y0, x1, y1]` normalized to 0–1 of the page, so scans and text-layer pages compare directly. */
const bboxSchema = z
  .tuple([z.number(), z.number(), z.number(), z.number()])
  .describe("[x0, y0, x1, y1], normalized to 0–1 of the page width and height");
export type BBox = z.infer<typeof bboxSchema>;

const confidence = z.number().min(0).max(100).describe("0–100; character-weighted mean of word confidences");

const ocrWordSchema = z.object({
  text: z.string(),
  confidence,
  bbox: bboxSchema,
  review: z
    .literal(true)
    .optional()
    .describe(
      "present (true) when the word needs a second look: its confidence is low, or the two recognizers read it differently (`alternative`)",
    ),
  alternative: z
    .string()
    .optional()
    .describe("where the two recognizers disagree on the word: the other one's reading"),
});
export type OcrWord = z.infer<typeof ocrWordSchema>;

/**
 * Words read with a confidence under this need a second look (`review`) on a page Tesseract read. PaddleOCR's
 * confidences run higher (on corpus-dev, of its words read at 80–90 a third were wrong; of Tesseract's, one in six), so its own bar is
 * higher: `REVIEW_BELOW_PADDLE`. Calibrated on corpus-dev (`npm run bench -- --review`, docs/decisions.md#review-marking).
 */
export const REVIEW_BELOW = 75;
export const REVIEW_BELOW_PADDLE = 88;
/** A word the other reader read differently needs a look unless its reader was this sure of it. */
export const DISPUTED_SURE = 99;

/**
 * Whether a recognized word needs a second look: a low confidence for its reader, or another reading of it
 * (`alternative`) — always when the two readers disagree on where the word ends (the other reading holds it with more,
 * or has a space in it), otherwise unless the kept reading was near certain.
 */
export function needsReview(
  word: Pick<OcrWord, "confidence" | "alternative" | "text">,
  engine: OcrEngine | undefined = "tesseract",
): boolean {
  const { alternative, text, confidence } = word;
  if (alternative !== undefined && alternative !== text) {
    const bounds = alternative.includes(" ") || alternative.toLowerCase().includes(text.toLowerCase());
    if (bounds || confidence < DISPUTED_SURE) return true;
  }
  return confidence < (engine === "paddle" ? REVIEW_BELOW_PADDLE : REVIEW_BELOW) && /[\p{L}\p{N}]/u.test(text);
}

/** A page's words marked for review (`review: true`); text-layer pages are the PDF's own text, never marked. */
export function markReview<P extends Pick<OcrPage, "source" | "blocks" | "engine">>(page: P): P {
  if (page.source !== "ocr") return page;
  return {
    ...page,
    blocks: page.blocks.map((block) => ({
      ...block,
      lines: block.lines.map((line) => ({
        ...line,
        words: line.words.map((word) => {
          const { review: _review, ...rest } = word;
          return needsReview(rest, page.engine) ? { ...rest, review: true as const } : rest;
        }),
      })),
    })),
  };
}

const ocrLineSchema = z.object({
  text: z.string(),
  confidence,
  bbox: bboxSchema,
  baseline: z
    .tuple([z.number(), z.number(), z.number(), z.number()])
    .optional()
    .describe(
      "[x0, y0, x1, y1]: the line's baseline from its left end to its right end, normalized like bbox; where the recognizer gave one (Tesseract)",
    ),
  words: z.array(ocrWordSchema),
});
export type OcrLine = z.infer<typeof ocrLineSchema>;

const ocrBlockSchema = z.object({
  text: z.string(),
  confidence,
  bbox: bboxSchema,
  lines: z.array(ocrLineSchema),
});
export type OcrBlock = z.infer<typeof ocrBlockSchema>;

export const ocrEngineSchema = z.enum(["tesseract", "paddle"]);
export type OcrEngine = z.infer<typeof ocrEngineSchema>;

const pageSourceSchema = z.enum(["ocr", "text-layer"]);

const ocrPageSchema = z.object({
  number: z.number().int().min(1).describe("1-based page number in the original document"),
  width: z.number().int().describe("pixel width the page was read at"),
  height: z.number().int().describe("pixel height the page was read at"),
  source: pageSourceSchema.describe("`text-layer`: the PDF's own text; `ocr`: recognized from pixels"),
  engine: ocrEngineSchema
    .optional()
    .describe(
      "OCR pages: the recognizer whose reading this is (`tesseract`, or `paddle` where PaddleOCR read it better)",
    ),
  rotation: z
    .union([z.literal(0), z.literal(90), z.literal(180), z.literal(270)])
    .describe("degrees the page as sent was turned clockwise to read it upright (0, 90, 180 or 270)"),
  skew: z
    .number()
    .describe(
      "degrees it was then turned clockwise to straighten its lines (−10 to 10; 0 when it was straight enough)",
    ),
  confidence,
  text: z.string(),
  blocks: z.array(ocrBlockSchema),
});
export type OcrPage = z.infer<typeof ocrPageSchema>;

/** The document every renderer reads. `JSON.parse(extractedText)` of a `json` response gives exactly this. */
export const ocrDocumentSchema = z.object({
  pages: z.array(ocrPageSchema),
});
export type OcrDocument = z.infer<typeof ocrDocumentSchema>;

/**
 * Extra layout facts the markdown renderer uses but the public JSON does not carry: per line, the font size
 * (text-layer pages) or the glyph height in pixels (scans), both relative within a page.
 */
export interface LineStyle {
  size: number;
  bold?: boolean;
  monospace?: boolean;
}

/** How a page was read (for the bench and debugging; not part of the public document). */
export interface PageTrace {
  scale?: number;
  crop?: string;
  psm?: string;
  coverage?: number;
  langs?: string;
  /** Passes through Tesseract (PSM retry and language re-read add passes). */
  passes?: number;
  /** The mean confidence of Tesseract's first pass (what decides the second reading). */
  firstConfidence?: number;
  /** The second recognizer read the page too: which reading was kept. */
  second?: OcrEngine;
  /** How the page's way up was decided: the glyphs' verdict, and whether a reading upside down was tried (kept). */
  orientation?: string;
  /** A photo's sheet (lib/ocr/engine/paper.ts): its share of the photo, and the words of its edge dropped. */
  paper?: string;
  /** CPU milliseconds per stage in the engine process (only when the reading was asked to be profiled). */
  profile?: StageProfile;
}

/**
 * A page plus renderer-only hints, indexed like `page.blocks[b].lines[l]`. `rotation` and `skew` are absent on pages
 * built before the engine turned pages (job results stored then) and mean 0.
 */
export interface ExtractedPage extends Omit<OcrPage, "rotation" | "skew"> {
  rotation?: OcrPage["rotation"];
  skew?: number;
  lineStyles: LineStyle[][];
  trace?: PageTrace;
}

export interface ExtractedDocument {
  pages: ExtractedPage[];
  /** Pages in the file (for PDFs, before page selection and the page limit). */
  pageCount: number;
}

/** Character-weighted mean confidence of words; `fallback` when there are no characters. */
function weightedConfidence(words: Iterable<{ text: string; confidence: number }>, fallback = 0): number {
  let sum = 0;
  let chars = 0;
  for (const word of words) {
    const n = word.text.length;
    sum += word.confidence * n;
    chars += n;
  }
  return chars === 0 ? fallback : round1(sum / chars);
}

export function round1(value: number): number {
  return Math.round(value * 10) / 10;
}

export function round4(value: number): number {
  return Math.round(value * 10_000) / 10_000;
}

export function unionBBox(boxes: Iterable<BBox>): BBox {
  let x0 = Infinity;
  let y0 = Infinity;
  let x1 = -Infinity;
  let y1 = -Infinity;
  for (const [a, b, c, d] of boxes) {
    if (a < x0) x0 = a;
    if (b < y0) y0 = b;
    if (c > x1) x1 = c;
    if (d > y1) y1 = d;
  }
  return Number.isFinite(x0) ? [x0, y0, x1, y1] : [0, 0, 0, 0];
}

/** A box in page pixels `[x0, y0, x1, y1]` → the document's box, normalized to 0–1 of a `width`×`height` page. */
export function normalizeBox(
  [x0, y0, x1, y1]: readonly [number, number, number, number],
  width: number,
  height: number,
): BBox {
  const clamp = (v: number) => Math.min(1, Math.max(0, v));
  return [round4(clamp(x0 / width)), round4(clamp(y0 / height)), round4(clamp(x1 / width)), round4(clamp(y1 / height))];
}

/** A line of the document from its words (text, confidence and box follow from them). */
export function lineOf(words: OcrWord[]): OcrLine {
  return {
    text: words.map((w) => w.text).join(" "),
    confidence: weightedConfidence(words),
    bbox: unionBBox(words.map((w) => w.bbox)),
    words,
  };
}

/** A block of the document from its lines. */
export function blockOf(lines: OcrLine[]): OcrBlock {
  return {
    text: lines.map((l) => l.text).join("\n"),
    confidence: weightedConfidence(lines.flatMap((l) => l.words)),
    bbox: unionBBox(lines.map((l) => l.bbox)),
    lines,
  };
}

/** An OCR page from its blocks (and the renderer's line styles, indexed like the blocks' lines). */
export function ocrPageOf(
  page: Pick<ExtractedPage, "number" | "width" | "height"> & { engine: OcrEngine },
  blocks: OcrBlock[],
  lineStyles: LineStyle[][],
): ExtractedPage {
  return {
    ...page,
    source: "ocr",
    confidence: weightedConfidence(blocks.flatMap((b) => b.lines.flatMap((l) => l.words))),
    text: blocks.map((b) => b.text).join("\n\n"),
    blocks,
    lineStyles,
  };
}

/** Strip renderer-only hints: the public document. */
export function toPublicDocument(document: ExtractedDocument): OcrDocument {
  return {
    pages: document.pages.map(({ lineStyles: _lineStyles, trace: _trace, rotation = 0, skew = 0, ...page }) => {
      const { number, width, height, ...rest } = markReview(page);
      return { number, width, height, rotation, skew, ...rest };
    }),
  };
}
