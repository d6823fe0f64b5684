import {
  blockOf,
  lineOf,
  normalizeBox,
  ocrPageOf,
  round1,
  type ExtractedPage,
  type LineStyle,
  type OcrBlock,
  type OcrLine,
  type OcrWord,
} from "../model/document";
import type { Gap, PaddleReading, PaddleWord, TextBox } from "./paddle";
import type { PageReading, PreparedRaster } from "./recognize";

/**
 * The second recognizer (PaddleOCR, lib/ocr/engine/paddle) and when it reads a page. Tesseract reads every page first; a
 * page it read with a mean word confidence under this is read by PaddleOCR too. Chosen on the benchmark's 20 images
 * by sweeping the threshold 70–92 (docs/decisions.md#second-reading-threshold): 84 gave the lowest mean CER, and the curve is flat
 * between 82 and 88. Tesseract's confidence is the signal because it needs no ground truth, and because where
 * Tesseract is sure (clean scans, book pages) PaddleOCR was never better.
 */
export const SECOND_READING_BELOW_CONFIDENCE = 84;

/**
 * A mean confidence over fewer words than this says little about the page (one line of Times read perfectly scored
 * 75, and PaddleOCR read it worse: "simplc", "latcly"): short pages stay with Tesseract.
 */
export const SECOND_READING_MIN_WORDS = 20;

/**
 * Whether a page's Tesseract reading should be checked against PaddleOCR's. Only English readings: the
 * recognizer's character set has no accented Latin letters (a French page lost its accents: CER 0.025 → 0.160).
 * Blank pages, pages where Tesseract found nothing and pages of a few words are not second-guessed, nor pages
 * Tesseract read as side-by-side columns, whose reading `chooseReading` keeps whatever PaddleOCR reads.
 */
export function wantsSecondReading(
  reading: PageReading,
  langs: readonly string[],
  { below = SECOND_READING_BELOW_CONFIDENCE, accents = false }: { below?: number; accents?: boolean } = {},
): boolean {
  if (!accents && (langs.length !== 1 || langs[0] !== "eng")) return false;
  const words = reading.page.blocks.reduce((n, b) => n + b.lines.reduce((m, l) => m + l.words.length, 0), 0);
  if (words < SECOND_READING_MIN_WORDS) return false;
  return reading.page.confidence < below && !hasColumns(reading.page);
}

/**
 * PaddleOCR's reading replaces Tesseract's only when PaddleOCR was sure of it (character-weighted mean confidence at
 * least PADDLE_SURE), or fairly sure (PADDLE_FAIRLY_SURE) where Tesseract was lost (PADDLE_MARGIN points less sure of
 * its own reading). On corpus-dev's receipts and forms, where PaddleOCR reads better, its confidence is 94–98, and 88
 * on a faded receipt Tesseract read at 52. On generated small, blurred, JPEG-compressed prints (`npx tsx
 * bench/synthetic.ts`) it read worse than Tesseract at 62–87 (Tesseract at 35–83) and better at 83–93 where
 * Tesseract was at 21–22 or PaddleOCR at 92–93 (docs/decisions.md#paddle-choice).
 */
export const PADDLE_SURE = 90;
export const PADDLE_FAIRLY_SURE = 80;
export const PADDLE_MARGIN = 25;

/**
 * The languages PaddleOCR's PP-OCRv6 recognizer reads (its dictionary has Latin-1 and Latin Extended-A): the languages
 * the service offers by default. A page asked in another (an operator's `chi_sim`, `rus`…) is read by Tesseract.
 */
export const PADDLE_LATIN_LANGUAGES: ReadonlySet<string> = new Set(["eng", "fra", "deu", "spa", "ita", "por", "nld"]);

/**
 * PaddleOCR, read first, keeps the page alone when its character-weighted mean confidence is at least this and its
 * words cover PADDLE_FIRST_COVERAGE of the page's glyph-like ink (it missed no text Tesseract would have found).
 * The default is off (over 100: Tesseract reads first, PP-OCRv6 is its second opinion): on corpus-dev, PaddleOCR
 * first at 90 read receipts alone at half the CPU but cost word F1 on forms and the photo and a wasted PaddleOCR pass on
 * every page Tesseract read too (CER 0.115, F1 0.859, 71 s of engine CPU, against 0.115, 0.868, 60 s with Tesseract
 * first; docs/decisions.md#paddle-first). `npm run bench -- --paddle-sure 90` turns it on.
 */
export const PADDLE_FIRST_SURE = 101;
/** PaddleOCR reads first when asked to (PADDLE_FIRST_SURE or the bench's `--paddle-sure` at 100 or less). */
export const PADDLE_FIRST_ON_BELOW = 100;
export const PADDLE_FIRST_COVERAGE = 0.8;

/**
 * Whether PaddleOCR's first reading stands alone (`reading.coverage` is its words' share of the page's ink): sure of
 * it, covering the page's text, SECOND_READING_MIN_WORDS words or more (a short page costs Tesseract little, and
 * PaddleOCR misread a line of Times Tesseract read right: "simplc", "latcly"), and not laid out in columns.
 */
export function paddleSuffices(reading: PageReading, sure = PADDLE_FIRST_SURE): boolean {
  const words = reading.page.blocks.reduce((n, b) => n + b.lines.reduce((m, l) => m + l.words.length, 0), 0);
  if (words < SECOND_READING_MIN_WORDS) return false;
  if (reading.page.confidence < sure || reading.coverage < PADDLE_FIRST_COVERAGE) return false;
  return !sideBySideText(reading.page);
}

/**
 * Side-by-side lines whose rows do not line up (below): this many pairs, and this many per line of the page. Measured
 * on PaddleOCR's readings of corpus-dev (pairs per line, centres half a line height apart): receipts 0–0.21, forms
 * 0–0.31, multi-column pages 0.61 and 1.9, a table 0.55 (docs/decisions.md#paddle-first).
 */
const MISALIGNED_PAIRS = 3;
const MISALIGNED_SHARE = 0.5;
/** Two side-by-side lines' centres this share of the smaller height apart or more: their rows do not line up. */
const MISALIGNED_OFFSET = 0.5;

/**
 * Lines side by side (overlapping rows, separate x-ranges) whose centres are half a line height or more apart:
 * columns of running text, whose lines do not share baselines. PaddleOCR reads one line per detected box and the
 * page's order comes from those boxes alone; Tesseract's page layout finds such columns (corpus-dev's multi-column
 * pages: CER 0.10–0.15 read by Tesseract, 0.11–0.46 by PaddleOCR alone). A receipt's item and price, or a form's label
 * and value, sit on one row and do not count.
 */
export function sideBySideText(page: ExtractedPage): boolean {
  const lines = page.blocks.flatMap((b) => b.lines);
  let misaligned = 0;
  for (let i = 0; i < lines.length; i++) {
    const [ax0, ay0, ax1, ay1] = lines[i]!.bbox;
    for (let j = i + 1; j < lines.length; j++) {
      const [bx0, by0, bx1, by1] = lines[j]!.bbox;
      if (Math.min(ay1, by1) <= Math.max(ay0, by0)) continue;
      if (!(ax1 < bx0 || bx1 < ax0)) continue;
      const height = Math.min(ay1 - ay0, by1 - by0);
      if (Math.abs((ay0 + ay1) / 2 - (by0 + by1) / 2) >= MISALIGNED_OFFSET * height) misaligned++;
    }
  }
  return misaligned >= MISALIGNED_PAIRS && misaligned >= MISALIGNED_SHARE * lines.length;
}

/** Tesseract words under this confidence are not counted as text PaddleOCR should have found (noise read as text). */
const CREDIBLE_CONFIDENCE = 40;

/**
 * Which reading to keep. PaddleOCR's reading order is line by line across the page, so a page Tesseract laid out
 * in side-by-side columns keeps Tesseract's reading (columns would interleave). A PaddleOCR reading with far less
 * text than Tesseract's credible words lost lines (missed detections) and is not kept either. Otherwise PaddleOCR's
 * reading wins when it is sure of it (PADDLE_SURE, PADDLE_MARGIN).
 */
export function chooseReading(tesseract: PageReading, paddle: PageReading): PageReading {
  if (hasColumns(tesseract.page)) return tesseract;
  if (characters(paddle.page, 0) < 0.8 * characters(tesseract.page, CREDIBLE_CONFIDENCE)) return tesseract;
  const confidence = paddle.page.confidence;
  const sure =
    confidence >= PADDLE_SURE ||
    (confidence >= PADDLE_FAIRLY_SURE && confidence - tesseract.page.confidence >= PADDLE_MARGIN);
  return sure ? paddle : tesseract;
}

/** Characters (spaces aside) of the page's words read at `minConfidence` or more. */
function characters(page: ExtractedPage, minConfidence: number): number {
  let count = 0;
  for (const block of page.blocks) {
    for (const line of block.lines) {
      for (const word of line.words)
        if (word.confidence >= minConfidence) count += word.text.replace(/\s+/g, "").length;
    }
  }
  return count;
}

/** Two blocks of three or more lines side by side (overlapping rows, separate x-ranges): a multi-column page. */
function hasColumns(page: ExtractedPage): boolean {
  const tall = page.blocks.filter((b) => b.lines.length >= 3);
  for (let i = 0; i < tall.length; i++) {
    for (let j = i + 1; j < tall.length; j++) {
      const [ax0, ay0, ax1, ay1] = tall[i]!.bbox;
      const [bx0, by0, bx1, by1] = tall[j]!.bbox;
      const overlapY = Math.min(ay1, by1) - Math.max(ay0, by0);
      const apartX = ax1 <= bx0 || bx1 <= ax0;
      if (apartX && overlapY > 0.5 * Math.min(ay1 - ay0, by1 - by0)) return true;
    }
  }
  return false;
}

/** Letters a line recognizer reads for digits and the other way round: l and I for 1, O and o for 0. */
const AS_DIGIT: Readonly<Record<string, string>> = { l: "1", I: "1", O: "0", o: "0" };
/** Digits read for lower-case letters. */
const AS_LOWER: Readonly<Record<string, string>> = { "0": "o", "1": "l" };

/**
 * A word's letters and digits mended where one stands for the other inside a run of the other kind (a line
 * recognizer reads each character from its shape, with no word to check it against): in a run of three digits or
 * more with no other letters, l, I, O and o are digits (`l00100000056` → `100100000056`); a 0 or 1 between two
 * lower-case letters in a run of three letters or more is a letter (`c0ntre` → `contre`, `wi1l` → `will`). Runs
 * that mix letters and digits otherwise (codes in capitals, `SN0012`, `1st`, `A4`) are left as read.
 */
export function lookalikesMended(text: string): string {
  return text.replace(/[\p{L}\p{N}]+/gu, (run) => {
    const digits = run.replace(/\D/gu, "").length;
    const letters = run.length - digits;
    if (digits === 0 || letters === 0) return run;
    if (digits >= 3 && [...run].every((c) => /\d/u.test(c) || c in AS_DIGIT)) {
      return [...run].map((c) => AS_DIGIT[c] ?? c).join("");
    }
    if (letters < 3) return run;
    const chars = [...run];
    const lower = (c: string | undefined) => c !== undefined && /\p{Ll}/u.test(c);
    return chars.map((c, i) => (lower(chars[i - 1]) && lower(chars[i + 1]) ? (AS_LOWER[c] ?? c) : c)).join("");
  });
}

/** A new block starts where the gap to the previous line is larger than this many line heights. */
const BLOCK_GAP = 0.8;

/** PaddleOCR's reading as a page of the document model: boxes in source pixels, normalized like Tesseract's. */
export function paddlePageReading(reading: PaddleReading, prepared: PreparedRaster, number: number): PageReading {
  const { crop, scale, sourceWidth: width, sourceHeight: height } = prepared;
  const toSource = (box: PaddleWord["box"]): PaddleWord["box"] => [
    box[0] / scale + crop.x,
    box[1] / scale + crop.y,
    box[2] / scale + crop.x,
    box[3] / scale + crop.y,
  ];

  const blocks: OcrBlock[] = [];
  const lineStyles: LineStyle[][] = [];
  let lines: OcrLine[] = [];
  let styles: LineStyle[] = [];
  let previous: { bottom: number; height: number } | undefined;
  let score = 0;
  const flush = () => {
    if (lines.length === 0) return;
    blocks.push(blockOf(lines));
    lineStyles.push(styles);
    lines = [];
    styles = [];
  };
  // One line per detected box (the engine orders the page's lines afterwards: lib/ocr/engine/reading-order.ts).
  for (const line of reading.boxes) {
    const source = line.words.filter((w) => w.text.trim()).map((w) => ({ ...w, box: toSource(w.box) }));
    if (source.length === 0) continue;
    const top = Math.min(...source.map((w) => w.box[1]));
    const bottom = Math.max(...source.map((w) => w.box[3]));
    const lineHeight = bottom - top;
    if (previous && top - previous.bottom > BLOCK_GAP * Math.max(lineHeight, previous.height)) flush();
    previous = { bottom, height: lineHeight };
    const words: OcrWord[] = source.map((w) => ({
      text: lookalikesMended(w.text),
      confidence: round1(w.confidence),
      bbox: normalizeBox(w.box, width, height),
    }));
    for (const w of words) if (w.confidence >= 40) score += (w.text.length * w.confidence) / 100;
    lines.push(lineOf(words));
    const heights = source.map((w) => w.box[3] - w.box[1]).sort((a, b) => a - b);
    styles.push({ size: heights[Math.floor(heights.length / 2)] ?? 0 });
  }
  flush();

  const page = ocrPageOf({ number, width, height, engine: "paddle" }, blocks, lineStyles);
  return { page, score, psm: "paddle", coverage: 1 };
}

/**
 * Tesseract words at or above this confidence are kept inside PaddleOCR's reading: a line PaddleOCR detected that
 * Tesseract read entirely at this confidence is not recognized again. On the benchmark's 18 pages that get a second
 * reading: at 90, 35% of the detected lines keep Tesseract's words and PaddleOCR's CPU time falls 16% (28.2 →
 * 23.7 s) with the same accuracy (case-folded CER 0.115, word F1 0.859 → 0.860); at 80, 51% and −25%, but CER
 * 0.116 with 5 of 9 receipts worse (docs/decisions.md#keep-tesseract-words).
 */
export const KEEP_TESSERACT_ABOVE = 90;

/**
 * For PaddleOCR's `known` option: the Tesseract words of a detected box (raster pixels), when Tesseract read the
 * whole box with confidence — every word whose centre lies in the box at `minConfidence` or more, none sticking
 * out of it, and together spanning the box's text (a box grows by ~¾ of its height on each side when detected).
 */
export function confidentTesseractWords(
  reading: PageReading,
  prepared: PreparedRaster,
  minConfidence = KEEP_TESSERACT_ABOVE,
): (box: TextBox) => PaddleWord[] | undefined {
  const words = rasterWords(reading, prepared);
  return (box) => {
    const height = box.y1 - box.y0;
    const inside = wordsInside(words, box);
    if (inside.length === 0) return undefined;
    for (const w of inside) {
      if (w.confidence < minConfidence) return undefined;
      if (w.box[0] < box.x0 - height / 2 || w.box[2] > box.x1 + height / 2) return undefined;
      if (w.box[3] - w.box[1] > 1.5 * height) return undefined;
    }
    const span = Math.max(...inside.map((w) => w.box[2])) - Math.min(...inside.map((w) => w.box[0]));
    if (span < 0.85 * (box.x1 - box.x0 - 1.5 * height)) return undefined;
    return inside.sort((a, b) => a.box[0] - b.box[0]);
  };
}

/**
 * A gap between two Tesseract words narrower than this share of the detected box's height (about 1.5–2 text heights:
 * the detector grows its boxes) is not taken as a word gap: Tesseract splits a misread word at narrower gaps ("JAL AN",
 * "TALAP IA"). Swept on the 11 receipt and form pages of corpus-dev (0, 0.1, 0.15, 0.2, 0.25, with Tesseract's word
 * confidence required ≥ 0, 40, 60, 80): 0.15 and no confidence bound gave the best word F1 on both receipts
 * (0.749 → 0.767) and forms (0.788 → 0.804); docs/decisions.md#paddle-gaps.
 */
export const MIN_GAP_HEIGHT_SHARE = 0.15;

/**
 * For PaddleOCR's `gaps` option: the gaps between consecutive Tesseract words inside a detected box (raster pixels)
 * at least MIN_GAP_HEIGHT_SHARE of its height wide. Tesseract finds word gaps in the ink even where it misreads the
 * letters; PaddleOCR reads the letters better but runs words together.
 */
export function tesseractGaps(reading: PageReading, prepared: PreparedRaster): (box: TextBox) => Gap[] {
  const words = rasterWords(reading, prepared);
  return (box) => {
    const inside = wordsInside(words, box).sort((a, b) => a.box[0] - b.box[0]);
    const minWidth = MIN_GAP_HEIGHT_SHARE * box.h;
    const gaps: Gap[] = [];
    for (let i = 1; i < inside.length; i++) {
      const left = inside[i - 1]!.box[2];
      const right = inside[i]!.box[0];
      if (right - left >= minWidth) gaps.push([left, right]);
    }
    return gaps;
  };
}

/** The reading's words with boxes in the prepared raster's pixels. */
function rasterWords(reading: PageReading, prepared: PreparedRaster): PaddleWord[] {
  const { crop, scale, sourceWidth, sourceHeight } = prepared;
  const words: PaddleWord[] = [];
  for (const block of reading.page.blocks) {
    for (const line of block.lines) {
      for (const word of line.words) {
        const [x0, y0, x1, y1] = word.bbox;
        words.push({
          text: word.text,
          confidence: word.confidence,
          box: [
            (x0 * sourceWidth - crop.x) * scale,
            (y0 * sourceHeight - crop.y) * scale,
            (x1 * sourceWidth - crop.x) * scale,
            (y1 * sourceHeight - crop.y) * scale,
          ],
        });
      }
    }
  }
  return words;
}

/** Words whose centre lies inside the box's bounds. */
function wordsInside(words: PaddleWord[], box: TextBox): PaddleWord[] {
  return words.filter((w) => {
    const cx = (w.box[0] + w.box[2]) / 2;
    const cy = (w.box[1] + w.box[3]) / 2;
    return cx >= box.x0 && cx <= box.x1 && cy >= box.y0 && cy <= box.y1;
  });
}

/** A word as the two readings are compared: case-folded, the punctuation around it dropped (`TOTAL:` is `total`). */
function comparable(text: string): string {
  return text
    .normalize("NFKC")
    .toLowerCase()
    .replace(/^[^\p{L}\p{N}]+|[^\p{L}\p{N}]+$/gu, "");
}

/**
 * A PaddleOCR word less sure than this whose place Tesseract read as one word at KEEP_TESSERACT_ABOVE or more, and
 * differently, is Tesseract's word (PaddleOCR's kept as its `alternative`). On corpus-dev's 9 receipt and form pages
 * whose PaddleOCR reading is kept (PP-OCRv6), 283 words read differently one for one: Tesseract at ≥ 90 where PaddleOCR
 * was under 95, 14 words, Tesseract right on 11 of them and PaddleOCR on 3; at ≥ 80 and under any confidence, 51 and
 * 17 against 16 (docs/decisions.md#paddle-first). The same rule as the lines Tesseract was sure of, word by word.
 */
export const PADDLE_WORD_SURE = 95;

/**
 * Where the two recognizers read a word differently: the kept reading's page with `alternative` set on each such word
 * to the other reading (`needsReview` marks it). The other reading's words standing on a kept word — its centre inside
 * their x-range or theirs inside its, over half of the smaller height in its rows — are its other reading, joined by
 * spaces (one recognizer may split what the other joined); they differ when their letters and digits differ
 * (`comparable`). A word the other recognizer did not read at all, or read only as marks, gets none: it saw nothing
 * there to disagree with. Where PaddleOCR's reading is kept and Tesseract was sure of one word in a word's place that
 * PaddleOCR was not (PADDLE_WORD_SURE), Tesseract's word is kept, PaddleOCR's its alternative. Boxes and confidences
 * of the other words are unchanged.
 */
export function withAlternatives(kept: ExtractedPage, other: ExtractedPage): ExtractedPage {
  const others = other.blocks.flatMap((b) => b.lines.flatMap((l) => l.words));
  if (others.length === 0) return kept;
  const swaps = kept.engine === "paddle" && (other.engine ?? "tesseract") === "tesseract";
  const combined = (word: OcrWord): OcrWord => {
    const [x0, y0, x1, y1] = word.bbox;
    const on = others
      .filter((o) => {
        const [ox0, oy0, ox1, oy1] = o.bbox;
        const [middle, theirs] = [(x0 + x1) / 2, (ox0 + ox1) / 2];
        const across = (middle >= ox0 && middle <= ox1) || (theirs >= x0 && theirs <= x1);
        const down = Math.min(y1, oy1) - Math.max(y0, oy0);
        return across && down > 0.5 * Math.min(y1 - y0, oy1 - oy0);
      })
      .sort((a, b) => a.bbox[0] - b.bbox[0]);
    if (on.length === 0) return word;
    const theirs = comparable(on.map((o) => o.text).join(""));
    if (theirs === "" || theirs === comparable(word.text.replace(/\s+/gu, ""))) return word;
    const sure = on.length === 1 && on[0]!.confidence >= KEEP_TESSERACT_ABOVE && word.confidence < PADDLE_WORD_SURE;
    if (swaps && sure) return { ...on[0]!, alternative: word.text };
    return { ...word, alternative: on.map((o) => o.text).join(" ") };
  };
  let changed = false;
  const blocks = kept.blocks.map((block) =>
    blockOf(
      block.lines.map((line) => {
        const words = line.words.map((word) => {
          const read = combined(word);
          if (read !== word) changed = true;
          return read;
        });
        return { ...lineOf(words), ...(line.baseline && { baseline: line.baseline }) };
      }),
    ),
  );
  if (!changed) return kept;
  const page = ocrPageOf(
    { number: kept.number, width: kept.width, height: kept.height, engine: kept.engine ?? "tesseract" },
    blocks,
    kept.lineStyles,
  );
  return { ...kept, ...page, confidence: kept.confidence };
}
