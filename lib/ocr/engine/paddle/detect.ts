/** DB (differentiable binarization) post-processing: the detector's probability map → text-line boxes. */
import type { RotatedBox } from "./resample";

export interface TextBox extends RotatedBox {
  /** Axis-aligned bounds of the rotated box, clamped to the image. */
  x0: number;
  y0: number;
  x1: number;
  y1: number;
  /** Mean probability inside the box before it was grown. */
  score: number;
}

export interface DbOptions {
  /** Pixel threshold on the probability map (PaddleOCR: 0.3). */
  thresh: number;
  /** Minimum mean probability of a box (PaddleOCR: 0.6). */
  boxThresh: number;
  /** DB trains on shrunk text regions; boxes grow back by area·ratio/perimeter on each side (PaddleOCR: 1.5). */
  unclipRatio: number;
  /** Minimum short side of a box, map pixels (PaddleOCR: 3). */
  minSize: number;
  /** Steeper components than this (radians) get an axis-aligned box: single tall glyphs, vertical rules. */
  maxAngle: number;
}

export const DB_DEFAULTS: DbOptions = { thresh: 0.3, boxThresh: 0.6, unclipRatio: 1.5, minSize: 3, maxAngle: 0.35 };

/**
 * Connected components (8-connected) of `prob > thresh` on a `width`×`height` map. Each becomes a box along its
 * principal axis (second moments of its pixels: scans are a degree or two skewed, and an axis-aligned box of a
 * long skewed line is mostly background, which fails the score), scored, grown back and mapped to source pixels
 * (`scaleX`/`scaleY` source pixels per map pixel).
 */
export function findTextBoxes(
  prob: Float32Array,
  width: number,
  height: number,
  scaleX: number,
  scaleY: number,
  srcWidth: number,
  srcHeight: number,
  options: DbOptions = DB_DEFAULTS,
): TextBox[] {
  const n = width * height;
  const seen = new Uint8Array(n);
  const stack = new Int32Array(n);
  const members: number[] = [];
  const boxes: TextBox[] = [];
  for (let start = 0; start < n; start++) {
    if (seen[start] || prob[start]! <= options.thresh) continue;
    let top = 0;
    stack[top++] = start;
    seen[start] = 1;
    members.length = 0;
    let minX = width;
    let minY = height;
    let maxX = -1;
    let maxY = -1;
    let sumX = 0;
    let sumY = 0;
    while (top > 0) {
      const p = stack[--top]!;
      members.push(p);
      const y = (p / width) | 0;
      const x = p - y * width;
      sumX += x;
      sumY += y;
      if (x < minX) minX = x;
      if (x > maxX) maxX = x;
      if (y < minY) minY = y;
      if (y > maxY) maxY = y;
      for (let yy = Math.max(0, y - 1); yy <= Math.min(height - 1, y + 1); yy++) {
        for (let xx = Math.max(0, x - 1); xx <= Math.min(width - 1, x + 1); xx++) {
          const q = yy * width + xx;
          if (!seen[q] && prob[q]! > options.thresh) {
            seen[q] = 1;
            stack[top++] = q;
          }
        }
      }
    }
    if (Math.min(maxX - minX + 1, maxY - minY + 1) < options.minSize) continue;

    const count = members.length;
    const mx = sumX / count;
    const my = sumY / count;
    let cxx = 0;
    let cyy = 0;
    let cxy = 0;
    for (const p of members) {
      const y = (p / width) | 0;
      const dx = p - y * width - mx;
      const dy = y - my;
      cxx += dx * dx;
      cyy += dy * dy;
      cxy += dx * dy;
    }
    let angle = 0.5 * Math.atan2(2 * cxy, cxx - cyy);
    if (Math.abs(angle) > options.maxAngle) angle = 0;
    const cos = Math.cos(angle);
    const sin = Math.sin(angle);
    let uMin = Infinity;
    let uMax = -Infinity;
    let vMin = Infinity;
    let vMax = -Infinity;
    for (const p of members) {
      const y = (p / width) | 0;
      const dx = p - y * width - mx;
      const dy = y - my;
      const u = dx * cos + dy * sin;
      const v = dy * cos - dx * sin;
      if (u < uMin) uMin = u;
      if (u > uMax) uMax = u;
      if (v < vMin) vMin = v;
      if (v > vMax) vMax = v;
    }
    const w = uMax - uMin + 1;
    const h = vMax - vMin + 1;
    if (Math.min(w, h) < options.minSize) continue;
    const cu = (uMin + uMax) / 2;
    const cv = (vMin + vMax) / 2;
    const ccx = mx + cu * cos - cv * sin;
    const ccy = my + cu * sin + cv * cos;

    let sum = 0;
    let inside = 0;
    for (let y = minY; y <= maxY; y++) {
      for (let x = minX; x <= maxX; x++) {
        const dx = x - ccx;
        const dy = y - ccy;
        if (Math.abs(dx * cos + dy * sin) <= w / 2 && Math.abs(dy * cos - dx * sin) <= h / 2) {
          sum += prob[y * width + x]!;
          inside++;
        }
      }
    }
    const score = inside ? sum / inside : 0;
    if (score < options.boxThresh) continue;

    const grow = (w * h * options.unclipRatio) / (2 * (w + h));
    const gw = w + 2 * grow;
    const gh = h + 2 * grow;
    // To source pixels: the map may be scaled differently along x and y (rounded to multiples of 32).
    const cx = (ccx + 0.5) * scaleX;
    const cy = (ccy + 0.5) * scaleY;
    const sw = gw * Math.hypot(cos * scaleX, sin * scaleY);
    const sh = gh * Math.hypot(sin * scaleX, cos * scaleY);
    const a = Math.atan2(sin * scaleY, cos * scaleX);
    const ex = (Math.abs(Math.cos(a)) * sw + Math.abs(Math.sin(a)) * sh) / 2;
    const ey = (Math.abs(Math.sin(a)) * sw + Math.abs(Math.cos(a)) * sh) / 2;
    const x0 = Math.max(0, cx - ex);
    const y0 = Math.max(0, cy - ey);
    const x1 = Math.min(srcWidth, cx + ex);
    const y1 = Math.min(srcHeight, cy + ey);
    if (x1 - x0 < 2 || y1 - y0 < 2) continue;
    boxes.push({ cx, cy, w: sw, h: sh, angle: a, x0, y0, x1, y1, score });
  }
  return boxes;
}
