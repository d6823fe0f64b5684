import { inflateSync } from "node:zlib";
import UTIF from "utif2";
import { OcrError } from "./ocr-error";
import type { TiffPage } from "./tiff";
import { decodeFax } from "./tiff-fax";

/*
 * A TIFF page's samples, decompressed by utif2 (photopea's UTIF.js: CCITT modified Huffman, Group 3 and Group 4, LZW,
 * PackBits, none), for the engine (which draws them, lib/ocr/engine/tiff.ts) and the searchable PDF (which embeds them,
 * lib/ocr/render/formats/tiff.ts). Two codecs are not left to it: utif2 inflates a Deflate strip whole, whatever it
 * grows to (an inflate bomb), and its LZW decoder loops for ever on some corrupt codes (an entry made to point at
 * itself); here zlib inflates with the strip's room in the page as its ceiling, and `decodeLzw` stops at the end of the
 * room and refuses a code the table does not have yet. Its CCITT decoders take work that grows with the square of
 * data that is not fax (issue 39 point 10): `decodeFax` (tiff-fax.ts) decodes compressions 2, 3 and 4 in time linear
 * in the strip, bounded by the page's rows. JPEG strips are complete
 * JPEGs once the page's tables are put in front (`stripJpeg`): Skia decodes them, not utif2's JavaScript decoder.
 */

interface UtifDecoder {
  _decompress: (
    img: unknown,
    ifds: unknown,
    data: Uint8Array,
    off: number,
    len: number,
    cmpr: number,
    tgt: Uint8Array,
    toff: number,
    ...rest: unknown[]
  ) => void;
}
const decoder = (UTIF as unknown as { decode: UtifDecoder }).decode;
const utifDecompress = decoder._decompress;
// Deflate, LZW and CCITT here, with the strip's room in the page as their ceiling (what utif2 would have kept anyway).
decoder._decompress = function (img, ifds, data, off, len, cmpr, tgt, toff, ...rest) {
  if (cmpr !== 8 && cmpr !== 32946 && cmpr !== 5 && cmpr !== 2 && cmpr !== 3 && cmpr !== 4)
    return utifDecompress.call(this, img, ifds, data, off, len, cmpr, tgt, toff, ...rest);
  const room = tgt.length - toff;
  if (cmpr === 2 || cmpr === 3 || cmpr === 4) {
    // utif2 passes the fill order, the strip's (or tile's) width and its rows after the target.
    const [fillOrder, width, rows] = rest as [number, number, number];
    const t4Options = (img as { t292?: number[] }).t292?.[0] ?? 0;
    decodeFax(data.subarray(off, off + len), tgt.subarray(toff), width, rows, {
      compression: cmpr,
      lsbFirst: fillOrder === 2,
      twoDimensional: (t4Options & 1) === 1,
    });
  } else if (cmpr === 5) {
    decodeLzw(data.subarray(off, off + len), tgt.subarray(toff));
  } else {
    let inflated: Buffer;
    try {
      inflated = inflateSync(data.subarray(off, off + len), { maxOutputLength: Math.max(1, room) });
    } catch (error) {
      throw new OcrError("unreadable", "The TIFF's Deflate data is corrupt or larger than its page", { cause: error });
    }
    tgt.set(inflated.subarray(0, room), toff);
  }
  // The predictor, byte order and the rest of utif2's per-strip steps, on what is now in place: "none", nothing to copy.
  return utifDecompress.call(this, img, ifds, tgt, toff, 0, 1, tgt, toff, ...rest);
};

/**
 * TIFF LZW (TIFF 6.0 §13: MSB first, 9–12-bit codes, widened one code early, 256 Clear, 257 end) into `out`, stopping
 * when it is full. A code past the table's next one is corrupt data.
 */
export function decodeLzw(input: Uint8Array, out: Uint8Array): number {
  const prefix = new Int32Array(4096);
  const suffix = new Uint8Array(4096);
  const length = new Uint16Array(4096);
  for (let i = 0; i < 256; i++) {
    prefix[i] = -1;
    suffix[i] = i;
    length[i] = 1;
  }
  let next = 258;
  let width = 9;
  let previous = -1;
  let bit = 0;
  let written = 0;
  const totalBits = input.length * 8;
  while (bit + width <= totalBits && written < out.length) {
    let code = 0;
    for (let i = 0; i < width; i++, bit++) code = (code << 1) | ((input[bit >> 3]! >> (7 - (bit & 7))) & 1);
    if (code === 257) break;
    if (code === 256) {
      next = 258;
      width = 9;
      previous = -1;
      continue;
    }
    if (code > next || (code === next && previous < 0))
      throw new OcrError("unreadable", "The TIFF's LZW data is corrupt");
    let first: number;
    if (code < next) {
      // The string of `code`, written backwards from its end.
      const size = length[code]!;
      let at = written + size - 1;
      for (let c = code; c >= 0; c = prefix[c]!, at--) if (at < out.length) out[at] = suffix[c]!;
      first = out[written] ?? suffix[rootOf(prefix, code)]!;
      written += size;
    } else {
      // KwKwK: the previous string and its own first byte.
      const size = length[previous]! + 1;
      let at = written + size - 2;
      for (let c = previous; c >= 0; c = prefix[c]!, at--) if (at < out.length) out[at] = suffix[c]!;
      first = suffix[rootOf(prefix, previous)]!;
      if (written + size - 1 < out.length) out[written + size - 1] = first;
      written += size;
    }
    if (previous >= 0 && next < 4096) {
      prefix[next] = previous;
      suffix[next] = first;
      length[next] = length[previous]! + 1;
      next++;
      if (next + 1 >= 1 << width && width < 12) width++;
    }
    previous = code;
  }
  return Math.min(written, out.length);
}

function rootOf(prefix: Int32Array, code: number): number {
  let c = code;
  while (prefix[c]! >= 0) c = prefix[c]!;
  return c;
}

/** The page's samples, decompressed by utif2: rows padded to bytes, 16-bit samples little-endian. */
export function decodeSamples(bytes: Uint8Array, page: TiffPage): Uint8Array {
  // utif2 keeps its results on the IFD object it is given: a copy, so a page can be decoded again.
  // The colour model as read (utif2 looks at t262 unguarded, and a file may leave it out).
  const ifd: Record<string, unknown> = { ...page.tags, t262: [page.photometric] };
  const buffer =
    bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength ? bytes.buffer : bytes.slice().buffer;
  // utif2 prints to the console on some paths (tiles, unknown tags): not into the engine's log.
  // eslint-disable-next-line no-console -- silenced, not used
  const log = console.log;
  try {
    // eslint-disable-next-line no-console -- silenced for the synchronous decode
    console.log = () => undefined;
    UTIF.decodeImage(buffer as ArrayBuffer, ifd as unknown as UTIF.IFD);
  } catch (error) {
    if (error instanceof OcrError) throw error;
    throw new OcrError("unreadable", `The TIFF's page ${page.number} could not be decoded`, { cause: error });
  } finally {
    // eslint-disable-next-line no-console -- restored
    console.log = log;
  }
  const data = ifd.data;
  if (!(data instanceof Uint8Array) || data.length === 0)
    throw new OcrError("unreadable", `The TIFF's page ${page.number} could not be decoded`);
  return data;
}

/** The JPEG of one strip or tile: the page's JPEGTables (without their end) in front of the strip (without its start). */
export function stripJpeg(bytes: Uint8Array, page: TiffPage, index: number): Uint8Array {
  const { offset, length } = page.segments[index]!;
  const strip = bytes.subarray(offset, offset + length);
  const tables = page.tags.t347;
  if (!tables || tables.length < 4) return strip;
  const head = Uint8Array.from(tables.slice(0, tables.length - 2)); // drop EOI
  const body = strip[0] === 0xff && strip[1] === 0xd8 ? strip.subarray(2) : strip;
  const out = new Uint8Array(head.length + body.length);
  out.set(head, 0);
  out.set(body, head.length);
  return out;
}
