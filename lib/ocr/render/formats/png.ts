import { promisify } from "node:util";
import { deflate, inflate } from "node:zlib";
import { PDFHexString, PDFName, type PDFDocument, type PDFRef } from "pdf-lib";

/*
 * PNG into a PDF image without pdf-lib's embedPng, which decodes and re-compresses in JavaScript (pako) on the
 * server's event loop: ~1.6 s for an A4 page at 300 DPI. Here:
 * - grey, RGB and palette PNGs without transparency (what scanners write) go in as they are: the PNG's compressed
 *   data is a PDF Flate stream with the PNG predictors (`/Predictor 15`), nothing decoded;
 * - 8-bit grey+alpha and RGBA (what canvases and screenshots write) are inflated and deflated by zlib off the event
 *   loop, unfiltered in between, the alpha split into a soft mask (left out when fully opaque).
 * Anything else (interlaced, 16-bit with alpha, transparency by tRNS) returns null: pdf-lib embeds it.
 */

const inflateAsync = promisify(inflate);
const deflateAsync = promisify(deflate);

interface PngHeader {
  width: number;
  height: number;
  bitDepth: number;
  colorType: number;
  interlace: number;
  palette?: Uint8Array;
  transparency: boolean;
  data: Uint8Array;
}

function readPng(bytes: Uint8Array): PngHeader | null {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let header: Omit<PngHeader, "data" | "transparency" | "palette"> | undefined;
  let palette: Uint8Array | undefined;
  let transparency = false;
  const data: Uint8Array[] = [];
  for (let offset = 8; offset + 8 <= bytes.length;) {
    const length = view.getUint32(offset);
    const type = String.fromCharCode(...bytes.subarray(offset + 4, offset + 8));
    const body = bytes.subarray(offset + 8, offset + 8 + length);
    if (body.length < length) return null;
    if (type === "IHDR" && length >= 13) {
      header = {
        width: view.getUint32(offset + 8),
        height: view.getUint32(offset + 12),
        bitDepth: body[8]!,
        colorType: body[9]!,
        interlace: body[12]!,
      };
    } else if (type === "PLTE") palette = body;
    else if (type === "tRNS") transparency = true;
    else if (type === "IDAT") data.push(body);
    else if (type === "IEND") break;
    offset += 12 + length;
  }
  if (!header || data.length === 0) return null;
  return { ...header, palette, transparency, data: Buffer.concat(data) };
}

export interface EmbeddedPng {
  ref: PDFRef;
  width: number;
  height: number;
}

/** The PNG as an image XObject of `doc`, or null when it needs pdf-lib's own embedding. */
export async function embedPngFast(doc: PDFDocument, bytes: Uint8Array): Promise<EmbeddedPng | null> {
  const png = readPng(bytes);
  if (!png || png.interlace !== 0 || png.transparency) return null;
  const { width, height, bitDepth, colorType } = png;
  const context = doc.context;
  const image = (content: Uint8Array, dict: Record<string, unknown>) =>
    context.register(
      context.stream(content, {
        Type: "XObject",
        Subtype: "Image",
        Width: width,
        Height: height,
        Filter: "FlateDecode",
        ...dict,
      }),
    );

  if (colorType === 0 || colorType === 2 || (colorType === 3 && png.palette)) {
    const colors = colorType === 2 ? 3 : 1;
    const colorSpace =
      colorType === 0
        ? "DeviceGray"
        : colorType === 2
          ? "DeviceRGB"
          : context.obj([
              PDFName.of("Indexed"),
              PDFName.of("DeviceRGB"),
              png.palette!.length / 3 - 1,
              PDFHexString.of(Buffer.from(png.palette!).toString("hex")),
            ]);
    const ref = image(png.data, {
      BitsPerComponent: bitDepth,
      ColorSpace: colorSpace,
      DecodeParms: { Predictor: 15, Colors: colors, BitsPerComponent: bitDepth, Columns: width },
    });
    return { ref, width, height };
  }

  if ((colorType === 4 || colorType === 6) && bitDepth === 8) {
    const channels = colorType === 6 ? 4 : 2;
    const raw = unfilter(new Uint8Array(await inflateAsync(png.data)), width, height, channels);
    if (!raw) return null;
    const colorChannels = channels - 1;
    const color = new Uint8Array(width * height * colorChannels);
    const alpha = new Uint8Array(width * height);
    let opaque = true;
    if (channels === 4) {
      for (let p = 0, c = 0, r = 0; p < alpha.length; p++, r += 4, c += 3) {
        color[c] = raw[r]!;
        color[c + 1] = raw[r + 1]!;
        color[c + 2] = raw[r + 2]!;
        alpha[p] = raw[r + 3]!;
      }
    } else {
      for (let p = 0, r = 0; p < alpha.length; p++, r += 2) {
        color[p] = raw[r]!;
        alpha[p] = raw[r + 1]!;
      }
    }
    for (let p = 0; p < alpha.length; p++) {
      if (alpha[p] !== 255) {
        opaque = false;
        break;
      }
    }
    const colorSpace = colorChannels === 3 ? "DeviceRGB" : "DeviceGray";
    const mask = opaque
      ? undefined
      : image(new Uint8Array(await deflateAsync(alpha)), { BitsPerComponent: 8, ColorSpace: "DeviceGray" });
    const ref = image(new Uint8Array(await deflateAsync(color)), {
      BitsPerComponent: 8,
      ColorSpace: colorSpace,
      ...(mask && { SMask: mask }),
    });
    return { ref, width, height };
  }
  return null;
}

/** PNG scanlines (a filter byte, then `width × channels` bytes) → the pixels, or null when the data is short. */
function unfilter(data: Uint8Array, width: number, height: number, bpp: number): Uint8Array | null {
  const stride = width * bpp;
  if (data.length < height * (stride + 1)) return null;
  const out = new Uint8Array(height * stride);
  const zero = new Uint8Array(stride);
  for (let y = 0; y < height; y++) {
    const filter = data[y * (stride + 1)]!;
    const src = data.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    const row = out.subarray(y * stride, (y + 1) * stride);
    const up = y > 0 ? out.subarray((y - 1) * stride, y * stride) : zero;
    // One loop per filter: a switch per byte costs twice the time on a 35 MB page.
    switch (filter) {
      case 0:
        row.set(src);
        break;
      case 1:
        for (let x = 0; x < bpp; x++) row[x] = src[x]!;
        for (let x = bpp; x < stride; x++) row[x] = (src[x]! + row[x - bpp]!) & 0xff;
        break;
      case 2:
        for (let x = 0; x < stride; x++) row[x] = (src[x]! + up[x]!) & 0xff;
        break;
      case 3:
        for (let x = 0; x < bpp; x++) row[x] = (src[x]! + (up[x]! >> 1)) & 0xff;
        for (let x = bpp; x < stride; x++) row[x] = (src[x]! + ((row[x - bpp]! + up[x]!) >> 1)) & 0xff;
        break;
      case 4:
        for (let x = 0; x < bpp; x++) row[x] = (src[x]! + up[x]!) & 0xff;
        for (let x = bpp; x < stride; x++) {
          const left = row[x - bpp]!;
          const above = up[x]!;
          const upLeft = up[x - bpp]!;
          const p = left + above - upLeft;
          const pa = Math.abs(p - left);
          const pb = Math.abs(p - above);
          const pc = Math.abs(p - upLeft);
          row[x] = (src[x]! + (pa <= pb && pa <= pc ? left : pb <= pc ? above : upLeft)) & 0xff;
        }
        break;
      default:
        return null;
    }
  }
  return out;
}
