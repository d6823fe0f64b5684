import { OcrError } from "./ocr-error";

/*
 * A TIFF's structure read without decoding a pixel: its pages (the chain of image file directories, less thumbnails and
 * masks), each page's size, samples and compression, and where its strips or tiles are. Everything the limits need is
 * here, so a file is refused (too large, truncated, a compression not read) before any decoder runs; the server does
 * it when a request or job is accepted, the engine process again before it decodes a page (lib/ocr/engine/tiff.ts).
 * Parsed by hand rather than by the decoder's own reader (utif2's `decode` follows a looping IFD chain for ever and
 * reads every tag of every IFD): here every offset is checked against the file and every IFD is read once.
 *
 * It runs on the server's main thread, so its work is bounded before it is done (issue 39 point 9): entries and values
 * may point at the same bytes (a directory of 87 000 entries all naming one array of 1000 values is 87 million values
 * from a 1 MB file), so the bytes of directories and values read count against the file's own length (`readBudget`),
 * and the numbers read against `MAX_TIFF_VALUES`. A file past either is refused (`too_complex`) before the read.
 */

/** Compressions (tag 259) the engine decodes, by their TIFF code. */
export const TIFF_COMPRESSIONS: ReadonlyMap<number, string> = new Map([
  [1, "none"],
  [2, "CCITT modified Huffman"],
  [3, "CCITT Group 3"],
  [4, "CCITT Group 4"],
  [5, "LZW"],
  [7, "JPEG"],
  [8, "Deflate"],
  [32946, "Deflate"],
  [32773, "PackBits"],
]);

/** More IFDs than this is not a document (and bounds the work of reading the chain). */
const MAX_IFDS = 10_000;
/**
 * Bytes of directories and tag values read beyond the file's own length: what pages that share small values (a
 * BitsPerSample array, a colour map) read more than once. A file whose directories read its bytes over and over is
 * refused past it.
 */
export const TIFF_SHARED_READ_BYTES = 1024 * 1024;
/**
 * Numbers (not bytes) read from all directories: ~10 ms of the main thread. A real file's are its strips' offsets and
 * lengths, a few per page (2 000 pages of 100 strips: 400 000).
 */
export const MAX_TIFF_VALUES = 2_000_000;
/** Photometric interpretations read: WhiteIsZero, BlackIsZero, RGB, palette, CMYK, YCbCr (JPEG pages only). */
const PHOTOMETRICS = new Set([0, 1, 2, 3, 5, 6]);

/** A page's tags as utif2 takes them (`t<tag>` → values; JPEGTables as bytes). */
export type TiffTags = Record<string, number[] | Uint8Array>;

export interface TiffPage {
  /** 1-based among the file's pages. */
  number: number;
  width: number;
  height: number;
  compression: number;
  photometric: number;
  bitsPerSample: number;
  samplesPerPixel: number;
  /** Horizontal and vertical resolution in dots per inch, when the file states them (a fax's differ: 204 × 98). */
  dpi?: { x: number; y: number };
  /** Strips (or tiles): where each one's data is, and the rows (tile: the size) each one holds. */
  segments: Array<{ offset: number; length: number }>;
  tile?: { width: number; height: number };
  rowsPerStrip: number;
  tags: TiffTags;
}

const corrupt = (detail: string) => new OcrError("unreadable", `The TIFF file is truncated or corrupt: ${detail}`);

/** TIFF field types → bytes per value (BYTE, ASCII, SHORT, LONG, RATIONAL, SBYTE, UNDEFINED, SSHORT, SLONG, SRATIONAL, FLOAT, DOUBLE, IFD). */
const TYPE_BYTES: Record<number, number> = {
  1: 1,
  2: 1,
  3: 2,
  4: 4,
  5: 8,
  6: 1,
  7: 1,
  8: 2,
  9: 4,
  10: 8,
  11: 4,
  12: 8,
  13: 4,
};
/** The tags read (the rest are skipped unread). */
const WANTED = new Set([
  254, 255, 256, 257, 258, 259, 262, 266, 273, 277, 278, 279, 282, 283, 284, 292, 293, 296, 317, 320, 322, 323, 324,
  325, 338, 339, 347,
]);

/** Whether the bytes start like a TIFF (II*\0 or MM\0*), or a BigTIFF (version 43), which `readTiffPages` refuses. */
export function isTiff(bytes: Uint8Array): boolean {
  return (
    bytes.length >= 4 &&
    ((bytes[0] === 0x49 && bytes[1] === 0x49 && (bytes[2] === 42 || bytes[2] === 43) && bytes[3] === 0) ||
      (bytes[0] === 0x4d && bytes[1] === 0x4d && bytes[2] === 0 && (bytes[3] === 42 || bytes[3] === 43)))
  );
}

/**
 * The pages of a TIFF, in file order, each checked to be decodable (compression, samples, its data inside the file).
 * The pixel limits are the caller's (`checkTiffPage`): a page selection may leave an oversized page out.
 */
export function readTiffPages(bytes: Uint8Array, meter: TiffReadMeter = { bytes: 0, values: 0 }): TiffPage[] {
  if (!isTiff(bytes)) throw corrupt("no TIFF header");
  if (bytes.length < 8) throw corrupt("the header is incomplete");
  const little = bytes[0] === 0x49;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const u16 = (o: number) => view.getUint16(o, little);
  const u32 = (o: number) => view.getUint32(o, little);
  if (u16(2) === 43)
    throw new OcrError("unsupported_type", "Unsupported TIFF: BigTIFF (64-bit offsets) is not read; save it as a TIFF");
  const pages: TiffPage[] = [];
  const seen = new Set<number>();
  const budget = readBudget(bytes.length);
  /** Count `size` bytes (and `values` numbers) about to be read; refuse the file if they pass its budget. */
  const spend = (size: number, values: number) => {
    if (meter.bytes + size > budget || meter.values + values > MAX_TIFF_VALUES) {
      throw new OcrError(
        "too_complex",
        "The TIFF's directories read more data than the file holds (its entries point at the same values over and over)",
      );
    }
    meter.bytes += size;
    meter.values += values;
  };
  let offset = u32(4);
  while (offset !== 0) {
    if (seen.has(offset)) throw corrupt("its directories form a loop");
    if (seen.size >= MAX_IFDS)
      throw new OcrError("too_many_pages", `The TIFF has more than ${MAX_IFDS} directories`, { limit: MAX_IFDS });
    seen.add(offset);
    if (offset + 2 > bytes.length) throw corrupt("a directory lies past the end of the file");
    const count = u16(offset);
    if (offset + 2 + count * 12 + 4 > bytes.length) throw corrupt("a directory runs past the end of the file");
    spend(2 + count * 12 + 4, 0);
    const tags: TiffTags = {};
    for (let i = 0; i < count; i++) {
      const entry = offset + 2 + i * 12;
      const tag = u16(entry);
      const size = TYPE_BYTES[u16(entry + 2)];
      if (!WANTED.has(tag) || size === undefined) continue;
      const type = u16(entry + 2);
      const n = u32(entry + 4);
      const total = size * n;
      const at = total <= 4 ? entry + 8 : u32(entry + 8);
      if (at + total > bytes.length) throw corrupt(`tag ${tag} points past the end of the file`);
      spend(total, isByteType(type) ? 0 : n);
      tags[`t${tag}`] = readValues(bytes, view, little, type, at, n);
    }
    const page = toPage(tags, pages.length + 1, bytes.length);
    if (page) pages.push(page);
    offset = u32(offset + 2 + count * 12);
  }
  if (pages.length === 0) throw new OcrError("unreadable", "The TIFF file has no pages");
  return pages;
}

/** What reading a TIFF's directories did (`readTiffPages`): bytes of directories and values, and numbers read. */
export interface TiffReadMeter {
  bytes: number;
  values: number;
}

/** Bytes of directories and values reading a file of `length` bytes may read: each of its own once, and some shared. */
export function readBudget(length: number): number {
  return length + TIFF_SHARED_READ_BYTES;
}

/** BYTE, ASCII, SBYTE, UNDEFINED: kept as bytes (one copy), not numbers. */
const isByteType = (type: number) => type === 7 || type === 1 || type === 2 || type === 6;

function readValues(
  bytes: Uint8Array,
  view: DataView,
  little: boolean,
  type: number,
  at: number,
  n: number,
): number[] | Uint8Array {
  if (isByteType(type)) return bytes.slice(at, at + n);
  const values: number[] = [];
  for (let i = 0; i < n; i++) {
    if (type === 3) values.push(view.getUint16(at + 2 * i, little));
    else if (type === 8) values.push(view.getInt16(at + 2 * i, little));
    else if (type === 4 || type === 13) values.push(view.getUint32(at + 4 * i, little));
    else if (type === 9) values.push(view.getInt32(at + 4 * i, little));
    else if (type === 5 || type === 10) {
      const read = type === 5 ? view.getUint32.bind(view) : view.getInt32.bind(view);
      values.push(read(at + 8 * i, little), read(at + 8 * i + 4, little));
    } else if (type === 11) values.push(view.getFloat32(at + 4 * i, little));
    else values.push(view.getFloat64(at + 8 * i, little));
  }
  return values;
}

const first = (tags: TiffTags, tag: number, fallback?: number): number | undefined => {
  const value = tags[`t${tag}`];
  return value !== undefined && value.length > 0 ? Number(value[0]) : fallback;
};

/** A page from its IFD's tags, or null for what is not a page (a thumbnail, a mask, an IFD without an image). */
function toPage(tags: TiffTags, number: number, fileLength: number): TiffPage | null {
  const subfile = first(tags, 254, 0)!;
  if ((subfile & 0b101) !== 0 || first(tags, 255) === 2) return null; // reduced resolution, transparency mask
  const width = first(tags, 256);
  const height = first(tags, 257);
  if (width === undefined || height === undefined) return null;
  if (width < 1 || height < 1) throw new OcrError("unreadable", `The TIFF's page ${number} has no pixels`);
  const where = `the TIFF's page ${number}`;
  const compression = first(tags, 259, 1)!;
  const name = TIFF_COMPRESSIONS.get(compression);
  if (!name) {
    throw new OcrError(
      "unsupported_type",
      `Unsupported TIFF: ${where} is compressed with method ${compression}; read are none, LZW, Deflate, PackBits, JPEG and CCITT Group 3 and 4`,
    );
  }
  const samplesPerPixel = first(tags, 277, 1)!;
  const bitsPerSample = first(tags, 258, 1)!;
  const photometric = first(tags, 262, bitsPerSample === 1 ? 0 : samplesPerPixel >= 3 ? 2 : 1)!;
  const unsupported = (what: string) => new OcrError("unsupported_type", `Unsupported TIFF: ${where} ${what}`);
  if (!PHOTOMETRICS.has(photometric) || (photometric === 6 && compression !== 7)) {
    throw unsupported(`uses colour model ${photometric}; read are black and white, grey, RGB, palette and CMYK`);
  }
  if (first(tags, 339, 1) !== 1 && compression !== 7)
    throw unsupported("stores its samples as floating point or signed numbers");
  if (samplesPerPixel > 1 && first(tags, 284, 1) === 2)
    throw unsupported("stores its colour planes apart (PlanarConfiguration 2)");
  if (compression !== 7) {
    const depths = photometric === 3 ? [1, 2, 4, 8] : photometric <= 1 ? [1, 2, 4, 8, 16] : [8, 16];
    if (!depths.includes(bitsPerSample) || samplesPerPixel < 1 || samplesPerPixel > 5) {
      throw unsupported(`has ${samplesPerPixel} samples of ${bitsPerSample} bits per pixel`);
    }
    if (photometric === 5 && (samplesPerPixel < 4 || bitsPerSample !== 8))
      throw unsupported("is CMYK with other than 4 samples of 8 bits");
    if (photometric === 3 && (tags.t320?.length ?? 0) < 3 * 2 ** bitsPerSample)
      throw corrupt(`${where} has no colour map`);
  }
  if (compression >= 2 && compression <= 4 && (bitsPerSample !== 1 || samplesPerPixel !== 1)) {
    throw corrupt(`${where} is CCITT-compressed but not black and white`);
  }
  const predictor = first(tags, 317, 1);
  if (predictor !== 1 && predictor !== 2) throw unsupported(`uses predictor ${predictor}`);

  const tileWidth = first(tags, 322);
  const tileHeight = first(tags, 323);
  const tiled = tileWidth !== undefined || tileHeight !== undefined;
  if (tiled && (!tileWidth || !tileHeight || tileWidth > 65_536 || tileHeight > 65_536))
    throw corrupt(`${where} has a bad tile size`);
  const rowsPerStrip = Math.max(1, Math.min(first(tags, 278, height)!, height));
  const offsets = tags[tiled ? "t324" : "t273"];
  const lengths = tags[tiled ? "t325" : "t279"];
  const expected = tiled
    ? Math.ceil(width / tileWidth!) * Math.ceil(height / tileHeight!)
    : Math.ceil(height / rowsPerStrip);
  if (!offsets || !lengths || offsets.length < expected || lengths.length < expected) {
    throw corrupt(`${where} does not say where all its ${tiled ? "tiles" : "strips"} are`);
  }
  const segments = Array.from({ length: expected }, (_, i) => ({
    offset: Number(offsets[i]),
    length: Number(lengths[i]),
  }));
  for (const segment of segments) {
    if (segment.offset + segment.length > fileLength)
      throw corrupt(`${where}'s image data ends past the end of the file`);
  }
  const dpi = resolution(tags);
  return {
    number,
    width,
    height,
    compression,
    photometric,
    bitsPerSample,
    samplesPerPixel,
    ...(dpi && { dpi }),
    segments,
    ...(tiled && { tile: { width: tileWidth!, height: tileHeight! } }),
    rowsPerStrip,
    tags,
  };
}

/** X and Y resolution in dpi (ResolutionUnit 2: inch, the default; 3: centimetre), when both are sane. */
function resolution(tags: TiffTags): { x: number; y: number } | undefined {
  const unit = first(tags, 296, 2);
  const x = tags.t282;
  const y = tags.t283;
  if (!x || !y || x.length < 2 || y.length < 2 || (unit !== 2 && unit !== 3)) return undefined;
  const scale = unit === 3 ? 2.54 : 1;
  const dx = (Number(x[0]) / Number(x[1])) * scale;
  const dy = (Number(y[0]) / Number(y[1])) * scale;
  return dx >= 10 && dx <= 10_000 && dy >= 10 && dy <= 10_000 ? { x: dx, y: dy } : undefined;
}

/** The bytes a page's pixels take once decompressed (rows padded to bytes, as TIFF stores them). */
export function decodedBytes(page: TiffPage): number {
  return Math.ceil((page.width * page.bitsPerSample * page.samplesPerPixel) / 8) * page.height;
}

/**
 * The limits on what decoding a page allocates, checked before it is decoded: its pixels (`maxPixels`, as for any
 * image) and its decompressed samples (at most 4 bytes a pixel of the limit, as an RGBA image of the limit's size).
 */
export function checkTiffPage(page: TiffPage, maxPixels: number): void {
  // A page with non-square pixels is read stretched to square ones (squareHeight): that is the size decoded.
  const height = squareHeight(page);
  const limit = `the limit is ${Math.round(maxPixels / 1e6)} megapixels`;
  if (page.width * Math.max(height, page.height) > maxPixels) {
    throw new OcrError("image_too_large", `The TIFF's page ${page.number} is ${page.width}×${height} pixels; ${limit}`);
  }
  if (decodedBytes(page) > 4 * maxPixels) {
    throw new OcrError(
      "image_too_large",
      `The TIFF's page ${page.number} decodes to ${Math.round(decodedBytes(page) / 1e6)} MB (${page.bitsPerSample * page.samplesPerPixel} bits a pixel); ${limit} of 32 bits`,
    );
  }
}

/** The height a page is read at: stretched to square pixels when its two resolutions differ (a fax's 204 × 98 dpi). */
export function squareHeight(page: Pick<TiffPage, "height" | "dpi">): number {
  if (!page.dpi) return page.height;
  const ratio = page.dpi.x / page.dpi.y;
  return ratio > 1.2 || ratio < 0.83 ? Math.max(1, Math.round(page.height * ratio)) : page.height;
}
