import { createCanvas, ImageData, loadImage, type Canvas } from "@napi-rs/canvas";
import { OcrError } from "../model/ocr-error";
import { readImageInfo } from "../model/image-info";
import { checkTiffPage, readTiffPages, squareHeight, type TiffPage } from "../model/tiff";
import { decodeSamples, stripJpeg } from "../model/tiff-decode";
import { releaseSource, type DecodedImage } from "./raster";

/*
 * One page of a TIFF, decoded inside an engine process (docs/engine.md#tiff): its samples (lib/ocr/model/tiff-decode.ts,
 * utif2) turned into RGBA a band of rows at a time onto the page's canvas; a JPEG-compressed page's strips or tiles
 * decoded by Skia, as JPEG files are, after each one's frame header was checked against the strip's size (a small page
 * hiding a huge JPEG frame is refused, as lib/ocr/model/image-info.ts does for JPEG files). The page's limits
 * (lib/ocr/model/tiff.ts `checkTiffPage`) are checked before anything is decoded.
 */

/** TIFFs an engine process keeps between the pages of one request or job (like its open PDFs). */
const MAX_OPEN_TIFFS = 4;
const openTiffs = new Map<string, { bytes: Uint8Array; pages: TiffPage[] }>();

/** The TIFF `ref` names, parsed from its bytes when this process does not hold it yet. */
export function openTiff(ref: { id: string; bytes?: Uint8Array }): { bytes: Uint8Array; pages: TiffPage[] } {
  const open = openTiffs.get(ref.id);
  if (open) return open;
  if (!ref.bytes) throw new Error(`document ${ref.id} is not open in this engine process and came without bytes`);
  const tiff = { bytes: ref.bytes, pages: readTiffPages(ref.bytes) };
  openTiffs.set(ref.id, tiff);
  while (openTiffs.size > MAX_OPEN_TIFFS) openTiffs.delete(openTiffs.keys().next().value!);
  return tiff;
}

export function closeTiff(id: string): void {
  openTiffs.delete(id);
}

/** Decode page `number` (1-based) of a TIFF: its canvas at square pixels (a fax's rows are doubled), upright as stored. */
export async function decodeTiffPage(
  bytes: Uint8Array,
  number: number,
  maxPixels: number,
  pages = readTiffPages(bytes),
): Promise<DecodedImage> {
  const page = pages[number - 1];
  if (!page) throw new OcrError("unreadable", `The TIFF has no page ${number}`);
  checkTiffPage(page, maxPixels);
  const canvas =
    page.compression === 7 ? await drawJpegPage(bytes, page, maxPixels) : drawSamples(page, decodeSamples(bytes, page));
  const height = squareHeight(page);
  if (height === page.height) return { source: canvas, width: page.width, height };
  // Non-square pixels (a fax at 204 × 98 dpi): stretched, or every letter is half as tall as it should be.
  const square = createCanvas(page.width, height);
  const ctx = square.getContext("2d");
  ctx.imageSmoothingEnabled = true;
  ctx.drawImage(canvas, 0, 0, page.width, height);
  releaseSource(canvas);
  return { source: square, width: page.width, height };
}

/** Rows converted to RGBA at a time: bounds the transient copy whatever the page size. */
const BAND_BYTES = 4 * 1024 * 1024;

/** The samples as an opaque RGBA canvas (grey, black and white, RGB with or without alpha, palette, CMYK). */
function drawSamples(page: TiffPage, data: Uint8Array): Canvas {
  const { width, height, bitsPerSample: bps, samplesPerPixel: spp, photometric } = page;
  const canvas = createCanvas(width, height);
  const ctx = canvas.getContext("2d");
  const stride = Math.ceil((width * bps * spp) / 8);
  const map = page.tags.t320;
  const levels = 2 ** bps;
  const band = Math.max(1, Math.min(height, Math.floor(BAND_BYTES / (width * 4))));
  /** Sample `s` of pixel `x` in the row at `row`, scaled to 0–255. */
  const sample = (row: number, x: number, s: number): number => {
    const index = x * spp + s;
    if (bps === 8) return data[row + index] ?? 0;
    if (bps === 16) return data[row + 2 * index + 1] ?? 0; // little-endian: the high byte
    const bit = index * bps;
    const raw = ((data[row + (bit >> 3)] ?? 0) >> (8 - bps - (bit & 7))) & (levels - 1);
    return photometric === 3 ? raw : Math.round((raw * 255) / (levels - 1));
  };
  for (let top = 0; top < height; top += band) {
    const rows = Math.min(band, height - top);
    const rgba = new Uint8ClampedArray(width * rows * 4);
    for (let y = 0; y < rows; y++) {
      const row = (top + y) * stride;
      if (photometric <= 1 && spp === 1 && (bps === 8 || bps === 1)) {
        // The common pages (grey scans, black-and-white faxes) without a call per pixel.
        const invert = photometric === 0 ? 255 : 0;
        for (let x = 0, o = y * width * 4; x < width; x++, o += 4) {
          const v = bps === 8 ? data[row + x]! : ((data[row + (x >> 3)]! >> (7 - (x & 7))) & 1) * 255;
          rgba[o] = rgba[o + 1] = rgba[o + 2] = v ^ invert;
          rgba[o + 3] = 255;
        }
        continue;
      }
      for (let x = 0, o = y * width * 4; x < width; x++, o += 4) {
        if (photometric <= 1) {
          const v = sample(row, x, 0);
          rgba[o] = rgba[o + 1] = rgba[o + 2] = photometric === 0 ? 255 - v : v;
        } else if (photometric === 3) {
          const i = bps === 8 ? sample(row, x, 0) : sample(row, x, 0);
          rgba[o] = Number(map![i]) >> 8;
          rgba[o + 1] = Number(map![levels + i]) >> 8;
          rgba[o + 2] = Number(map![2 * levels + i]) >> 8;
        } else if (photometric === 5) {
          const k = 255 - sample(row, x, 3);
          rgba[o] = ((255 - sample(row, x, 0)) * k) / 255;
          rgba[o + 1] = ((255 - sample(row, x, 1)) * k) / 255;
          rgba[o + 2] = ((255 - sample(row, x, 2)) * k) / 255;
        } else {
          rgba[o] = sample(row, x, 0);
          rgba[o + 1] = sample(row, x, Math.min(1, spp - 1));
          rgba[o + 2] = sample(row, x, Math.min(2, spp - 1));
        }
        rgba[o + 3] = 255;
      }
    }
    ctx.putImageData(new ImageData(rgba, width, rows), 0, top);
  }
  return canvas;
}

/** A JPEG-compressed page: each strip (or tile) decoded by Skia and drawn where it belongs. */
async function drawJpegPage(bytes: Uint8Array, page: TiffPage, maxPixels: number): Promise<Canvas> {
  const canvas = createCanvas(page.width, page.height);
  const ctx = canvas.getContext("2d");
  ctx.fillStyle = "#ffffff";
  ctx.fillRect(0, 0, page.width, page.height);
  const across = page.tile ? Math.ceil(page.width / page.tile.width) : 1;
  const boxWidth = page.tile?.width ?? page.width;
  const boxHeight = page.tile?.height ?? page.rowsPerStrip;
  for (let i = 0; i < page.segments.length; i++) {
    const jpeg = stripJpeg(bytes, page, i);
    let frame;
    try {
      frame = readImageInfo(jpeg, "jpeg");
    } catch (error) {
      throw new OcrError("unreadable", `The TIFF's page ${page.number} has a corrupt JPEG strip`, { cause: error });
    }
    if (frame.width > boxWidth || frame.height > boxHeight || frame.width * frame.height > maxPixels) {
      throw new OcrError(
        "image_too_large",
        `The TIFF's page ${page.number} hides a ${frame.width}×${frame.height} JPEG in a ${boxWidth}×${boxHeight} strip`,
      );
    }
    let image;
    try {
      image = await loadImage(Buffer.from(jpeg.buffer, jpeg.byteOffset, jpeg.byteLength));
    } catch (error) {
      throw new OcrError("unreadable", `The TIFF's page ${page.number} has a JPEG strip that could not be decoded`, {
        cause: error,
      });
    }
    ctx.drawImage(image, (i % across) * boxWidth, Math.floor(i / across) * boxHeight);
    releaseSource(image);
  }
  return canvas;
}
