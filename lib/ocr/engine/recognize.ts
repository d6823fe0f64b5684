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
} from "../model/document";
import type { TesseractReader } from "./tesseract";
import { drawGrey, type GreyRaster, type RasterSource, type Rect } from "./raster";
import { analyzeInk, flattenMargins, glyphCoverage, type Glyph, type InkAnalysis } from "./text-size";
import { makesLines } from "./orientation";
import { profiled, profiledAsync, type ProfileStage } from "../model/profile";

/**
 * Text-size normalization. Tesseract's models read body text best at about 300 DPI (x-height ≈ 20 px).
 * Scans at 100 DPI or less lose strokes when Tesseract binarizes them; photos with huge text waste time.
 * So the glyph height is measured first and the page rescaled into a comfortable band, and Tesseract is
 * told 300 DPI so its layout thresholds match. Measured (docs/decisions.md#text-size-normalization): mean CER 0.228 → 0.163, word F1
 * 0.754 → 0.810 against handing the original file to Tesseract.
 */
const TARGET_TEXT_HEIGHT = 22;
const MIN_TEXT_HEIGHT = 13;
const MAX_TEXT_HEIGHT = 48;
const MAX_UPSCALE = 3;
/** Longest side of the raster the glyphs are measured on. */
const ANALYSIS_MAX_SIDE = 2200;
/** Pixels handed to Tesseract at most (its wasm heap holds several copies). */
const MAX_OCR_PIXELS = 36_000_000;

/**
 * Automatic page segmentation (PSM 3) keeps columns apart (single-block mode interleaves them: CER 0.5–0.8
 * on multi-column pages), but on some receipts and sparse pages it drops text. When the recognized words
 * cover too little of the glyph-like ink, the page is read again as one uniform block (PSM 6) and the
 * better-scoring reading kept.
 */
const PSM_AUTO = "3";
const PSM_BLOCK = "6";
const MIN_COVERAGE = 0.8;

/**
 * Rescue pass. A page read with low confidence (faded receipts, noisy forms) is read again at 1.5× the
 * scale, and the reading Tesseract itself scores higher (Σ characters × confidence) is kept. On the benchmark's
 * receipts and forms (docs/decisions.md#rescue-pass) this raised mean word F1 0.746 → 0.760 and lowered CER 0.184 → 0.173; clean pages
 * (confidence ≥ 80) never pay for it.
 */
const RESCUE_BELOW_CONFIDENCE = 80;
const RESCUE_SCALE = 1.5;
const MAX_RESCUE_PIXELS = 16_000_000;

export interface PreparedRaster {
  /** What the raster was drawn from (a rescue pass draws it again at another scale). */
  source: RasterSource;
  /** What Tesseract reads: the `crop` region of the source, scaled by `scale`. */
  raster: GreyRaster;
  crop: Rect;
  scale: number;
  /** Size of the whole source (image or rendered page), in source pixels. */
  sourceWidth: number;
  sourceHeight: number;
  analysis: InkAnalysis;
  /** The raster `analysis` was measured on (its glyph boxes are in its pixels). */
  analysisRaster: GreyRaster;
  /** Analysis raster pixels per source pixel. */
  analysisScale: number;
  /**
   * Draws the `crop` region of the page at `width`×`height`, when the page is not `source` as it is (a page turned
   * and straightened while drawing, lib/ocr/engine/straighten.ts); a rescue pass draws with it too.
   */
  draw?: DrawGrey;
}

/** Draws the `crop` region (default: all) of a page at `width`×`height`, in grey. */
export type DrawGrey = (width: number, height: number, crop?: Rect) => GreyRaster;

export function chooseScale(textHeight: number | null, width: number, height: number): number {
  let scale = 1;
  if (textHeight !== null && textHeight < MIN_TEXT_HEIGHT)
    scale = Math.min(MAX_UPSCALE, TARGET_TEXT_HEIGHT / textHeight);
  else if (textHeight !== null && textHeight > MAX_TEXT_HEIGHT) scale = TARGET_TEXT_HEIGHT / textHeight;
  const maxScale = Math.sqrt(MAX_OCR_PIXELS / (width * height));
  return Math.min(scale, maxScale);
}

/**
 * The region worth reading on a mostly blank page: the content box plus a margin of a few text heights (a
 * line of text on a blank 17 MP page becomes a strip: memory and time). Only for mostly blank pages:
 * cropping an ordinary page changes Tesseract's page-wide statistics (its global threshold, its column
 * finding) and measurably cost word F1 on forms and receipts (docs/decisions.md#crop-blank-pages).
 */
const MAX_CROPPED_AREA = 0.25;

function contentCrop(analysis: InkAnalysis, analysisScale: number, width: number, height: number): Rect {
  const whole = { x: 0, y: 0, width, height };
  const box = analysis.content;
  if (!box) return whole;
  const textHeight = (analysis.textHeight ?? 20) / analysisScale;
  const pad = Math.max(4 * textHeight, 0.02 * Math.max(width, height));
  const x0 = Math.max(0, Math.floor(box.x0 / analysisScale - pad));
  const y0 = Math.max(0, Math.floor(box.y0 / analysisScale - pad));
  const x1 = Math.min(width, Math.ceil((box.x1 + 1) / analysisScale + pad));
  const y1 = Math.min(height, Math.ceil((box.y1 + 1) / analysisScale + pad));
  if ((x1 - x0) * (y1 - y0) > MAX_CROPPED_AREA * width * height) return whole;
  return { x: x0, y: y0, width: x1 - x0, height: y1 - y0 };
}

/** Measure the glyphs on a bounded-size copy, then draw the (cropped, rescaled) raster Tesseract will read. */
export function prepareRaster(source: RasterSource, width: number, height: number, draw?: DrawGrey): PreparedRaster {
  const drawPage: DrawGrey = draw ?? ((w, h, crop) => drawGrey(source, w, h, crop));
  const analysisScale = Math.min(1, ANALYSIS_MAX_SIDE / Math.max(width, height));
  const { analysisRaster, analysis } = profiled("text-size", () => {
    const analysisRaster = drawPage(
      Math.max(1, Math.round(width * analysisScale)),
      Math.max(1, Math.round(height * analysisScale)),
    );
    return { analysisRaster, analysis: analyzeInk(analysisRaster, makesLines) };
  });
  const crop = contentCrop(analysis, analysisScale, width, height);
  const textHeight = analysis.textHeight === null ? null : analysis.textHeight / analysisScale;
  let scale = chooseScale(textHeight, crop.width, crop.height);
  const whole = crop.width === width && crop.height === height;
  if (whole && Math.abs(scale - analysisScale) < 0.02) scale = analysisScale;
  // Drawn when first read: a page turned or straightened before it is read (lib/ocr/engine/straighten.ts) never needs it.
  let raster: GreyRaster | null =
    whole && scale === analysisScale ? flattenMargins(analysisRaster, analysis.margins) : null;
  const drawRaster = () =>
    profiled("rescale", () =>
      flattenMargins(
        drawPage(Math.max(1, Math.round(crop.width * scale)), Math.max(1, Math.round(crop.height * scale)), crop),
        analysis.margins,
      ),
    );
  return {
    source,
    get raster() {
      return (raster ??= drawRaster());
    },
    crop,
    scale,
    sourceWidth: width,
    sourceHeight: height,
    analysis,
    analysisRaster,
    analysisScale,
    ...(draw && { draw }),
  };
}

export interface RecognizeContext {
  /** The process's Tesseract, native or tesseract.js (tesseract.ts). */
  pool: TesseractReader;
  langs: string[];
  deadline: number;
  /**
   * Whether the page's further Tesseract passes (the block re-read and the rescue pass) wait for the caller: a page
   * another recognizer will read too does not pay for passes whose reading that one usually replaces. The caller
   * runs `retryReading` if it keeps Tesseract's reading after all.
   */
  deferRetries?: (reading: PageReading) => boolean;
}

export interface PageReading {
  page: ExtractedPage;
  /** Σ characters × confidence of credible words: compares two readings of the same page. */
  score: number;
  psm: string;
  coverage: number;
  /** Only the first pass ran: the others were left to the caller (`deferRetries`). */
  retriesDeferred?: boolean;
}

/**
 * Recognize a prepared raster with automatic segmentation, re-reading it as a block when text was missed and at a
 * larger scale when Tesseract was unsure.
 */
export async function recognizeRaster(
  prepared: PreparedRaster,
  number: number,
  context: RecognizeContext,
): Promise<PageReading> {
  if (isBlank(prepared.analysis)) return blankReading(prepared, number);
  const first = await readOnce(prepared, number, context, PSM_AUTO, "tesseract-first");
  const { crop } = prepared;
  first.page.trace = {
    scale: Math.round(prepared.scale * 100) / 100,
    crop: `${crop.x},${crop.y} ${crop.width}x${crop.height} of ${prepared.sourceWidth}x${prepared.sourceHeight}`,
    psm: first.psm,
    coverage: Math.round(first.coverage * 100) / 100,
    langs: context.langs.join("+"),
    passes: 1,
    firstConfidence: first.page.confidence,
  };
  const retries = first.coverage < MIN_COVERAGE || rescueScale(prepared, first) !== null;
  if (retries && context.deferRetries?.(first)) return { ...first, retriesDeferred: true };
  return retryReading(prepared, first, number, context);
}

/**
 * The passes after the first: the block re-read when the words cover too little of the ink, then the rescue pass
 * when the reading's confidence is low; the reading Tesseract scores higher is kept each time. `first` is the first
 * pass's reading of `prepared` (what recognizeRaster returns when it defers them).
 */
export async function retryReading(
  prepared: PreparedRaster,
  first: PageReading,
  number: number,
  context: RecognizeContext,
): Promise<PageReading> {
  const trace = { ...first.page.trace };
  const { retriesDeferred: _deferred, ...firstReading } = first;
  let best: PageReading = firstReading;
  let passes = 1;
  if (first.coverage < MIN_COVERAGE) {
    best = pickBetter(best, await readOnce(prepared, number, context, PSM_BLOCK, "block-reread"));
    passes++;
  }
  const rescue = profiled("rescue", () => rescueRaster(prepared, best));
  if (rescue) {
    const again = await readOnce(rescue, number, context, best.psm, "rescue");
    passes++;
    if (again.score > best.score) {
      best = again;
      trace.scale = Math.round(rescue.scale * 100) / 100;
    }
  }
  best.page.trace = { ...trace, psm: best.psm, passes };
  return best;
}

/**
 * Share of the page's glyph-like ink that `page`'s words cover (its boxes normalized to the source): what the
 * coverage of a Tesseract reading measures, for a reading by another recognizer.
 */
export function pageCoverage(prepared: PreparedRaster, page: ExtractedPage): number {
  const { analysisScale, sourceWidth, sourceHeight } = prepared;
  const width = Math.round(sourceWidth * analysisScale);
  const height = Math.round(sourceHeight * analysisScale);
  const boxes: Glyph[] = [];
  for (const block of page.blocks) {
    for (const line of block.lines) {
      for (const word of line.words) {
        const [x0, y0, x1, y1] = word.bbox;
        boxes.push({ x0: x0 * width, y0: y0 * height, x1: x1 * width, y1: y1 * height });
      }
    }
  }
  return glyphCoverage(prepared.analysis, boxes, width, height);
}

/** The scale of a rescue pass, or null when the reading is good enough or a larger raster would be too big. */
function rescueScale(prepared: PreparedRaster, reading: PageReading): number | null {
  if (reading.page.blocks.length === 0 || reading.page.confidence >= RESCUE_BELOW_CONFIDENCE) return null;
  const { crop } = prepared;
  const scale = Math.min(prepared.scale * RESCUE_SCALE, Math.sqrt(MAX_RESCUE_PIXELS / (crop.width * crop.height)));
  return scale < prepared.scale * 1.2 ? null : scale;
}

function rescueRaster(prepared: PreparedRaster, reading: PageReading): PreparedRaster | null {
  const scale = rescueScale(prepared, reading);
  if (scale === null) return null;
  const { crop } = prepared;
  const width = Math.max(1, Math.round(crop.width * scale));
  const height = Math.max(1, Math.round(crop.height * scale));
  const raster = prepared.draw ? prepared.draw(width, height, crop) : drawGrey(prepared.source, width, height, crop);
  return { ...prepared, raster: flattenMargins(raster, prepared.analysis.margins), scale };
}

/** Nothing that could be a mark: a blank page (or a blank PDF page a scanner inserted) needs no OCR. */
export function isBlank(analysis: InkAnalysis): boolean {
  return analysis.glyphs.length === 0 && analysis.content === null;
}

function blankReading(prepared: PreparedRaster, number: number): PageReading {
  const page = ocrPageOf(
    { number, width: prepared.sourceWidth, height: prepared.sourceHeight, engine: "tesseract" },
    [],
    [],
  );
  page.trace = { scale: 1, psm: "blank", coverage: 1, passes: 0 };
  return { page, score: 0, psm: "blank", coverage: 1 };
}

function pickBetter(a: PageReading, b: PageReading): PageReading {
  return b.score > a.score ? b : a;
}

async function readOnce(
  prepared: PreparedRaster,
  number: number,
  context: RecognizeContext,
  psm: string,
  stage: ProfileStage,
): Promise<PageReading> {
  const { raster, crop, scale, sourceWidth, sourceHeight, analysisScale } = prepared;
  const { tsv, hocr } = await profiledAsync(stage, () =>
    context.pool.recognizeOutput({
      image: raster,
      hocr: true,
      langs: context.langs,
      params: { tessedit_pageseg_mode: psm, user_defined_dpi: "300", debug_file: "/dev/null" },
      deadline: context.deadline,
      pixels: raster.width * raster.height,
    }),
  );
  // Raster pixels → source pixels: undo the scale, then the crop offset.
  const toSource = ([x0, y0, x1, y1]: PixelBox): PixelBox => [
    x0 / scale + crop.x,
    y0 / scale + crop.y,
    x1 / scale + crop.x,
    y1 / scale + crop.y,
  ];
  const parsed = parseTsv(tsv, {
    number,
    width: sourceWidth,
    height: sourceHeight,
    toSource,
    baselines: hocr === undefined ? undefined : hocrBaselines(hocr),
  });
  const boxes: Glyph[] = parsed.wordBoxes.map(([x0, y0, x1, y1]) => ({
    x0: x0 * analysisScale,
    y0: y0 * analysisScale,
    x1: x1 * analysisScale,
    y1: y1 * analysisScale,
  }));
  const coverage = glyphCoverage(
    prepared.analysis,
    boxes,
    Math.round(sourceWidth * analysisScale),
    Math.round(sourceHeight * analysisScale),
  );
  return { page: parsed.page, score: parsed.score, psm, coverage };
}

type PixelBox = [number, number, number, number];

interface ParsedTsv {
  page: ExtractedPage;
  score: number;
  /** Word boxes in source pixels. */
  wordBoxes: PixelBox[];
}

interface WordRow {
  text: string;
  confidence: number;
  /** In source pixels. */
  px: PixelBox;
}

export interface TsvPage {
  number: number;
  /** Source size in pixels: what the page reports and what boxes are normalized by. */
  width: number;
  height: number;
  /** Maps a raster box to source pixels (crop and scale undone). */
  toSource?: (box: PixelBox) => PixelBox;
  /** Tesseract's line baselines by line box (`hocrBaselines`), for the lines' `baseline`. */
  baselines?: Map<string, Baseline>;
}

/** hOCR's `baseline slope offset`: y = slope·(x − left) + offset from the line box's bottom-left corner (raster pixels). */
interface Baseline {
  slope: number;
  offset: number;
}

/** The baselines of Tesseract's hOCR lines (any line class), keyed by the line box `left top right bottom`. */
export function hocrBaselines(hocr: string): Map<string, Baseline> {
  const baselines = new Map<string, Baseline>();
  for (const match of hocr.matchAll(
    /class='ocr_(?:line|header|caption|textfloat)'[^>]*title="bbox (\d+ \d+ \d+ \d+); baseline (-?[\d.e-]+) (-?[\d.e-]+)/g,
  )) {
    const slope = Number(match[2]);
    const offset = Number(match[3]);
    if (Number.isFinite(slope) && Number.isFinite(offset)) baselines.set(match[1]!, { slope, offset });
  }
  return baselines;
}

/** A word's part of a reading's score (`PageReading.score`): its characters × confidence, when credible (≥ 40). */
export function wordScore(text: string, confidence: number): number {
  return confidence >= 40 ? (text.length * confidence) / 100 : 0;
}

/**
 * Tesseract TSV → the document model. Columns: level, page, block, paragraph, line, word, left, top, width,
 * height, conf, text. Tesseract's paragraphs become our blocks (the unit markdown needs); lines and words
 * keep Tesseract's reading order.
 */
export function parseTsv(
  tsv: string,
  { number, width, height, toSource = (box) => box, baselines }: TsvPage,
): ParsedTsv {
  const paragraphs = new Map<string, Map<string, WordRow[]>>();
  const wordBoxes: PixelBox[] = [];
  // Each line's baseline, from its row (level 4) box: its two ends in source pixels.
  const lineBaselines = new Map<string, PixelBox>();
  let score = 0;
  for (const row of tsv.split("\n")) {
    const cols = row.split("\t");
    if (cols.length >= 10 && cols[0] === "4" && baselines) {
      const [left, top, right, bottom] = [
        Number(cols[6]),
        Number(cols[7]),
        Number(cols[6]) + Number(cols[8]),
        Number(cols[7]) + Number(cols[9]),
      ];
      const baseline = baselines.get(`${left} ${top} ${right} ${bottom}`);
      if (baseline) {
        const [x0, y0] = toSource([left, bottom + baseline.offset, left, bottom + baseline.offset]);
        const y = bottom + baseline.offset + baseline.slope * (right - left);
        const [x1, y1] = toSource([right, y, right, y]);
        lineBaselines.set(`${cols[2]}.${cols[3]}/${cols[4]}`, [x0, y0, x1, y1]);
      }
      continue;
    }
    if (cols.length < 12 || cols[0] !== "5") continue;
    const text = cols.slice(11).join("\t").trim();
    if (!text) continue;
    const left = Number(cols[6]);
    const top = Number(cols[7]);
    const px = toSource([left, top, left + Number(cols[8]), top + Number(cols[9])]);
    const confidence = Math.max(0, Math.min(100, Number(cols[10])));
    const paragraphKey = `${cols[2]}.${cols[3]}`;
    const lineKey = cols[4]!;
    let lines = paragraphs.get(paragraphKey);
    if (!lines) paragraphs.set(paragraphKey, (lines = new Map()));
    let words = lines.get(lineKey);
    if (!words) lines.set(lineKey, (words = []));
    words.push({ text, confidence, px });
    wordBoxes.push(px);
    score += wordScore(text, confidence);
  }

  const blocks: OcrBlock[] = [];
  const lineStyles: LineStyle[][] = [];
  for (const [paragraphKey, lines] of paragraphs) {
    const blockLines: OcrLine[] = [];
    const styles: LineStyle[] = [];
    for (const [lineKey, rows] of lines) {
      const line = lineOf(
        rows.map((r) => ({ text: r.text, confidence: round1(r.confidence), bbox: normalizeBox(r.px, width, height) })),
      );
      const baseline = lineBaselines.get(`${paragraphKey}/${lineKey}`);
      blockLines.push(baseline ? { ...line, baseline: normalizePoints(baseline, width, height) } : line);
      styles.push({ size: lineGlyphSize(rows) });
    }
    blocks.push(blockOf(blockLines));
    lineStyles.push(styles);
  }
  const page = ocrPageOf({ number, width, height, engine: "tesseract" }, blocks, lineStyles);
  return { page, score, wordBoxes };
}

/** Two points in page pixels → normalized to 0–1 of the page (not clamped: a baseline may run past a page edge). */
function normalizePoints([x0, y0, x1, y1]: PixelBox, width: number, height: number): [number, number, number, number] {
  const round = (v: number) => Math.round(v * 10_000) / 10_000;
  return [round(x0 / width), round(y0 / height), round(x1 / width), round(y1 / height)];
}

/** A line's glyph size in pixels: the median word-box height (words mix x-height and ascenders). */
function lineGlyphSize(rows: WordRow[]): number {
  const heights = rows.map((r) => r.px[3] - r.px[1]).sort((a, b) => a - b);
  return heights[Math.floor(heights.length / 2)] ?? 0;
}
