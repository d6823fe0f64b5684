import { promisify } from "node:util";
import { deflate } from "node:zlib";
import { createCanvas, loadImage } from "@napi-rs/canvas";
import { PDFHexString, PDFName, type PDFDocument, type PDFRef } from "pdf-lib";
import type { TiffPage } from "../../model/tiff";
import { decodeSamples, stripJpeg } from "../../model/tiff-decode";
import { embedPngFast } from "./png";

const deflateAsync = promisify(deflate);

/*
 * A TIFF page as a PDF image, as losslessly as the page is stored: its samples go into a Flate image (black and white
 * at 1 bit, grey, RGB, palette as an indexed colour space, CMYK), deflated by zlib off the event loop; a page of one
 * JPEG strip goes in as that JPEG. Its size comes from the page's resolution, each axis its own (a fax's 204 × 98 dpi
 * page is a letter page again). The samples are decompressed here, in the server, by utif2: ~0.1–0.3 s for a 300 dpi
 * letter page (docs/engine.md#tiff).
 */

export interface EmbeddedTiffPage {
  ref: PDFRef;
  pageWidth: number;
  pageHeight: number;
}

export async function embedTiffPage(output: PDFDocument, bytes: Uint8Array, page: TiffPage): Promise<EmbeddedTiffPage> {
  const pageWidth = (page.width * 72) / (page.dpi?.x ?? 72);
  const pageHeight = (page.height * 72) / (page.dpi?.y ?? 72);
  if (page.compression === 7) {
    if (page.segments.length === 1)
      return { ref: (await output.embedJpg(stripJpeg(bytes, page, 0))).ref, pageWidth, pageHeight };
    return { ref: await jpegStripsAsPng(output, bytes, page), pageWidth, pageHeight };
  }
  const samples = decodeSamples(bytes, page);
  const { colorSpace, bitsPerComponent, data, decode } = pdfSamples(output, page, samples);
  const context = output.context;
  const ref = context.register(
    context.stream(new Uint8Array(await deflateAsync(data)), {
      Type: "XObject",
      Subtype: "Image",
      Width: page.width,
      Height: page.height,
      BitsPerComponent: bitsPerComponent,
      ColorSpace: colorSpace,
      Filter: "FlateDecode",
      ...(decode && { Decode: decode }),
    }),
  );
  return { ref, pageWidth, pageHeight };
}

/** The samples as a PDF image's: as they are where PDF stores them alike (rows padded to bytes), else 8-bit. */
function pdfSamples(output: PDFDocument, page: TiffPage, samples: Uint8Array) {
  const { width, height, bitsPerSample: bps, samplesPerPixel: spp, photometric } = page;
  const stride = Math.ceil((width * bps * spp) / 8);
  /** Channels `keep` of each pixel at 8 bits (16-bit samples are little-endian here: their high byte). */
  const eightBit = (keep: number) => {
    const out = new Uint8Array(width * height * keep);
    for (let y = 0, o = 0; y < height; y++) {
      for (let x = 0; x < width; x++) {
        for (let c = 0; c < keep; c++)
          out[o++] = bps === 16 ? samples[y * stride + 2 * (x * spp + c) + 1]! : samples[y * stride + x * spp + c]!;
      }
    }
    return out;
  };
  if (photometric <= 1) {
    // WhiteIsZero (0) draws 0 as white: PDF's DeviceGray takes 0 as black, so the decode range is turned round.
    const decode = photometric === 0 ? [1, 0] : undefined;
    if (spp === 1 && bps <= 8) return { colorSpace: "DeviceGray", bitsPerComponent: bps, data: samples, decode };
    return { colorSpace: "DeviceGray", bitsPerComponent: 8, data: eightBit(1), decode };
  }
  if (photometric === 3) {
    const map = page.tags.t320!;
    const levels = 2 ** bps;
    const palette = Buffer.alloc(levels * 3);
    for (let i = 0; i < levels; i++) {
      for (let c = 0; c < 3; c++) palette[i * 3 + c] = Number(map[c * levels + i]) >> 8;
    }
    const colorSpace = output.context.obj([
      PDFName.of("Indexed"),
      PDFName.of("DeviceRGB"),
      levels - 1,
      PDFHexString.of(palette.toString("hex")),
    ]);
    return { colorSpace, bitsPerComponent: bps, data: spp === 1 ? samples : eightBit(1), decode: undefined };
  }
  if (photometric === 5)
    return {
      colorSpace: "DeviceCMYK",
      bitsPerComponent: 8,
      data: spp === 4 ? samples : eightBit(4),
      decode: undefined,
    };
  return {
    colorSpace: "DeviceRGB",
    bitsPerComponent: 8,
    data: spp === 3 && bps === 8 ? samples : eightBit(3),
    decode: undefined,
  };
}

/** A JPEG page of several strips or tiles: drawn together (by Skia) and embedded as one PNG. */
async function jpegStripsAsPng(output: PDFDocument, bytes: Uint8Array, page: TiffPage): Promise<PDFRef> {
  const canvas = createCanvas(page.width, page.height);
  const ctx = canvas.getContext("2d");
  const across = page.tile ? Math.ceil(page.width / page.tile.width) : 1;
  const boxWidth = page.tile?.width ?? page.width;
  const boxHeight = page.tile?.height ?? page.rowsPerStrip;
  for (let i = 0; i < page.segments.length; i++) {
    const jpeg = stripJpeg(bytes, page, i);
    const image = await loadImage(Buffer.from(jpeg.buffer, jpeg.byteOffset, jpeg.byteLength));
    ctx.drawImage(image, (i % across) * boxWidth, Math.floor(i / across) * boxHeight);
  }
  const png = new Uint8Array(await canvas.encode("png"));
  canvas.width = 0;
  return ((await embedPngFast(output, png)) ?? (await output.embedPng(png))).ref;
}
