import { inkSplitOf, type Glyph, type InkSplit } from "./text-size";
import type { GreyRaster } from "./raster";

/**
 * Pages in any orientation. Before a page is read, the glyph boxes the text-size analysis found anyway
 * (lib/ocr/engine/text-size.ts) say which way its lines run and how far they are tilted, and which way up the text stands:
 *
 * - **Line direction.** Glyph centres projected across the lines pile up in a few narrow bins (the lines) and spread
 *   evenly along them; the concentration, scaled by an even spread's, is compared at 0° and 90° (±10°). On a page
 *   of a few words, where a line or two have no spread to compare, a glyph's nearest neighbour is its neighbour in
 *   the line instead, and their directions vote. A quarter turn also needs the glyphs' nearest neighbours (by the gap
 *   between their boxes) not to stand clearly beside them: a table's columns of numbers pile up like turned lines.
 * - **Skew.** The glyphs' bottom (and top) edges projected across the lines at angle θ pile up in narrow bins when θ
 *   follows the lines (the baselines); Σn² is searched over ±MAX_SKEW around the line direction.
 * - **Which way up.** In Latin text the bottoms of neighbouring glyphs line up on the baseline while their tops differ
 *   (x-height against ascenders and capitals: b d f h k l t, ~30% of letters); the reverse (descenders g j p q y) is
 *   four times rarer. Upside down, tops line up and bottoms differ. Neighbouring pairs vote.
 *
 * Both cost a few milliseconds on the glyphs already found; the page is redrawn only when it must turn (drawing it
 * turned is turned-raster.ts).
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
    if (quarter === 90) {
      // Columns of a table pile up across the page as lines turned by a quarter would (right-aligned numbers a few
      // text heights apart, rows closer): a turn must also have the glyphs' neighbours in a line run up or down it.
      const gaps = neighbourGaps(glyphs, textHeight);
      if (gaps.along > gaps.across * QUARTER_MARGIN) {
        quarter = 0;
        margin = gaps.along / Math.max(1, gaps.across);
      }
    }
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

/**
 * Glyphs whose nearest neighbour, by the gap between their boxes (within 2 text heights), stands beside them in the same
 * band across the page (`along`: their heights overlap by half the smaller) or above or below them (`across`: their
 * widths do). Gaps, not centres: letters that touch merge into word-long boxes whose centres are nearer the next line's
 * than the next word's, but whose gap to the next word is a space. In a line of text the neighbour is the next letter;
 * in a table's column of numbers, the next digit of the same number, not the cell a row below.
 */
export function neighbourGaps(glyphs: readonly Glyph[], textHeight: number): { along: number; across: number } {
  const reach = 2 * textHeight;
  const cell = Math.max(4, 4 * textHeight);
  const grid = new Map<string, number[]>();
  glyphs.forEach((g, i) => {
    for (let gx = Math.floor(g.x0 / cell); gx <= Math.floor(g.x1 / cell); gx++) {
      for (let gy = Math.floor(g.y0 / cell); gy <= Math.floor(g.y1 / cell); gy++) {
        const key = `${gx},${gy}`;
        const bucket = grid.get(key);
        if (bucket) bucket.push(i);
        else grid.set(key, [i]);
      }
    }
  });
  let along = 0;
  let across = 0;
  glyphs.forEach((g, i) => {
    let best = -1;
    let bestGap = reach;
    const seen = new Set<number>();
    for (let gx = Math.floor((g.x0 - reach) / cell); gx <= Math.floor((g.x1 + reach) / cell); gx++) {
      for (let gy = Math.floor((g.y0 - reach) / cell); gy <= Math.floor((g.y1 + reach) / cell); gy++) {
        for (const j of grid.get(`${gx},${gy}`) ?? []) {
          if (j === i || seen.has(j)) continue;
          seen.add(j);
          const h = glyphs[j]!;
          const gap = Math.max(h.x0 - g.x1, g.x0 - h.x1, h.y0 - g.y1, g.y0 - h.y1, 0);
          if (gap < bestGap) {
            bestGap = gap;
            best = j;
          }
        }
      }
    }
    if (best < 0) return;
    const h = glyphs[best]!;
    const yOverlap = Math.min(g.y1, h.y1) - Math.max(g.y0, h.y0) + 1;
    const xOverlap = Math.min(g.x1, h.x1) - Math.max(g.x0, h.x0) + 1;
    const yShorter = Math.min(g.y1 - g.y0, h.y1 - h.y0) + 1;
    const xShorter = Math.min(g.x1 - g.x0, h.x1 - h.x0) + 1;
    if (yOverlap >= yShorter / 2 && xOverlap <= 0) along++;
    else if (xOverlap >= xShorter / 2 && yOverlap <= 0) across++;
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

export function round2(value: number): number {
  return Math.round(value * 100) / 100;
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
