/**
 * Pages and their analysis rasters turned: a page drawn turned and skewed by its `PageTurn` on white (quarter turns
 * pixel on pixel), or drawn in grey at the size Tesseract reads, strip by strip, with the uncovered corners filled with
 * the paper's grey; glyph boxes and grey rasters turned by a quarter exactly; and a canvas handed over as a decoded
 * image. orientation.ts decides how a page is turned; this module only draws it so.
 */
import { createCanvas, Image, type Canvas } from "@napi-rs/canvas";
import { fromTurned, type PageTurn, type Quarter } from "../model/page-turn";
import { releaseSource, toGrey, type GreyRaster, type RasterSource, type Rect } from "./raster";
import type { Glyph } from "./text-size";

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
