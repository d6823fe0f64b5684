import { createCanvas, type Canvas, type SKRSContext2D } from "@napi-rs/canvas";
import { releaseSource, type RasterSource } from "./raster";

/**
 * The sheet of paper in a photo of a page lying on something (issue 39: a table's wood grain read as 13 lines of
 * garbage, and the page's headings lost). The table's texture is ink to every later stage: it made the text-size
 * analysis take grain specks for glyphs (text height 5 px: the page drawn 2.7× too large), its lines decided which way
 * up the page stands (a page turned by a quarter and read as nothing but garbage), and Tesseract read it as words.
 *
 * Photographed paper is the brightest large region of the photo and the least coloured: a region that is much
 * brighter than the rest, convex (a sheet, seen at a slant, is a convex quadrilateral), holds most of the photo and
 * leaves a surround that touches most of the photo's edge. Where one is found the surround is painted the paper's
 * colour before anything reads the page, so every stage sees the page alone; a scan (paper everywhere), a screenshot or
 * a page with dark panels (surround not around the page, or not much darker) is left as it is.
 */

/** The region is found on a copy of the photo this many pixels on its long side. */
const SMALL_SIDE = 320;
/** Radius of the closing (max then min) that erases the print from the paper before the split, in small pixels. */
const CLOSING_RADIUS = 2;
/** Radius (small pixels) over which the sheet's light is measured: wider than a heading's strokes. */
const LIGHT_RADIUS = 4;
/** The sheet is evened out to this grey, brightening a shadow at most MAX_GAIN times; the surround is painted it. */
const PAPER_WHITE = 235;
const MAX_GAIN = 3;
/** Rows of RGBA evened out at a time. */
const STRIP_BYTES = 4 * 1024 * 1024;
/** Neighbouring small pixels of the sheet differ by at most this much paperness (a shadow's gradient, not an edge). */
const GROW_STEP = 6;
/** The paper holds at least this share of the photo, and at most this share (more: paper everywhere, a scan). */
const MIN_PAPER_SHARE = 0.15;
const MAX_PAPER_SHARE = 0.93;
/** The paper is this much brighter than its surround (median of brightness less colour, 0–255). */
const MIN_CONTRAST = 45;
/** The paper fills this share of its convex hull: a sheet, not a patchwork of bright areas. */
const MIN_SOLIDITY = 0.9;
/** The surround covers this share of the photo's edge: the page lies on it, not beside it. */
const MIN_EDGE_SURROUND = 0.6;
/** Down to this share when the surround is textured (MIN_TEXTURE: the median 3×3 range of its brightness). */
const MIN_EDGE_TEXTURED = 0.2;
const MIN_TEXTURE = 4;
/** Below this median 3×3 range the surround is flat: drawn, not photographed. */
const MIN_GRAIN = 2;

export interface PaperRegion {
  /** The sheet's outline (its convex hull), in source pixels, clockwise. */
  outline: [number, number][];
  /** Share of the photo it covers. */
  share: number;
  /**
   * The paper's brightness where the print is closed over, on a grid of `lightWidth`×`lightHeight` over the photo: what
   * evens out the light across the sheet (`maskToPaper`).
   */
  light: Uint8Array;
  lightWidth: number;
  lightHeight: number;
}

/** The photographed sheet, or null when the photo is not of a sheet on a darker surround (see above). */
export function findPaper(source: RasterSource, width: number, height: number): PaperRegion | null {
  const s = Math.min(1, SMALL_SIDE / Math.max(width, height));
  const w = Math.max(1, Math.round(width * s));
  const h = Math.max(1, Math.round(height * s));
  if (w < 16 || h < 16) return null;
  const canvas = createCanvas(w, h);
  const ctx = canvas.getContext("2d");
  ctx.imageSmoothingEnabled = true;
  ctx.imageSmoothingQuality = "high";
  ctx.drawImage(source, 0, 0, width, height, 0, 0, w, h);
  const rgba = ctx.getImageData(0, 0, w, h).data;
  releaseSource(canvas);
  const n = w * h;
  const luma = new Uint8Array(n);
  const chroma = new Uint8Array(n);
  for (let i = 0, p = 0; i < n; i++, p += 4) {
    const r = rgba[p]!;
    const g = rgba[p + 1]!;
    const b = rgba[p + 2]!;
    luma[i] = (r * 77 + g * 150 + b * 29) >> 8;
    chroma[i] = Math.max(r, g, b) - Math.min(r, g, b);
  }
  // Paperness: brightness with the print closed over, less colour (wood, cloth and most tables are coloured).
  const closed = minFilter(maxFilter(luma, w, h, CLOSING_RADIUS), w, h, CLOSING_RADIUS);
  const paperness = new Uint8Array(n);
  for (let i = 0; i < n; i++) paperness[i] = Math.max(0, closed[i]! - chroma[i]!);
  const threshold = otsu(paperness);
  const seed = largestComponent(paperness, w, h, threshold);
  if (!seed) return null;
  const inside = fillHoles(grow(seed, paperness, w, h), w, h);
  let area = 0;
  for (let i = 0; i < n; i++) area += inside[i]!;
  const share = area / n;
  if (share < MIN_PAPER_SHARE || share > MAX_PAPER_SHARE) return null;
  let edge = 0;
  let edgeOut = 0;
  for (let x = 0; x < w; x++) {
    for (const y of [0, h - 1]) {
      edge++;
      edgeOut += 1 - inside[y * w + x]!;
    }
  }
  for (let y = 1; y < h - 1; y++) {
    for (const x of [0, w - 1]) {
      edge++;
      edgeOut += 1 - inside[y * w + x]!;
    }
  }
  // The surround of a photographed sheet has grain (wood, cloth, a camera's noise); a dark panel or background of a
  // screenshot or a designed page is flat (a white dialog on a dark screen is not a sheet on a table). A sheet that
  // runs off the photo on some sides (a close-up) leaves its surround on less of the edge: then it must look like a
  // table, not like a dark side panel.
  const edgeShare = edgeOut / edge;
  if (edgeShare < MIN_EDGE_TEXTURED) return null;
  const texture = surroundTexture(luma, inside, w, h);
  if (texture < MIN_GRAIN || (edgeShare < MIN_EDGE_SURROUND && texture < MIN_TEXTURE)) return null;
  const inValues: number[] = [];
  const outValues: number[] = [];
  for (let i = 0; i < n; i++) (inside[i] ? inValues : outValues).push(paperness[i]!);
  if (median(inValues) - median(outValues) < MIN_CONTRAST) return null;
  const hull = convexHull(inside, w, h);
  if (hull.length < 3 || area / polygonArea(hull) < MIN_SOLIDITY) return null;
  // The light over the sheet: its brightness with print and headings closed over, the surround taken as the sheet's
  // median (so that the sheet's edge is not taken for a shadow), smoothed.
  const paperLuma = median(Array.from(luma.filter((_, i) => inside[i] && paperness[i]! > threshold)));
  const sheet = luma.map((v, i) => (inside[i] ? v : paperLuma));
  const light = boxBlur(minFilter(maxFilter(sheet, w, h, LIGHT_RADIUS), w, h, LIGHT_RADIUS), w, h, LIGHT_RADIUS);
  return { outline: hull.map(([x, y]) => [x / s, y / s]), share, light, lightWidth: w, lightHeight: h };
}

/** The photo with what lies around its sheet painted the paper's colour (a new canvas), or null: no sheet found. */
export function paperOnly(
  source: RasterSource,
  width: number,
  height: number,
): { paper: PaperRegion; source: Canvas } | null {
  const paper = findPaper(source, width, height);
  return paper && { paper, source: maskToPaper(source, width, height, paper) };
}

/**
 * A copy of the photo with the light evened out over the sheet (a shadow across it no longer reads as ink to a global
 * threshold) and everything outside the sheet painted paper white; the caller releases it.
 */
export function maskToPaper(source: RasterSource, width: number, height: number, paper: PaperRegion): Canvas {
  const canvas = createCanvas(width, height);
  const ctx = canvas.getContext("2d");
  ctx.drawImage(source, 0, 0, width, height);
  evenLight(ctx, width, height, paper);
  ctx.fillStyle = `rgb(${PAPER_WHITE}, ${PAPER_WHITE}, ${PAPER_WHITE})`;
  ctx.beginPath();
  ctx.rect(0, 0, width, height);
  const [first, ...rest] = paper.outline;
  ctx.moveTo(first![0], first![1]);
  for (const [x, y] of rest) ctx.lineTo(x, y);
  ctx.closePath();
  ctx.fill("evenodd");
  return canvas;
}

/** Whether the point (source pixels) lies inside the sheet's outline, `margin` pixels outside it still counting. */
export function insidePaper(paper: PaperRegion, x: number, y: number, margin = 0): boolean {
  const { outline } = paper;
  // Convex and clockwise in image coordinates (y down): inside is on the same side of every edge.
  for (let i = 0; i < outline.length; i++) {
    const [x0, y0] = outline[i]!;
    const [x1, y1] = outline[(i + 1) % outline.length]!;
    const length = Math.hypot(x1 - x0, y1 - y0) || 1;
    const cross = ((x1 - x0) * (y - y0) - (y1 - y0) * (x - x0)) / length;
    if (cross < -margin) return false;
  }
  return true;
}

/** Each pixel brightened by the paper's shortfall from PAPER_WHITE where it stands (never darkened), strip by strip. */
function evenLight(ctx: SKRSContext2D, width: number, height: number, paper: PaperRegion): void {
  const { light, lightWidth: lw, lightHeight: lh } = paper;
  const gain = new Float32Array(light.length);
  for (let i = 0; i < light.length; i++) {
    gain[i] = Math.min(MAX_GAIN, Math.max(1, PAPER_WHITE / Math.max(1, light[i]!)));
  }
  // Bilinear weights along a row, once (the grid is at least 16 pixels each way: findPaper).
  const gx0 = new Int32Array(width);
  const gfx = new Float32Array(width);
  for (let x = 0; x < width; x++) {
    const u = Math.min(lw - 1, Math.max(0, ((x + 0.5) * lw) / width - 0.5));
    gx0[x] = Math.min(lw - 2, Math.floor(u));
    gfx[x] = u - gx0[x]!;
  }
  const stripHeight = Math.max(1, Math.floor(STRIP_BYTES / (width * 4)));
  for (let top = 0; top < height; top += stripHeight) {
    const rows = Math.min(stripHeight, height - top);
    const image = ctx.getImageData(0, top, width, rows);
    const { data } = image;
    for (let r = 0; r < rows; r++) {
      const v = Math.min(lh - 1, Math.max(0, ((top + r + 0.5) * lh) / height - 0.5));
      const y0 = Math.min(lh - 2, Math.floor(v));
      const fy = v - y0;
      const above = y0 * lw;
      const below = above + lw;
      for (let x = 0, p = r * width * 4; x < width; x++, p += 4) {
        const x0 = gx0[x]!;
        const fx = gfx[x]!;
        const x1 = x0 + 1;
        const g =
          (gain[above + x0]! * (1 - fx) + gain[above + x1]! * fx) * (1 - fy) +
          (gain[below + x0]! * (1 - fx) + gain[below + x1]! * fx) * fy;
        if (g <= 1.001) continue;
        data[p] = Math.min(255, data[p]! * g);
        data[p + 1] = Math.min(255, data[p + 1]! * g);
        data[p + 2] = Math.min(255, data[p + 2]! * g);
      }
    }
    ctx.putImageData(image, 0, top);
  }
}

/** The median over the surround of each pixel's 3×3 range of brightness: 0 on a flat panel, more on wood or cloth. */
function surroundTexture(luma: Uint8Array, inside: Uint8Array, w: number, h: number): number {
  const high = maxFilter(luma, w, h, 1);
  const low = minFilter(luma, w, h, 1);
  const ranges: number[] = [];
  for (let i = 0; i < luma.length; i++) if (!inside[i]) ranges.push(high[i]! - low[i]!);
  return median(ranges);
}

/** A square mean filter, separably. */
function boxBlur(data: Uint8Array, w: number, h: number, r: number): Uint8Array {
  const rows = new Float32Array(data.length);
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) {
      let sum = 0;
      let count = 0;
      for (let d = -r; d <= r; d++) {
        const xx = x + d;
        if (xx < 0 || xx >= w) continue;
        sum += data[y * w + xx]!;
        count++;
      }
      rows[y * w + x] = sum / count;
    }
  }
  const out = new Uint8Array(data.length);
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) {
      let sum = 0;
      let count = 0;
      for (let d = -r; d <= r; d++) {
        const yy = y + d;
        if (yy < 0 || yy >= h) continue;
        sum += rows[yy * w + x]!;
        count++;
      }
      out[y * w + x] = Math.round(sum / count);
    }
  }
  return out;
}

function maxFilter(data: Uint8Array, w: number, h: number, r: number): Uint8Array {
  return rankFilter(data, w, h, r, Math.max);
}

function minFilter(data: Uint8Array, w: number, h: number, r: number): Uint8Array {
  return rankFilter(data, w, h, r, Math.min);
}

/** A square max or min filter, separably (rows, then columns). */
function rankFilter(
  data: Uint8Array,
  w: number,
  h: number,
  r: number,
  pick: (...values: number[]) => number,
): Uint8Array {
  const rows = new Uint8Array(data.length);
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) {
      let v = data[y * w + x]!;
      for (let d = -r; d <= r; d++) {
        const xx = x + d;
        if (xx >= 0 && xx < w) v = pick(v, data[y * w + xx]!);
      }
      rows[y * w + x] = v;
    }
  }
  const out = new Uint8Array(data.length);
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) {
      let v = rows[y * w + x]!;
      for (let d = -r; d <= r; d++) {
        const yy = y + d;
        if (yy >= 0 && yy < h) v = pick(v, rows[yy * w + x]!);
      }
      out[y * w + x] = v;
    }
  }
  return out;
}

function otsu(data: Uint8Array): number {
  const hist = new Float64Array(256);
  for (const v of data) hist[v]!++;
  let total = 0;
  let sum = 0;
  for (let i = 0; i < 256; i++) {
    total += hist[i]!;
    sum += i * hist[i]!;
  }
  let wB = 0;
  let sumB = 0;
  let best = -1;
  let threshold = 127;
  for (let i = 0; i < 256; i++) {
    wB += hist[i]!;
    if (wB === 0) continue;
    const wF = total - wB;
    if (wF === 0) break;
    sumB += i * hist[i]!;
    const between = wB * wF * (sumB / wB - (sum - sumB) / wF) ** 2;
    if (between > best) {
      best = between;
      threshold = i;
    }
  }
  return threshold;
}

/** The largest 4-connected region of values above `threshold`, as a 0/1 mask; null when there is none. */
function largestComponent(data: Uint8Array, w: number, h: number, threshold: number): Uint8Array | null {
  const label = new Int32Array(data.length);
  const queue = new Int32Array(data.length);
  let bestLabel = 0;
  let bestSize = 0;
  let next = 0;
  for (let start = 0; start < data.length; start++) {
    if (label[start] || data[start]! <= threshold) continue;
    next++;
    let head = 0;
    let tail = 0;
    queue[tail++] = start;
    label[start] = next;
    while (head < tail) {
      const i = queue[head++]!;
      const x = i % w;
      const neighbours = [x > 0 ? i - 1 : -1, x < w - 1 ? i + 1 : -1, i - w, i + w];
      for (const j of neighbours) {
        if (j < 0 || j >= data.length || label[j] || data[j]! <= threshold) continue;
        label[j] = next;
        queue[tail++] = j;
      }
    }
    if (tail > bestSize) {
      bestSize = tail;
      bestLabel = next;
    }
  }
  if (!bestLabel) return null;
  const mask = new Uint8Array(data.length);
  for (let i = 0; i < data.length; i++) if (label[i] === bestLabel) mask[i] = 1;
  return mask;
}

/**
 * The region grown over smoothly changing paperness: a sheet in uneven light (a shadow across it, a darker corner) is
 * one surface whose brightness changes gradually, while its edge against the surround is a step.
 */
function grow(seed: Uint8Array, paperness: Uint8Array, w: number, h: number): Uint8Array {
  // Only into smooth pixels: a pixel on a slanted edge mixes sheet and surround in proportions that change gradually
  // along the edge, a smooth path out of the sheet; its 3×3 neighbourhood spans the step.
  const spread = maxFilter(paperness, w, h, 1);
  const low = minFilter(paperness, w, h, 1);
  const region = seed.slice();
  const queue = new Int32Array(region.length);
  let tail = 0;
  for (let i = 0; i < region.length; i++) if (region[i]) queue[tail++] = i;
  for (let head = 0; head < tail; head++) {
    const i = queue[head]!;
    const x = i % w;
    const v = paperness[i]!;
    for (const j of [x > 0 ? i - 1 : -1, x < w - 1 ? i + 1 : -1, i - w, i + w]) {
      if (j < 0 || j >= region.length || region[j] || Math.abs(paperness[j]! - v) > GROW_STEP) continue;
      if (spread[j]! - low[j]! > 2 * GROW_STEP) continue;
      region[j] = 1;
      queue[tail++] = j;
    }
  }
  return region;
}

/** The region with its holes (what it encloses: pictures, dark print) filled: all the photo's edge cannot reach. */
function fillHoles(region: Uint8Array, w: number, h: number): Uint8Array {
  const reached = new Uint8Array(region.length);
  const queue = new Int32Array(region.length);
  let tail = 0;
  const push = (i: number) => {
    if (region[i] || reached[i]) return;
    reached[i] = 1;
    queue[tail++] = i;
  };
  for (let x = 0; x < w; x++) {
    push(x);
    push((h - 1) * w + x);
  }
  for (let y = 0; y < h; y++) {
    push(y * w);
    push(y * w + w - 1);
  }
  for (let head = 0; head < tail; head++) {
    const i = queue[head]!;
    const x = i % w;
    if (x > 0) push(i - 1);
    if (x < w - 1) push(i + 1);
    if (i >= w) push(i - w);
    if (i < region.length - w) push(i + w);
  }
  const inside = new Uint8Array(region.length);
  for (let i = 0; i < region.length; i++) inside[i] = reached[i] ? 0 : 1;
  return inside;
}

/** The convex hull (clockwise in image coordinates) of a mask's pixels, as pixel corners. */
function convexHull(mask: Uint8Array, w: number, h: number): [number, number][] {
  const points: [number, number][] = [];
  for (let y = 0; y < h; y++) {
    let first = -1;
    let last = -1;
    for (let x = 0; x < w; x++) {
      if (!mask[y * w + x]) continue;
      if (first < 0) first = x;
      last = x;
    }
    if (first < 0) continue;
    points.push([first, y], [first, y + 1], [last + 1, y], [last + 1, y + 1]);
  }
  points.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  const cross = (o: [number, number], a: [number, number], b: [number, number]) =>
    (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0]);
  const lower: [number, number][] = [];
  for (const p of points) {
    while (lower.length >= 2 && cross(lower[lower.length - 2]!, lower[lower.length - 1]!, p) <= 0) lower.pop();
    lower.push(p);
  }
  const upper: [number, number][] = [];
  for (let i = points.length - 1; i >= 0; i--) {
    const p = points[i]!;
    while (upper.length >= 2 && cross(upper[upper.length - 2]!, upper[upper.length - 1]!, p) <= 0) upper.pop();
    upper.push(p);
  }
  // Counter-clockwise in y-up terms is clockwise on an image (y down).
  return [...lower.slice(0, -1), ...upper.slice(0, -1)];
}

function polygonArea(polygon: [number, number][]): number {
  let sum = 0;
  for (let i = 0; i < polygon.length; i++) {
    const [x0, y0] = polygon[i]!;
    const [x1, y1] = polygon[(i + 1) % polygon.length]!;
    sum += x0 * y1 - x1 * y0;
  }
  return Math.abs(sum) / 2;
}

function median(values: number[]): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}
