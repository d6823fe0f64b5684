import { OcrError } from "./ocr-error";
import type { ImageType } from "./detect";

export interface ImageInfo {
  width: number;
  height: number;
  /** EXIF orientation 1–8 (JPEG only; 1 when absent). */
  orientation: number;
}

const truncated = () => new OcrError("unreadable", "The image is truncated or corrupt: its header is incomplete");

function u16be(b: Uint8Array, o: number): number {
  return ((b[o] ?? 0) << 8) | (b[o + 1] ?? 0);
}
function u32be(b: Uint8Array, o: number): number {
  return u16be(b, o) * 0x10000 + u16be(b, o + 2);
}
function u16le(b: Uint8Array, o: number): number {
  return (b[o] ?? 0) | ((b[o + 1] ?? 0) << 8);
}
function u24le(b: Uint8Array, o: number): number {
  return u16le(b, o) | ((b[o + 2] ?? 0) << 16);
}

function pngInfo(b: Uint8Array): ImageInfo {
  // signature (8) + IHDR length (4) + "IHDR" (4) + width (4) + height (4)
  if (b.length < 33 || String.fromCharCode(...b.subarray(12, 16)) !== "IHDR") throw truncated();
  return { width: u32be(b, 16), height: u32be(b, 20), orientation: 1 };
}

/** EXIF orientation from an APP1 segment body (starting at "Exif\0\0"), or 1. */
export function exifOrientation(segment: Uint8Array): number {
  if (segment.length < 14 || String.fromCharCode(...segment.subarray(0, 4)) !== "Exif") return 1;
  const tiff = segment.subarray(6);
  const little = tiff[0] === 0x49 && tiff[1] === 0x49;
  const big = tiff[0] === 0x4d && tiff[1] === 0x4d;
  if (!little && !big) return 1;
  const u16 = (o: number) => (little ? u16le(tiff, o) : u16be(tiff, o));
  const u32 = (o: number) => (little ? u16le(tiff, o) + u16le(tiff, o + 2) * 0x10000 : u32be(tiff, o));
  const ifd = u32(4);
  if (ifd + 2 > tiff.length) return 1;
  const entries = u16(ifd);
  for (let i = 0; i < entries; i++) {
    const entry = ifd + 2 + i * 12;
    if (entry + 12 > tiff.length) return 1;
    if (u16(entry) === 0x0112) {
      const value = u16(entry + 8);
      return value >= 1 && value <= 8 ? value : 1;
    }
  }
  return 1;
}

/**
 * The frame header libjpeg will decode, found by reading markers exactly as libjpeg's `next_marker` does (the decoder
 * behind @napi-rs/canvas): bytes other than `FF` before a marker are skipped as garbage, `FF` fill bytes are
 * swallowed, and `FF 00` is a stuffed zero — padding, not a marker with a length. Reading `FF 00 LL LL` as a segment
 * instead let a 548-byte file show a 64×64 frame while libjpeg decoded the 12000×12000 one the "segment" hid.
 * The first SOFn is the frame (libjpeg refuses a second one); SOS or EOI before any frame is a corrupt file.
 */
function jpegInfo(b: Uint8Array): ImageInfo {
  let orientation = 1;
  let offset = 2; // after SOI (the type was detected from it)
  for (;;) {
    while (offset < b.length && b[offset] !== 0xff) offset++; // garbage
    while (offset < b.length && b[offset] === 0xff) offset++; // the marker's FF and any fill bytes
    if (offset >= b.length) throw truncated();
    const marker = b[offset++]!;
    if (marker === 0x00) continue; // FF 00: a stuffed zero, discarded
    if ((marker >= 0xd0 && marker <= 0xd7) || marker === 0x01) continue; // RSTn, TEM: no parameters
    if (marker === 0xd8 || marker === 0xd9 || marker === 0xda) {
      throw new OcrError("unreadable", "The JPEG file is corrupt: it has no frame before its image data");
    }
    if (offset + 2 > b.length) throw truncated();
    const length = u16be(b, offset);
    if (length < 2) throw new OcrError("unreadable", "The JPEG file is corrupt");
    const body = offset + 2;
    if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xcc) {
      // SOF0–SOF15 (C8 is JPG, which libjpeg also takes as an unsupported frame): precision, height, width.
      if (body + 5 > b.length) throw truncated();
      return { height: u16be(b, body + 1), width: u16be(b, body + 3), orientation };
    }
    if (marker === 0xe1 && orientation === 1) {
      orientation = exifOrientation(b.subarray(body, Math.min(b.length, body + length - 2)));
    }
    offset += length;
  }
}

function webpInfo(b: Uint8Array): ImageInfo {
  if (b.length < 30) throw truncated();
  const chunk = String.fromCharCode(...b.subarray(12, 16));
  if (chunk === "VP8X") return { width: u24le(b, 24) + 1, height: u24le(b, 27) + 1, orientation: 1 };
  if (chunk === "VP8L") {
    if (b[20] !== 0x2f) throw new OcrError("unreadable", "The WebP file is corrupt");
    const bits = (b[21] ?? 0) | ((b[22] ?? 0) << 8) | ((b[23] ?? 0) << 16) | ((b[24] ?? 0) << 24);
    return { width: (bits & 0x3fff) + 1, height: ((bits >>> 14) & 0x3fff) + 1, orientation: 1 };
  }
  if (chunk === "VP8 ") {
    if (b[23] !== 0x9d || b[24] !== 0x01 || b[25] !== 0x2a) {
      throw new OcrError("unreadable", "The WebP file is corrupt");
    }
    return { width: u16le(b, 26) & 0x3fff, height: u16le(b, 28) & 0x3fff, orientation: 1 };
  }
  throw new OcrError("unreadable", "The WebP file is corrupt: unknown chunk");
}

/** Dimensions (and JPEG orientation) from the header alone, so size limits apply before any decoding. */
export function readImageInfo(bytes: Uint8Array, type: ImageType): ImageInfo {
  const info = type === "png" ? pngInfo(bytes) : type === "jpeg" ? jpegInfo(bytes) : webpInfo(bytes);
  if (info.width < 1 || info.height < 1) throw new OcrError("unreadable", "The image has no pixels");
  return info;
}

/** Orientations 5–8 swap width and height. */
export function isTransposed(orientation: number): boolean {
  return orientation >= 5 && orientation <= 8;
}
