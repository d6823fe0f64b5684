import type { GreyRaster } from "./raster";

/** A connected component of ink that looks like a glyph, in the analysed raster's coordinates. */
export interface Glyph {
  x0: number;
  y0: number;
  x1: number;
  y1: number;
}

export interface InkAnalysis {
  /** The most common glyph height (≈ x-height of lower-case text, cap height of upper-case text), or null. */
  textHeight: number | null;
  /** Glyph-like components, for checking later how much of the ink the recognized words cover. */
  glyphs: Glyph[];
  /** Share of pixels that are ink. */
  inkRatio: number;
  /** Bounding box of all marks except specks and what touches the border (scanner edges), or null. */
  content: Glyph | null;
  /** The split that found the glyphs: ink is ≤ `threshold` when `dark`, above it otherwise (absent on a blank page). */
  ink?: InkSplit;
  /** Tones beyond the page's own, when a grey page lies inside white (or black) margins: see `flattenMargins`. */
  margins?: Margins;
}

export interface InkSplit {
  threshold: number;
  dark: boolean;
}

/** Grey levels above `threshold` (below it when `!light`) are margins, not paper; `paper` is the paper's own grey. */
export interface Margins {
  threshold: number;
  light: boolean;
  paper: number;
}

/** Otsu's threshold of an 8-bit histogram. */
export function otsuThreshold(data: Uint8Array): number {
  return otsuOfHistogram(histogram(data), 0, 255) ?? 127;
}

/** Otsu's split of a raster's grey levels, ink the minority class. */
export function inkSplitOf(data: Uint8Array): InkSplit {
  const threshold = otsuThreshold(data);
  return { threshold, dark: darkCount(data, threshold) <= data.length / 2 };
}

/** The median grey of a raster's pixels. */
export function medianGrey(data: Uint8Array): number {
  return medianOf(histogram(data), 0, 255);
}

function darkCount(data: Uint8Array, threshold: number): number {
  let dark = 0;
  for (let i = 0; i < data.length; i++) if (data[i]! <= threshold) dark++;
  return dark;
}

function histogram(data: Uint8Array): Float64Array {
  const hist = new Float64Array(256);
  for (let i = 0; i < data.length; i++) {
    const v = data[i]!;
    hist[v] = hist[v]! + 1;
  }
  return hist;
}

/** Otsu's threshold of the grey levels `lo`…`hi` of a histogram (a pixel ≤ threshold is the dark class); null when fewer than two levels occur. */
function otsuOfHistogram(hist: Float64Array, lo: number, hi: number): number | null {
  let total = 0;
  let sum = 0;
  let levels = 0;
  for (let i = lo; i <= hi; i++) {
    total += hist[i]!;
    sum += i * hist[i]!;
    if (hist[i]! > 0) levels++;
  }
  if (levels < 2) return null;
  let sumB = 0;
  let wB = 0;
  let best = -1;
  let threshold = lo;
  for (let i = lo; i <= hi; i++) {
    wB += hist[i]!;
    if (wB === 0) continue;
    const wF = total - wB;
    if (wF === 0) break;
    sumB += i * hist[i]!;
    const mB = sumB / wB;
    const mF = (sum - sumB) / wF;
    const between = wB * wF * (mB - mF) * (mB - mF);
    if (between > best) {
      best = between;
      threshold = i;
    }
  }
  return threshold;
}

/**
 * Glyph statistics of a page: binarize (Otsu; ink is the minority class, so white-on-dark works too),
 * label 8-connected components over pixel runs, keep the ones shaped like glyphs, and take the mode of their
 * heights. This is what decides how much to scale an image before Tesseract, whose models read text best at
 * roughly 300 DPI body-text size.
 */
export function analyzeInk(
  raster: GreyRaster,
  makesText?: (glyphs: readonly Glyph[], textHeight: number | null) => boolean,
): InkAnalysis {
  const hist = histogram(raster.data);
  const threshold = otsuOfHistogram(hist, 0, 255) ?? 127;
  const first = analyzeAt(raster, threshold);
  if (first.glyphs.length >= FEW_GLYPHS || !makesText) return first;
  // Three tones: a grey page (a photo's paper) inside white or black margins (a picture turned and its corners filled,
  // a scan's dark bed). The one threshold then splits margins from paper, not ink from paper, and finds no glyphs.
  // So each of its two classes is split again on its own, and the split that finds the most glyphs kept — if they
  // make text (`makesText`: lines): split again, a blank grey sheet's grain makes glyph-sized specks too.
  let best = first;
  for (const [lo, hi] of [
    [0, threshold],
    [threshold + 1, 255],
  ] as const) {
    const inner = otsuOfHistogram(hist, lo, hi);
    if (inner === null) continue;
    const again = analyzeAt(raster, inner);
    if (again.glyphs.length <= best.glyphs.length || !makesText(again.glyphs, again.textHeight)) continue;
    // The class split again is the page (ink and paper), the other class its margins; paper is the page's side of the
    // split that is not ink, taken at its median grey.
    const paper = again.ink?.dark === false ? medianOf(hist, lo, inner) : medianOf(hist, inner + 1, hi);
    best = { ...again, margins: { threshold, light: lo === 0, paper } };
  }
  return best;
}

function medianOf(hist: Float64Array, lo: number, hi: number): number {
  let total = 0;
  for (let i = lo; i <= hi; i++) total += hist[i]!;
  let seen = 0;
  for (let i = lo; i <= hi; i++) {
    seen += hist[i]!;
    if (seen * 2 >= total) return i;
  }
  return hi;
}

/**
 * A page inside margins of another tone (white corners around a grey photo) gives Tesseract's own global threshold
 * the same trouble it gave analyzeInk: it splits margins from page and loses the ink. The margins take the paper's
 * grey, in place, so every raster read (first pass, re-reads, PaddleOCR) holds two tones, ink and paper.
 */
export function flattenMargins(raster: GreyRaster, margins: Margins | undefined): GreyRaster {
  if (!margins) return raster;
  const { data } = raster;
  const { threshold, light, paper } = margins;
  for (let i = 0; i < data.length; i++) {
    const v = data[i]!;
    if (light ? v > threshold : v <= threshold) data[i] = paper;
  }
  return raster;
}

/** Below this many glyphs, analyzeInk tries the two classes of its threshold split again. */
const FEW_GLYPHS = 10;

function analyzeAt(raster: GreyRaster, threshold: number): InkAnalysis {
  const { width: w, height: h, data } = raster;
  const dark = darkCount(data, threshold);
  const inkIsDark = dark <= data.length / 2;
  const inkCount = inkIsDark ? dark : data.length - dark;
  // A blank (or uniform) page: Otsu splits noise; nothing to measure.
  if (inkCount === 0 || inkCount === data.length) return { textHeight: null, glyphs: [], inkRatio: 0, content: null };

  // Run-length connected components: runs of ink per row, unioned with overlapping runs of the row above.
  const runStart: number[] = [];
  const runEnd: number[] = [];
  const runRow: number[] = [];
  const parent: number[] = [];
  const find = (a: number): number => {
    while (parent[a] !== a) {
      parent[a] = parent[parent[a]!]!;
      a = parent[a]!;
    }
    return a;
  };
  let prevFirst = 0;
  let prevLast = 0;
  for (let y = 0; y < h; y++) {
    const first = runStart.length;
    const row = y * w;
    let x = 0;
    while (x < w) {
      const v = data[row + x]!;
      if (inkIsDark ? v > threshold : v <= threshold) {
        x++;
        continue;
      }
      const start = x;
      while (x < w) {
        const u = data[row + x]!;
        if (inkIsDark ? u > threshold : u <= threshold) break;
        x++;
      }
      const id = runStart.length;
      runStart.push(start);
      runEnd.push(x - 1);
      runRow.push(y);
      parent.push(id);
      for (let p = prevFirst; p < prevLast; p++) {
        if (runEnd[p]! < start - 1) continue;
        if (runStart[p]! > x) break;
        const a = find(p);
        const b = find(id);
        if (a !== b) parent[Math.max(a, b)] = Math.min(a, b);
      }
    }
    prevFirst = first;
    prevLast = runStart.length;
  }

  const n = runStart.length;
  const x0 = new Int32Array(n).fill(0x7fffffff);
  const y0 = new Int32Array(n).fill(0x7fffffff);
  const x1 = new Int32Array(n).fill(-1);
  const y1 = new Int32Array(n).fill(-1);
  const area = new Int32Array(n);
  for (let r = 0; r < n; r++) {
    const root = find(r);
    const s = runStart[r]!;
    const e = runEnd[r]!;
    const y = runRow[r]!;
    if (s < x0[root]!) x0[root] = s;
    if (e > x1[root]!) x1[root] = e;
    if (y < y0[root]!) y0[root] = y;
    if (y > y1[root]!) y1[root] = y;
    area[root]! += e - s + 1;
  }

  const glyphs: Glyph[] = [];
  const maxHeight = Math.max(8, Math.floor(h / 8));
  const maxWidth = Math.max(8, Math.floor(w / 4));
  let content: Glyph | null = null;
  for (let r = 0; r < n; r++) {
    if (parent[r] !== r) continue;
    const bw = x1[r]! - x0[r]! + 1;
    const bh = y1[r]! - y0[r]! + 1;
    const touchesBorder = x0[r] === 0 || y0[r] === 0 || x1[r] === w - 1 || y1[r] === h - 1;
    if (!touchesBorder && bw >= 2 && bh >= 2 && area[r]! >= 4) {
      if (!content) content = { x0: x0[r]!, y0: y0[r]!, x1: x1[r]!, y1: y1[r]! };
      else {
        content.x0 = Math.min(content.x0, x0[r]!);
        content.y0 = Math.min(content.y0, y0[r]!);
        content.x1 = Math.max(content.x1, x1[r]!);
        content.y1 = Math.max(content.y1, y1[r]!);
      }
    }
    // Dots, specks and rules are not glyphs; neither are pictures and frames.
    if (bh < 4 || bh > maxHeight || bw > maxWidth) continue;
    const aspect = bw / bh;
    if (aspect < 0.15 || aspect > 4) continue;
    if (area[r]! < bw * bh * 0.1) continue;
    glyphs.push({ x0: x0[r]!, y0: y0[r]!, x1: x1[r]!, y1: y1[r]! });
  }

  return {
    textHeight: modeHeight(glyphs, h),
    glyphs,
    inkRatio: inkCount / data.length,
    content,
    ink: { threshold, dark: inkIsDark },
  };
}

/** Most common glyph height, smoothed over ±1 px; null when there are too few glyphs to say. */
export function modeHeight(glyphs: Glyph[], maxHeight: number): number | null {
  if (glyphs.length < 3) return null;
  if (glyphs.length < 8) {
    // Too few for a histogram (a word or two): the median will do.
    const heights = glyphs.map((g) => g.y1 - g.y0 + 1).sort((a, b) => a - b);
    return heights[Math.floor(heights.length / 2)]!;
  }
  const hist = new Uint32Array(maxHeight + 3);
  for (const g of glyphs) {
    const height = g.y1 - g.y0 + 1;
    hist[height] = hist[height]! + 1;
  }
  let best = 0;
  let mode = 0;
  for (let height = 5; height < hist.length - 1; height++) {
    const votes = hist[height - 1]! + 2 * hist[height]! + hist[height + 1]!;
    if (votes > best) {
      best = votes;
      mode = height;
    }
  }
  return mode || null;
}

/**
 * Share of the text-sized glyphs whose centre lies inside a recognized word box. Low coverage means the
 * page segmentation missed text that is plainly there (a failure mode of automatic segmentation on
 * receipts and sparse pages). Word boxes are in the analysed raster's coordinates.
 */
export function glyphCoverage(analysis: InkAnalysis, wordBoxes: Glyph[], width: number, height: number): number {
  const size = analysis.textHeight;
  if (!size) return 1;
  const candidates = analysis.glyphs.filter((g) => {
    const gh = g.y1 - g.y0 + 1;
    return gh >= size * 0.6 && gh <= size * 2.5;
  });
  if (candidates.length < 8) return 1;
  const cell = 4;
  const cw = Math.ceil(width / cell);
  const ch = Math.ceil(height / cell);
  const mask = new Uint8Array(cw * ch);
  const pad = Math.ceil(size / 2);
  for (const b of wordBoxes) {
    const cx0 = Math.max(0, Math.floor((b.x0 - pad) / cell));
    const cy0 = Math.max(0, Math.floor((b.y0 - pad) / cell));
    const cx1 = Math.min(cw - 1, Math.floor((b.x1 + pad) / cell));
    const cy1 = Math.min(ch - 1, Math.floor((b.y1 + pad) / cell));
    for (let y = cy0; y <= cy1; y++) mask.fill(1, y * cw + cx0, y * cw + cx1 + 1);
  }
  let covered = 0;
  for (const g of candidates) {
    const cx = Math.floor((g.x0 + g.x1) / 2 / cell);
    const cy = Math.floor((g.y0 + g.y1) / 2 / cell);
    if (mask[cy * cw + cx]) covered++;
  }
  return covered / candidates.length;
}
