/** Greyscale resampling for the detector and recognizer inputs (the raster is already grey: no canvas needed). */

interface Taps {
  /** First source index of each output sample. */
  start: Int32Array;
  /** Number of taps of each output sample. */
  count: Int32Array;
  /** `stride` weights per output sample. */
  weights: Float32Array;
  stride: number;
}

/**
 * Weights mapping the source span [`srcStart`, `srcStart + srcSpan`) onto `dstLength` samples: a box filter over
 * each output pixel's footprint when shrinking (area averaging, no aliasing), linear interpolation when enlarging.
 * Indices are clamped to [0, `srcLimit`) (edges replicated).
 */
function taps(srcStart: number, srcSpan: number, dstLength: number, srcLimit: number): Taps {
  const scale = srcSpan / dstLength;
  const stride = Math.ceil(Math.max(1, scale)) + 2;
  const start = new Int32Array(dstLength);
  const count = new Int32Array(dstLength);
  const weights = new Float32Array(dstLength * stride);
  for (let i = 0; i < dstLength; i++) {
    const center = srcStart + (i + 0.5) * scale;
    const o = i * stride;
    let n = 0;
    if (scale > 1) {
      const lo = center - scale / 2;
      const hi = center + scale / 2;
      const first = Math.min(srcLimit - 1, Math.max(0, Math.floor(lo)));
      const last = Math.max(first, Math.min(srcLimit - 1, Math.ceil(hi) - 1));
      let sum = 0;
      for (let s = first; s <= last && n < stride; s++, n++) {
        const overlap = Math.min(hi, s + 1) - Math.max(lo, s);
        const w = overlap > 0 ? overlap : 0;
        weights[o + n] = w;
        sum += w;
      }
      if (sum > 0) for (let k = 0; k < n; k++) weights[o + k] = weights[o + k]! / sum;
      else weights[o] = 1;
      start[i] = first;
    } else {
      const pos = center - 0.5;
      const s0 = Math.floor(pos);
      const f = pos - s0;
      const a = Math.min(srcLimit - 1, Math.max(0, s0));
      const b = Math.min(srcLimit - 1, Math.max(0, s0 + 1));
      start[i] = a;
      if (a === b) {
        weights[o] = 1;
        n = 1;
      } else {
        weights[o] = 1 - f;
        weights[o + 1] = f;
        n = 2;
      }
    }
    count[i] = n;
  }
  return { start, count, weights, stride };
}

export interface Region {
  x: number;
  y: number;
  width: number;
  height: number;
}

/**
 * Resample `region` (source pixels, may be fractional or reach past the edges) of a grey image to
 * `dstWidth`×`dstHeight`. Values stay 0–255 (as floats).
 */
export function resampleGrey(
  src: Uint8Array,
  srcWidth: number,
  srcHeight: number,
  region: Region,
  dstWidth: number,
  dstHeight: number,
): Float32Array {
  const xt = taps(region.x, region.width, dstWidth, srcWidth);
  const yt = taps(region.y, region.height, dstHeight, srcHeight);
  let rowFirst = srcHeight;
  let rowLast = 0;
  for (let j = 0; j < dstHeight; j++) {
    rowFirst = Math.min(rowFirst, yt.start[j]!);
    rowLast = Math.max(rowLast, yt.start[j]! + yt.count[j]! - 1);
  }
  const rows = rowLast - rowFirst + 1;
  // Horizontal pass over the rows the vertical pass needs.
  const tmp = new Float32Array(rows * dstWidth);
  for (let r = 0; r < rows; r++) {
    const srcRow = (rowFirst + r) * srcWidth;
    const outRow = r * dstWidth;
    for (let i = 0; i < dstWidth; i++) {
      const s = srcRow + xt.start[i]!;
      const wo = i * xt.stride;
      let acc = 0;
      for (let k = 0; k < xt.count[i]!; k++) acc += src[s + k]! * xt.weights[wo + k]!;
      tmp[outRow + i] = acc;
    }
  }
  const out = new Float32Array(dstWidth * dstHeight);
  for (let j = 0; j < dstHeight; j++) {
    const s = yt.start[j]! - rowFirst;
    const wo = j * yt.stride;
    const outRow = j * dstWidth;
    for (let k = 0; k < yt.count[j]!; k++) {
      const w = yt.weights[wo + k]!;
      const tmpRow = (s + k) * dstWidth;
      for (let i = 0; i < dstWidth; i++) out[outRow + i] = out[outRow + i]! + tmp[tmpRow + i]! * w;
    }
  }
  return out;
}

/** A rectangle turned by `angle` radians about its centre; `w` runs along the text, `h` across it. */
export interface RotatedBox {
  cx: number;
  cy: number;
  w: number;
  h: number;
  angle: number;
}

/**
 * Sample a rotated rectangle of a grey image to `dstWidth`×`dstHeight` (the recognizer's crop): bilinear with
 * k×k supersampling when shrinking, edges replicated. A box that is (almost) not rotated is area-resampled.
 */
export function sampleRotated(
  src: Uint8Array,
  srcWidth: number,
  srcHeight: number,
  box: RotatedBox,
  dstWidth: number,
  dstHeight: number,
): Float32Array {
  if (Math.abs(box.angle) < 0.002) {
    const region = { x: box.cx - box.w / 2, y: box.cy - box.h / 2, width: box.w, height: box.h };
    return resampleGrey(src, srcWidth, srcHeight, region, dstWidth, dstHeight);
  }
  const out = new Float32Array(dstWidth * dstHeight);
  const cos = Math.cos(box.angle);
  const sin = Math.sin(box.angle);
  const su = box.w / dstWidth;
  const sv = box.h / dstHeight;
  const ku = Math.min(4, Math.max(1, Math.round(su)));
  const kv = Math.min(4, Math.max(1, Math.round(sv)));
  const norm = 1 / (ku * kv);
  const maxX = srcWidth - 1;
  const maxY = srcHeight - 1;
  for (let j = 0; j < dstHeight; j++) {
    for (let i = 0; i < dstWidth; i++) {
      let acc = 0;
      for (let b = 0; b < kv; b++) {
        const v = (j + (b + 0.5) / kv) * sv - box.h / 2;
        for (let a = 0; a < ku; a++) {
          const u = (i + (a + 0.5) / ku) * su - box.w / 2;
          const x = Math.min(maxX, Math.max(0, box.cx + u * cos - v * sin - 0.5));
          const y = Math.min(maxY, Math.max(0, box.cy + u * sin + v * cos - 0.5));
          const x0 = Math.floor(x);
          const y0 = Math.floor(y);
          const x1 = Math.min(maxX, x0 + 1);
          const y1 = Math.min(maxY, y0 + 1);
          const fx = x - x0;
          const fy = y - y0;
          const top = src[y0 * srcWidth + x0]! * (1 - fx) + src[y0 * srcWidth + x1]! * fx;
          const bottom = src[y1 * srcWidth + x0]! * (1 - fx) + src[y1 * srcWidth + x1]! * fx;
          acc += top * (1 - fy) + bottom * fy;
        }
      }
      out[j * dstWidth + i] = acc * norm;
    }
  }
  return out;
}
