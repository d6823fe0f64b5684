import { Canvas, createCanvas, loadImage, type Image } from "@napi-rs/canvas";
import { OcrError } from "../model/ocr-error";
import type { ImageType } from "../model/detect";
import { isTransposed, readImageInfo } from "../model/image-info";

/** 8-bit greyscale pixels, row-major, `data.length === width * height`. */
export interface GreyRaster {
  width: number;
  height: number;
  data: Uint8Array;
  /** The same pixels behind a binary PGM header, when the raster was drawn that way (no copy needed). */
  pgm?: Uint8Array;
}

/** Anything we can draw from: a decoded image or a canvas a PDF page was rendered to. */
export type RasterSource = Image | Canvas;

export interface DecodedImage {
  source: RasterSource;
  width: number;
  height: number;
}

function hasTail(bytes: Uint8Array, signature: number[], window: number): boolean {
  const from = Math.max(0, bytes.length - window);
  outer: for (let i = bytes.length - signature.length; i >= from; i--) {
    for (let j = 0; j < signature.length; j++) if (bytes[i + j] !== signature[j]) continue outer;
    return true;
  }
  return false;
}

/**
 * Decoders happily paint whatever part of a truncated file they could read; refuse those instead of
 * returning half a page. PNG ends with IEND; JPEG's entropy-coded data cannot contain FF D9 before its end;
 * a RIFF container states its length.
 */
function assertComplete(bytes: Uint8Array, type: ImageType): void {
  let complete: boolean;
  if (type === "png") complete = hasTail(bytes, [0x49, 0x45, 0x4e, 0x44], 64 * 1024);
  else if (type === "jpeg") complete = hasTail(bytes, [0xff, 0xd9], 256 * 1024);
  else {
    const riffSize = (bytes[4]! | (bytes[5]! << 8) | (bytes[6]! << 16)) + bytes[7]! * 0x1000000;
    complete = bytes.length >= riffSize + 8;
  }
  if (!complete) throw new OcrError("unreadable", "The image is truncated: the file ends before its data does");
}

/**
 * Decode an image after checking its header: the pixel count is limited before any decoding (decompression
 * bombs), truncated files are refused. EXIF orientation is applied (phone photos are stored sideways); the
 * returned size is the upright one.
 */
export async function decodeImage(bytes: Uint8Array, type: ImageType, maxPixels: number): Promise<DecodedImage> {
  const info = readImageInfo(bytes, type);
  if (info.width * info.height > maxPixels) {
    throw new OcrError(
      "image_too_large",
      `The image is ${info.width}×${info.height} pixels; the limit is ${Math.round(maxPixels / 1e6)} megapixels`,
    );
  }
  assertComplete(bytes, type);
  let image: Image;
  try {
    image = await loadImage(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
  } catch (error) {
    throw new OcrError("unreadable", "The image could not be decoded", { cause: error });
  }
  if (!image.width || !image.height) throw new OcrError("unreadable", "The image could not be decoded");
  if (image.width * image.height > maxPixels) {
    // The header reader and the decoder disagreed about the frame (they must not: image-info.ts reads markers as the
    // decoder does). The pixels are allocated by now; at least they are not read.
    releaseSource(image);
    throw new OcrError(
      "image_too_large",
      `The image decodes to ${image.width}×${image.height} pixels; the limit is ${Math.round(maxPixels / 1e6)} megapixels`,
    );
  }

  // Skia applies EXIF orientation while decoding; if a decoder ever does not, the dimensions tell.
  const upright = isTransposed(info.orientation)
    ? { width: info.height, height: info.width }
    : { width: info.width, height: info.height };
  if (image.width === upright.width && image.height === upright.height) {
    return { source: image, width: image.width, height: image.height };
  }
  if (image.width === info.width && image.height === info.height) {
    return orient(image, info.orientation);
  }
  return { source: image, width: image.width, height: image.height };
}

/** Apply an EXIF orientation by drawing. */
function orient(image: Image, orientation: number): DecodedImage {
  const { width: w, height: h } = image;
  const transposed = isTransposed(orientation);
  const canvas = createCanvas(transposed ? h : w, transposed ? w : h);
  const ctx = canvas.getContext("2d");
  // The standard EXIF → canvas transforms (orientation 1..8).
  const transforms: Record<number, [number, number, number, number, number, number]> = {
    2: [-1, 0, 0, 1, w, 0],
    3: [-1, 0, 0, -1, w, h],
    4: [1, 0, 0, -1, 0, h],
    5: [0, 1, 1, 0, 0, 0],
    6: [0, 1, -1, 0, h, 0],
    7: [0, -1, -1, 0, h, w],
    8: [0, -1, 1, 0, 0, w],
  };
  const t = transforms[orientation];
  if (t) ctx.setTransform(...t);
  ctx.drawImage(image, 0, 0);
  releaseSource(image);
  return { source: canvas, width: canvas.width, height: canvas.height };
}

/**
 * Free a decoded image's or a canvas's pixels now. V8 does not see their size (it lives in Skia), so it
 * collects the small JS wrappers late and a busy instance would hold hundreds of MB of pixels nobody uses.
 */
export function releaseSource(source: RasterSource): void {
  if (source instanceof Canvas) {
    source.width = 0;
    source.height = 0;
  } else {
    try {
      source.src = new Uint8Array(0);
    } catch {
      // Nothing to free.
    }
  }
}

/** A rectangle in source pixels. */
export interface Rect {
  x: number;
  y: number;
  width: number;
  height: number;
}

/** Rows of RGBA read back at a time: bounds the transient copy whatever the page size. */
const STRIP_BYTES = 4 * 1024 * 1024;

/**
 * Draw the `crop` region of `source` (default: all of it) scaled to `width`×`height` on white (transparent
 * pixels become paper) and return it as greyscale (ITU-R BT.601 luma). The drawing goes through a canvas one
 * strip high, so no full-size RGBA copy of the page exists; each strip draws only the source rows it covers,
 * plus a margin so the resampling filter sees the same neighbours as in one draw (no seams). A 1:1 copy of a
 * canvas skips drawing and reads its pixels. The result is written straight into a PGM buffer (see `toPgm`).
 */
export function drawGrey(source: RasterSource, width: number, height: number, crop?: Rect): GreyRaster {
  const region = crop ?? { x: 0, y: 0, width: source.width, height: source.height };
  const scaleX = width / region.width;
  const scaleY = height / region.height;
  const header = new TextEncoder().encode(`P5\n${width} ${height}\n255\n`);
  const pgm = new Uint8Array(header.length + width * height);
  pgm.set(header, 0);
  const data = pgm.subarray(header.length);
  const stripHeight = Math.max(1, Math.min(height, Math.floor(STRIP_BYTES / (width * 4))));

  if (source instanceof Canvas && scaleX === 1 && scaleY === 1) {
    // Same size: read the canvas itself (PDF pages are rendered opaque, on white).
    const ctx = source.getContext("2d");
    for (let y = 0; y < height; y += stripHeight) {
      toGrey(ctx.getImageData(region.x, region.y + y, width, Math.min(stripHeight, height - y)).data, data, y * width);
    }
    return { width, height, data, pgm };
  }

  const margin = 4; // destination rows: enough for the widest resampling kernel
  const canvas = createCanvas(width, stripHeight + 2 * margin);
  const ctx = canvas.getContext("2d");
  ctx.imageSmoothingEnabled = true;
  ctx.imageSmoothingQuality = "high";
  for (let y = 0; y < height; y += stripHeight) {
    const rows = Math.min(stripHeight, height - y);
    ctx.fillStyle = "#ffffff";
    ctx.fillRect(0, 0, width, canvas.height);
    // Source rows of this strip and its margins, clipped to the region; drawn so that row `y` lands at `margin`.
    const top = Math.max(0, y - margin);
    const bottom = Math.min(height, y + rows + margin);
    const sy = region.y + top / scaleY;
    const sh = (bottom - top) / scaleY;
    ctx.drawImage(source, region.x, sy, region.width, sh, 0, margin - (y - top), width, bottom - top);
    toGrey(ctx.getImageData(0, margin, width, rows).data, data, y * width);
  }
  releaseSource(canvas);
  return { width, height, data, pgm };
}

/** RGBA → grey (ITU-R BT.601 luma), written into `out` from `offset`. */
export function toGrey(rgba: Uint8ClampedArray, out: Uint8Array, offset: number): void {
  let o = offset;
  for (let i = 0; i < rgba.length; i += 4) {
    out[o++] = (rgba[i]! * 77 + rgba[i + 1]! * 150 + rgba[i + 2]! * 29) >> 8;
  }
}

/** Binary PGM (P5): the cheapest lossless way to hand greyscale pixels to Tesseract. */
export function toPgm(raster: GreyRaster): Uint8Array {
  if (raster.pgm) return raster.pgm;
  const header = new TextEncoder().encode(`P5\n${raster.width} ${raster.height}\n255\n`);
  const out = new Uint8Array(header.length + raster.data.length);
  out.set(header, 0);
  out.set(raster.data, header.length);
  return out;
}
