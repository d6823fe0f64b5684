import { createCanvas, Image, type Canvas } from "@napi-rs/canvas";
import { inkSplitOf, type Glyph, type InkSplit } from "./text-size";
import { releaseSource, toGrey, type GreyRaster, type RasterSource, type Rect } from "./raster";
import { fromTurned, type PageTurn, type Quarter } from "../model/page-turn";

/**
 * Pages in any orientation. Before a page is read, the glyph boxes the text-size analysis found anyway
 * (lib/ocr/engine/text-size.ts) say which way its lines run and how far they are tilted, and which way up the text stands:
 *
 * - **Line direction.** Glyph centres projected across the lines pile up in a few narrow bins (the lines) and spread
 *   evenly along them; the concentration, scaled by an even spread's, is compared at 0° and 90° (±10°). On a page
 *   of a few words, where a line or two have no spread to compare, a glyph's nearest neighbour is its neighbour in
 *   the line instead, and their directions vote.
 * - **Skew.** The glyphs' bottom (and top) edges projected across the lines at angle θ pile up in narrow bins when θ
 *   follows the lines (the baselines); Σn² is searched over ±MAX_SKEW around the line direction.
 * - **Which way up.** In Latin text the bottoms of neighbouring glyphs line up on the baseline while their tops differ
 *   (x-height against ascenders and capitals: b d f h k l t, ~30% of letters); the reverse (descenders g j p q y) is
 *   four times rarer. Upside down, tops line up and bottoms differ. Neighbouring pairs vote.
 *
 * Both cost a few milliseconds on the glyphs already found; the page is redrawn only when it must turn.
 */

/** Skew searched, in degrees either side of the line direction. */
export const MAX_SKEW = 10;
/**
 * Tilt below this is left to Tesseract (its line finder follows small skew; redrawing the page costs CPU). The tilt
 * is found within ~0.5° (glyph edges, pages of many glyphs) or ~0.1° (ink pixels, pages of a few words) on
 * corpus-dev's pages, so a page tilted 1° or more is straightened (docs/decisions.md#orientation).
 */
export const MIN_DESKEW = 1;
/** Fewer glyphs than this say nothing reliable about lines or their direction: the page is taken as it is. */
const MIN_GLYPHS = 10;
/**
 * The line direction of a page with this many glyphs or more comes from how the glyphs pile up in lines (a receipt's
 * letters touch, and its merged words are further apart than its lines); below, from nearest neighbours (one line of
 * a few words has no spread to compare). Measured on corpus-dev (docs/decisions.md#orientation).
 */
const SPREAD_MIN_GLYPHS = 80;
/** Glyphs must pile up this much more across than along the page (as sent) to turn it by a quarter. */
const SPREAD_MARGIN = 1.25;
/** Nearest neighbours up or down the page must outnumber those across it this much to turn a page by a quarter. */
const QUARTER_MARGIN = 1.5;
/** Votes of neighbouring glyphs: at least this many, and this share more for one side, to say which way up. */
const MIN_VOTES = 12;
const VOTE_MARGIN = 0.35;

export interface LineDirection {
  /** 0: lines run across the page as it is (upright or upside down); 90: they run up or down it. */
  quarter: 0 | 90;
  /** Degrees the lines are tilted from `quarter`, clockwise in image coordinates (y down). */
  tilt: number;
  /** Nearest neighbours in the lines' direction against across it (larger is surer). */
  margin: number;
  /** The page has many glyphs (SPREAD_MIN_GLYPHS or more): its tilt is precise to a few tenths of a degree. */
  manyGlyphs: boolean;
}

interface Centre {
  x: number;
  y: number;
}

/**
 * How much points projected across lines at `degrees` (clockwise, y down) pile up: Σ n² over bins a quarter of a
 * text height wide. Largest when the angle follows the lines (each line's baseline falls in one or two bins).
 */
function concentration(centres: readonly Centre[], degrees: number, bin: number, counts: Float64Array): number {
  const a = (degrees * Math.PI) / 180;
  const sin = Math.sin(a);
  const cos = Math.cos(a);
  counts.fill(0);
  // Projections fall within ±(diagonal) of 0: offset by half the histogram.
  const offset = counts.length / 2;
  for (const c of centres) {
    const k = Math.floor((c.y * cos - c.x * sin) / bin + offset);
    counts[k] = counts[k]! + 1;
  }
  let sum = 0;
  for (let k = 0; k < counts.length; k++) sum += counts[k]! * counts[k]!;
  return sum;
}

/**
 * The angle within MAX_SKEW of `around` at which one of two sets of points (the glyphs' two edges across the lines:
 * one of them is the baseline) piles up most: 0.5° steps, then 0.1° around the best.
 */
function bestAngle(edges: readonly (readonly Centre[])[], around: number, bin: number, counts: Float64Array): number {
  const score = (angle: number) => Math.max(...edges.map((points) => concentration(points, angle, bin, counts)));
  let best = { angle: around, score: -1 };
  for (let d = -MAX_SKEW; d <= MAX_SKEW; d += 0.5) {
    const value = score(around + d);
    if (value > best.score) best = { angle: around + d, score: value };
  }
  const coarse = best.angle;
  for (let d = -0.4; d <= 0.41; d += 0.1) {
    if (Math.abs(d) < 0.01) continue;
    const value = score(coarse + d);
    if (value > best.score) best = { angle: coarse + d, score: value };
  }
  return best.angle;
}

/** Glyphs pile up in lines (or their nearest neighbours line up) this much more one way than the other: lines. */
export const CLEAR_LINES = 1.25;

/** Whether glyphs make lines of text (not the specks of a paper's grain or a picture). */
export function makesLines(glyphs: readonly Glyph[], textHeight: number | null): boolean {
  return (estimateLineDirection(glyphs, textHeight)?.margin ?? 0) >= CLEAR_LINES;
}

/**
 * Which way the page's lines run, and their tilt, from glyph boxes (analysis raster coordinates); null when there
 * are too few glyphs to say (the page is read as it is).
 *
 * The direction: each glyph's nearest neighbour is its neighbour in the line (glyphs ~1 text height apart, lines
 * ~2), so the directions to nearest neighbours cluster around the lines' direction, whatever the number of lines
 * (one line of a few words too). The tilt: the angle near that direction at which glyph centres projected across the
 * lines pile up most.
 */
export function estimateLineDirection(glyphs: readonly Glyph[], textHeight: number | null): LineDirection | null {
  if (glyphs.length < MIN_GLYPHS || !textHeight) return null;
  const centres = glyphs.map((g) => ({ x: (g.x0 + g.x1) / 2, y: (g.y0 + g.y1) / 2 }));
  let quarter: 0 | 90;
  let margin: number;
  if (glyphs.length >= SPREAD_MIN_GLYPHS) {
    const bin = Math.max(1.5, textHeight * 0.5);
    const along = bestSpread(centres, 0, bin);
    const across = bestSpread(centres, 90, bin);
    quarter = across > along * SPREAD_MARGIN ? 90 : 0;
    margin = quarter === 90 ? across / along : along / across;
  } else {
    const { along, across } = neighbourDirections(centres, textHeight);
    if (along + across < MIN_GLYPHS / 2) return null;
    quarter = across > along * QUARTER_MARGIN ? 90 : 0;
    margin = quarter === 90 ? across / Math.max(1, along) : along / Math.max(1, across);
  }
  return {
    quarter,
    tilt: estimateTilt(glyphs, textHeight, quarter),
    margin,
    manyGlyphs: glyphs.length >= SPREAD_MIN_GLYPHS,
  };
}

/**
 * The tilt of lines running at `quarter` (0: across the raster, 90: up or down it), degrees clockwise: the angle near
 * `quarter` at which the glyphs' edges across the lines pile up most (bestAngle).
 */
export function estimateTilt(glyphs: readonly Glyph[], textHeight: number, quarter: 0 | 90): number {
  let extent = 0;
  for (const g of glyphs) extent = Math.max(extent, Math.hypot(g.x1 + 1, g.y1 + 1));
  // Glyph edges across the lines: bottoms and tops (one of them is the baseline, the other jagged with ascenders).
  const edges =
    quarter === 0
      ? [
          glyphs.map((g) => ({ x: (g.x0 + g.x1) / 2, y: g.y1 + 1 })),
          glyphs.map((g) => ({ x: (g.x0 + g.x1) / 2, y: g.y0 })),
        ]
      : [
          glyphs.map((g) => ({ x: g.x1 + 1, y: (g.y0 + g.y1) / 2 })),
          glyphs.map((g) => ({ x: g.x0, y: (g.y0 + g.y1) / 2 })),
        ];
  const bin = Math.max(1, textHeight * 0.25);
  const counts = new Float64Array(Math.ceil((2 * extent) / bin) + 8);
  const angle = bestAngle(edges, quarter, bin, counts);
  return round2(angle - quarter);
}

/**
 * How much glyph centres pile up when projected across lines at `degrees`, against an even spread over the same
 * span: Σn²/N² × bins spanned (1 for an even spread, several for lines of text). Compares the two directions on a
 * page of several lines (on a line or two, the span is too short for the comparison to mean anything).
 */
function spreadRatio(centres: readonly Centre[], degrees: number, bin: number): number {
  const a = (degrees * Math.PI) / 180;
  const sin = Math.sin(a);
  const cos = Math.cos(a);
  const projected = centres.map((c) => c.y * cos - c.x * sin);
  const min = Math.min(...projected);
  const bins = Math.floor((Math.max(...projected) - min) / bin) + 1;
  const counts = new Float64Array(bins);
  for (const p of projected) {
    const k = Math.floor((p - min) / bin);
    counts[k] = counts[k]! + 1;
  }
  let sum = 0;
  for (const n of counts) sum += n * n;
  return (sum / (centres.length * centres.length)) * bins;
}

/** The best spread ratio within MAX_SKEW of `around`, in 1° steps. */
function bestSpread(centres: readonly Centre[], around: number, bin: number): number {
  let best = 0;
  for (let d = -MAX_SKEW; d <= MAX_SKEW; d += 1) best = Math.max(best, spreadRatio(centres, around + d, bin));
  return best;
}

/**
 * Nearest neighbours (within 3 text heights) whose direction is within 30° of the horizontal (`along`) or of the
 * vertical (`across`). Centres are bucketed in cells of 3 text heights, so each looks at its 9 cells only.
 */
function neighbourDirections(centres: readonly Centre[], textHeight: number): { along: number; across: number } {
  const cell = 3 * textHeight;
  const grid = new Map<string, number[]>();
  centres.forEach((c, i) => {
    const key = `${Math.floor(c.x / cell)},${Math.floor(c.y / cell)}`;
    const bucket = grid.get(key);
    if (bucket) bucket.push(i);
    else grid.set(key, [i]);
  });
  const tan30 = Math.tan(Math.PI / 6);
  let along = 0;
  let across = 0;
  centres.forEach((c, i) => {
    const cx = Math.floor(c.x / cell);
    const cy = Math.floor(c.y / cell);
    let best = -1;
    let bestDistance = cell * cell;
    for (let gx = cx - 1; gx <= cx + 1; gx++) {
      for (let gy = cy - 1; gy <= cy + 1; gy++) {
        for (const j of grid.get(`${gx},${gy}`) ?? []) {
          if (j === i) continue;
          const d = (centres[j]!.x - c.x) ** 2 + (centres[j]!.y - c.y) ** 2;
          if (d < bestDistance) {
            bestDistance = d;
            best = j;
          }
        }
      }
    }
    if (best < 0) return;
    const dx = Math.abs(centres[best]!.x - c.x);
    const dy = Math.abs(centres[best]!.y - c.y);
    if (dy <= dx * tan30) along++;
    else if (dx <= dy * tan30) across++;
  });
  return { along, across };
}

export type Uprightness = "upright" | "upside-down" | "unsure";

/**
 * Which way up text stands whose lines run across the raster (glyph boxes of the straightened page): neighbouring
 * glyphs in a line vote "upright" when their bottoms line up and their tops do not, "upside down" for the reverse.
 */
export function judgeUprightness(
  glyphs: readonly Glyph[],
  textHeight: number | null,
): { verdict: Uprightness; up: number; down: number } {
  if (!textHeight || glyphs.length < MIN_GLYPHS) return { verdict: "unsure", up: 0, down: 0 };
  const th = textHeight;
  const aligned = Math.max(1, th * 0.1);
  const differs = Math.max(2, th * 0.25);
  // Glyphs of text size only (not rules, dots, pictures), bucketed by rows of one text height.
  const text = glyphs.filter((g) => {
    const h = g.y1 - g.y0 + 1;
    return h >= th * 0.6 && h <= th * 2;
  });
  const rows = new Map<number, Glyph[]>();
  for (const g of text) {
    const key = Math.floor((g.y0 + g.y1) / 2 / th);
    let row = rows.get(key);
    if (!row) rows.set(key, (row = []));
    row.push(g);
  }
  for (const row of rows.values()) row.sort((a, b) => a.x0 - b.x0);
  let up = 0;
  let down = 0;
  for (const g of text) {
    const cy = (g.y0 + g.y1) / 2;
    const key = Math.floor(cy / th);
    // The nearest glyph to the right on the same line: same band of rows, within a text height of horizontal gap.
    let next: Glyph | null = null;
    for (const k of [key - 1, key, key + 1]) {
      for (const h of rows.get(k) ?? []) {
        if (h === g || h.x0 <= g.x0 || h.x0 - g.x1 > th) continue;
        const hy = (h.y0 + h.y1) / 2;
        if (Math.abs(hy - cy) > th * 0.6) continue;
        if (!next || h.x0 < next.x0) next = h;
      }
    }
    if (!next) continue;
    const dBottom = Math.abs(next.y1 - g.y1);
    const dTop = Math.abs(next.y0 - g.y0);
    if (dBottom <= aligned && dTop >= differs) up++;
    else if (dTop <= aligned && dBottom >= differs) down++;
  }
  const votes = up + down;
  if (votes < MIN_VOTES || Math.abs(up - down) < VOTE_MARGIN * votes) return { verdict: "unsure", up, down };
  return { verdict: up > down ? "upright" : "upside-down", up, down };
}

/**
 * Draw `source` turned clockwise by `turn` on white. Quarter turns land pixel on pixel (no resampling); a skew
 * resamples once, at the source's own resolution.
 */
export function drawTurned(source: RasterSource, turn: PageTurn): Canvas {
  const canvas = createCanvas(turn.turnedWidth, turn.turnedHeight);
  const ctx = canvas.getContext("2d");
  ctx.fillStyle = "#ffffff";
  ctx.fillRect(0, 0, turn.turnedWidth, turn.turnedHeight);
  ctx.imageSmoothingEnabled = true;
  ctx.imageSmoothingQuality = "high";
  const { width: w, height: h } = turn;
  // Quarter turns as exact integer matrices: rotate(π/2) leaves cos ≈ 6e-17, and Skia then filters every pixel.
  const quarters: Record<Quarter, [number, number, number, number, number, number]> = {
    0: [1, 0, 0, 1, 0, 0],
    90: [0, 1, -1, 0, h, 0],
    180: [-1, 0, 0, -1, w, h],
    270: [0, -1, 1, 0, 0, w],
  };
  if (turn.skew === 0) ctx.setTransform(...quarters[turn.rotation]);
  else {
    ctx.translate(turn.turnedWidth / 2, turn.turnedHeight / 2);
    ctx.rotate(((turn.rotation + turn.skew) * Math.PI) / 180);
    ctx.translate(-w / 2, -h / 2);
  }
  ctx.drawImage(source, 0, 0, w, h);
  return canvas;
}

/** Glyph boxes of an analysis raster turned by a quarter (exact: a quarter turn keeps boxes axis-aligned). */
export function turnGlyphs(glyphs: readonly Glyph[], quarter: Quarter, width: number, height: number): Glyph[] {
  if (quarter === 0) return [...glyphs];
  return glyphs.map((g) => {
    // Pixel (x, y) of a w×h raster lands at: 90° → (h-1-y, x); 180° → (w-1-x, h-1-y); 270° → (y, w-1-x).
    if (quarter === 90) return { x0: height - 1 - g.y1, y0: g.x0, x1: height - 1 - g.y0, y1: g.x1 };
    if (quarter === 180)
      return { x0: width - 1 - g.x1, y0: height - 1 - g.y1, x1: width - 1 - g.x0, y1: height - 1 - g.y0 };
    return { x0: g.y0, y0: width - 1 - g.x1, x1: g.y1, y1: width - 1 - g.x0 };
  });
}

/** A grey raster turned by a quarter: its pixels moved (no resampling) as `turnGlyphs` moves glyph boxes. */
export function turnRaster(raster: GreyRaster, quarter: Quarter): GreyRaster {
  if (quarter === 0) return raster;
  const { width: w, height: h, data } = raster;
  const turnedWidth = quarter === 180 ? w : h;
  const out = new Uint8Array(data.length);
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) {
      const [tx, ty] = quarter === 90 ? [h - 1 - y, x] : quarter === 180 ? [w - 1 - x, h - 1 - y] : [y, w - 1 - x];
      out[ty * turnedWidth + tx] = data[y * w + x]!;
    }
  }
  return { width: turnedWidth, height: quarter === 180 ? h : w, data: out };
}

export function round2(value: number): number {
  return Math.round(value * 100) / 100;
}

/** Rows of RGBA read or drawn at a time (as `drawGrey`'s strips: bounds the transient copies). */
const STRIP_BYTES = 4 * 1024 * 1024;

/** An empty grey raster behind its PGM header (what `toPgm` hands to Tesseract without a copy). */
function greyRaster(width: number, height: number): GreyRaster {
  const header = new TextEncoder().encode(`P5\n${width} ${height}\n255\n`);
  const pgm = new Uint8Array(header.length + width * height);
  pgm.set(header, 0);
  return { width, height, data: pgm.subarray(header.length), pgm };
}

/**
 * A canvas's pixels as a decoded image. Skia scales an image and a canvas of the same pixels differently (a form
 * scaled 2.44×: 19.7% of the grey pixels differ), and an upright page is read from its decoded image: a page turned
 * by a quarter is read from an image too, so that it reads as the upright page does. An uncompressed 32-bit BMP is
 * the cheapest hand-over (Skia decodes it to the same pixels a PNG gives: 0 of 762,000 differ).
 */
export async function imageOf(canvas: Canvas): Promise<Image> {
  const { width: w, height: h } = canvas;
  const header = 14 + 40;
  const bytes = new Uint8Array(header + w * h * 4);
  const view = new DataView(bytes.buffer);
  bytes[0] = 0x42; // "BM"
  bytes[1] = 0x4d;
  view.setUint32(2, bytes.length, true);
  view.setUint32(10, header, true);
  view.setUint32(14, 40, true); // BITMAPINFOHEADER
  view.setInt32(18, w, true);
  view.setInt32(22, -h, true); // top-down rows
  view.setUint16(26, 1, true);
  view.setUint16(28, 32, true); // BGRX, no compression
  view.setUint32(34, w * h * 4, true);
  const ctx = canvas.getContext("2d");
  const stripHeight = Math.max(1, Math.floor(STRIP_BYTES / (w * 4)));
  for (let y = 0; y < h; y += stripHeight) {
    const rgba = ctx.getImageData(0, y, w, Math.min(stripHeight, h - y)).data;
    for (let i = 0, o = header + y * w * 4; i < rgba.length; i += 4, o += 4) {
      bytes[o] = rgba[i + 2]!;
      bytes[o + 1] = rgba[i + 1]!;
      bytes[o + 2] = rgba[i]!;
      bytes[o + 3] = 255;
    }
  }
  const image = new Image();
  image.src = bytes;
  await image.decode();
  return image;
}

/**
 * The `crop` region (default: all) of `source` turned and skewed by `turn`, drawn at `width`×`height` in grey: what
 * Tesseract reads of a skewed page, rotated and scaled in one draw (one resampling of the page as sent, not two),
 * strip by strip (as `drawGrey`: no full-size RGBA copy), each strip drawing only the source rectangle it covers.
 * The corners the turn uncovers are filled with `paper` (see {@link paperGrey}).
 */
export function drawGreyTurned(
  source: RasterSource,
  turn: PageTurn,
  width: number,
  height: number,
  crop?: Rect,
  paper = 255,
): GreyRaster {
  const region = crop ?? { x: 0, y: 0, width: turn.turnedWidth, height: turn.turnedHeight };
  const { width: w, height: h } = turn;
  const out = greyRaster(width, height);
  const scaleX = width / region.width;
  const scaleY = height / region.height;
  const stripHeight = Math.max(1, Math.min(height, Math.floor(STRIP_BYTES / (width * 4))));
  const canvas = createCanvas(width, stripHeight);
  const ctx = canvas.getContext("2d");
  ctx.imageSmoothingEnabled = true;
  ctx.imageSmoothingQuality = "high";
  // Source pixels around a strip's own that its resampling filter reads.
  const margin = 4 + 4 / Math.min(scaleX, scaleY);
  for (let y = 0; y < height; y += stripHeight) {
    const rows = Math.min(stripHeight, height - y);
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.fillStyle = `rgb(${paper}, ${paper}, ${paper})`;
    ctx.fillRect(0, 0, width, stripHeight);
    // Destination (X, Y) of this strip ← turned point (region.x + X/scaleX, region.y + (Y + y)/scaleY) ← source.
    ctx.setTransform(scaleX, 0, 0, scaleY, -region.x * scaleX, -region.y * scaleY - y);
    ctx.translate(turn.turnedWidth / 2, turn.turnedHeight / 2);
    ctx.rotate(((turn.rotation + turn.skew) * Math.PI) / 180);
    ctx.translate(-w / 2, -h / 2);
    const top = region.y + y / scaleY;
    const bottom = region.y + (y + rows) / scaleY;
    const corners = [
      fromTurned(turn, region.x, top),
      fromTurned(turn, region.x + region.width, top),
      fromTurned(turn, region.x, bottom),
      fromTurned(turn, region.x + region.width, bottom),
    ];
    const sx0 = Math.max(0, Math.floor(Math.min(...corners.map((c) => c[0])) - margin));
    const sy0 = Math.max(0, Math.floor(Math.min(...corners.map((c) => c[1])) - margin));
    const sx1 = Math.min(w, Math.ceil(Math.max(...corners.map((c) => c[0])) + margin));
    const sy1 = Math.min(h, Math.ceil(Math.max(...corners.map((c) => c[1])) + margin));
    if (sx1 > sx0 && sy1 > sy0) ctx.drawImage(source, sx0, sy0, sx1 - sx0, sy1 - sy0, sx0, sy0, sx1 - sx0, sy1 - sy0);
    toGrey(ctx.getImageData(0, 0, width, rows).data, out.data, y * width);
  }
  releaseSource(canvas);
  return out;
}

/** How far either side of the glyph estimate refineTilt looks, in which steps (degrees), over how many ink pixels at most. */
export interface RefineOptions {
  range: number;
  step: number;
  maxPixels: number;
}

/** A few words: their boxes place the tilt to a degree or two. */
const FEW_WORDS: RefineOptions = { range: 2.5, step: 0.1, maxPixels: Infinity };

/**
 * The tilt of a page of a few words, refined from its ink pixels (the glyph boxes' edges are too few to place a
 * line to better than a degree or two: a three-line screenshot's 22 glyphs put a 7° tilt at 5.5°). The ink pixels
 * inside the glyph boxes are projected across the lines at angles around `around`; where the angle follows the
 * lines, the profile has its sharpest edges (baselines, x-height lines): the angle of the largest Σ (n[k] − n[k−1])²
 * (Postl's criterion) over one-pixel bins. `toRaster` maps analysis-raster coordinates into `raster`'s; `ink` is the split
 * that found the glyphs (Otsu's of `raster` without it).
 */
export function refineTilt(
  raster: GreyRaster,
  glyphs: readonly Glyph[],
  toRaster: (x: number, y: number) => [number, number],
  around: number,
  ink?: InkSplit,
  { range, step, maxPixels }: RefineOptions = FEW_WORDS,
): number {
  const { width, height, data } = raster;
  const { threshold, dark: inkIsDark } = ink ?? inkSplitOf(data);
  const xs: number[] = [];
  const ys: number[] = [];
  // Every k-th glyph when their boxes hold more than maxPixels: lines keep their edges, the work stays bounded.
  let boxPixels = 0;
  for (const g of glyphs) boxPixels += (g.x1 - g.x0 + 1) * (g.y1 - g.y0 + 1);
  const every = Math.max(1, Math.ceil(boxPixels / maxPixels));
  for (const [index, g] of glyphs.entries()) {
    if (index % every !== 0) continue;
    const [ax, ay] = toRaster(g.x0, g.y0);
    const [bx, by] = toRaster(g.x1 + 1, g.y1 + 1);
    const x0 = Math.max(0, Math.floor(ax));
    const y0 = Math.max(0, Math.floor(ay));
    const x1 = Math.min(width, Math.ceil(bx));
    const y1 = Math.min(height, Math.ceil(by));
    for (let y = y0; y < y1; y++) {
      for (let x = x0; x < x1; x++) {
        const v = data[y * width + x]!;
        if (inkIsDark ? v <= threshold : v > threshold) {
          xs.push(x);
          ys.push(y);
        }
      }
    }
  }
  if (xs.length === 0) return around;
  const diagonal = Math.ceil(Math.hypot(width, height));
  const counts = new Float64Array(2 * diagonal + 4);
  const score = (degrees: number) => {
    const a = (degrees * Math.PI) / 180;
    const sin = Math.sin(a);
    const cos = Math.cos(a);
    counts.fill(0);
    for (let i = 0; i < xs.length; i++) {
      const k = Math.floor(ys[i]! * cos - xs[i]! * sin) + diagonal + 2;
      counts[k] = counts[k]! + 1;
    }
    let sum = 0;
    for (let k = 1; k < counts.length; k++) sum += (counts[k]! - counts[k - 1]!) ** 2;
    return sum;
  };
  let best = { angle: around, score: -1 };
  const steps = Math.round(range / step);
  for (let i = -steps; i <= steps; i++) {
    const angle = around + i * step;
    const value = score(angle);
    if (value > best.score) best = { angle, score: value };
  }
  return round2(best.angle);
}
