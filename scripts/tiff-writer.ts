import { deflateSync } from "node:zlib";

/*
 * A small TIFF writer for the test fixtures (scripts/make-fixtures.ts): pages of 8-bit grey, RGB, 1-bit or palette
 * samples, stored uncompressed, PackBits, LZW or Deflate (each encoder here, from the TIFF 6.0 specification), or a
 * JPEG given whole; several pages make a multi-page file. ImageMagick is not needed (the CCITT fixtures, which it
 * made once, are committed: tests/fixtures/tiff/README.md).
 */

export interface TiffPageInput {
  width: number;
  height: number;
  /** Rows of samples, each padded to a byte (for `compression` 7: the JPEG file). */
  data: Uint8Array;
  bitsPerSample: 1 | 8;
  samplesPerPixel: 1 | 3;
  /** 0 WhiteIsZero, 1 BlackIsZero, 2 RGB, 3 palette, 6 YCbCr (a JPEG page). */
  photometric: 0 | 1 | 2 | 3 | 6;
  /** 1 none, 5 LZW, 7 JPEG, 8 Deflate, 32773 PackBits. */
  compression: 1 | 5 | 7 | 8 | 32773;
  rowsPerStrip?: number;
  /** 16-bit colour map, red then green then blue (palette pages). */
  colorMap?: number[];
  dpi?: number;
  /** Overrides of what the header says (hostile files: a declared size the data does not have). */
  declared?: { width?: number; height?: number; compression?: number };
}

/** PackBits (TIFF 6.0 §9), one row at a time. */
function packBits(row: Uint8Array): number[] {
  const out: number[] = [];
  let i = 0;
  while (i < row.length) {
    let run = 1;
    while (i + run < row.length && run < 128 && row[i + run] === row[i]) run++;
    if (run > 1) {
      out.push(257 - run, row[i]!);
      i += run;
      continue;
    }
    let literal = 1;
    while (i + literal < row.length && literal < 128 && row[i + literal] !== row[i + literal - 1]) literal++;
    if (i + literal < row.length && literal > 1) literal--; // leave the start of the next run to it
    out.push(literal - 1, ...row.subarray(i, i + literal));
    i += literal;
  }
  return out;
}

/** LZW as TIFF writes it (TIFF 6.0 §13): MSB first, codes 9–12 bits, the code width grows one code early. */
function lzw(data: Uint8Array): Uint8Array {
  const out: number[] = [];
  let buffer = 0;
  let bits = 0;
  let width = 9;
  const emit = (code: number) => {
    buffer = (buffer << width) | code;
    bits += width;
    while (bits >= 8) {
      out.push((buffer >>> (bits - 8)) & 0xff);
      bits -= 8;
    }
    buffer &= (1 << bits) - 1;
  };
  let table = new Map<string, number>();
  let next = 258;
  const reset = () => {
    table = new Map();
    next = 258;
    width = 9;
  };
  emit(256);
  let current = "";
  for (const byte of data) {
    const candidate = current === "" ? String.fromCharCode(byte) : current + String.fromCharCode(byte);
    if (candidate.length === 1 || table.has(candidate)) {
      current = candidate;
      continue;
    }
    emit(current.length === 1 ? current.charCodeAt(0) : table.get(current)!);
    table.set(candidate, next++);
    if (next === 4093) {
      // The table is full: a Clear code, and 9-bit codes again.
      emit(256);
      reset();
    } else if (next >= 1 << width) width++; // the decoder, a code behind, widens one code early (libtiff does the same)
    current = String.fromCharCode(byte);
  }
  if (current !== "") emit(current.length === 1 ? current.charCodeAt(0) : table.get(current)!);
  emit(257);
  if (bits > 0) out.push((buffer << (8 - bits)) & 0xff);
  return Uint8Array.from(out);
}

function compress(page: TiffPageInput, strip: Uint8Array, stride: number): Uint8Array {
  switch (page.compression) {
    case 1:
    case 7:
      return strip;
    case 5:
      return lzw(strip);
    case 8:
      return new Uint8Array(deflateSync(strip));
    case 32773: {
      const out: number[] = [];
      for (let y = 0; y < strip.length / stride; y++)
        out.push(...packBits(strip.subarray(y * stride, (y + 1) * stride)));
      return Uint8Array.from(out);
    }
  }
}

/** A little-endian TIFF of `pages`, in order. */
export function writeTiff(pages: readonly TiffPageInput[]): Uint8Array {
  const chunks: Uint8Array[] = [];
  let length = 8;
  const add = (bytes: Uint8Array) => {
    const at = length;
    chunks.push(bytes);
    length += bytes.length;
    if (length % 2) {
      chunks.push(new Uint8Array(1));
      length++;
    }
    return at;
  };
  const header = new Uint8Array(8);
  const headerView = new DataView(header.buffer);
  header.set([0x49, 0x49, 42, 0]);
  const ifdOffsets: number[] = [];
  const nextFields: number[] = [];
  for (const page of pages) {
    const stride = Math.ceil((page.width * page.bitsPerSample * page.samplesPerPixel) / 8);
    const rowsPerStrip = page.compression === 7 ? page.height : (page.rowsPerStrip ?? page.height);
    const declaredRowsPerStrip = page.declared?.height ?? rowsPerStrip;
    const strips: Array<{ offset: number; length: number }> = [];
    for (let top = 0; top < page.height; top += rowsPerStrip) {
      const raw =
        page.compression === 7
          ? page.data
          : page.data.subarray(top * stride, Math.min(page.height, top + rowsPerStrip) * stride);
      const data = compress(page, raw, stride);
      strips.push({ offset: add(data), length: data.length });
    }
    const entries: Array<[number, number, number[]]> = [
      [256, 4, [page.declared?.width ?? page.width]],
      [257, 4, [page.declared?.height ?? page.height]],
      [258, 3, Array(page.samplesPerPixel).fill(page.bitsPerSample)],
      [259, 3, [page.declared?.compression ?? page.compression]],
      [262, 3, [page.photometric]],
      [273, 4, strips.map((s) => s.offset)],
      [277, 3, [page.samplesPerPixel]],
      [278, 4, [declaredRowsPerStrip]],
      [279, 4, strips.map((s) => s.length)],
      ...(page.dpi
        ? ([
            [282, 5, [page.dpi, 1]],
            [283, 5, [page.dpi, 1]],
            [296, 3, [2]],
          ] as Array<[number, number, number[]]>)
        : []),
      ...(page.colorMap ? ([[320, 3, page.colorMap]] as Array<[number, number, number[]]>) : []),
    ];
    entries.sort((a, b) => a[0] - b[0]);
    // Values longer than 4 bytes go after the directory.
    const size = { 3: 2, 4: 4, 5: 4 } as const;
    const ifd = new Uint8Array(2 + entries.length * 12 + 4);
    const view = new DataView(ifd.buffer);
    view.setUint16(0, entries.length, true);
    const extra: Array<{ field: number; values: Uint8Array }> = [];
    entries.forEach(([tag, type, values], i) => {
      const at = 2 + i * 12;
      view.setUint16(at, tag, true);
      view.setUint16(at + 2, type, true);
      view.setUint32(at + 4, type === 5 ? values.length / 2 : values.length, true);
      const bytes = new Uint8Array(values.length * size[type as 3 | 4 | 5]);
      const valueView = new DataView(bytes.buffer);
      values.forEach((value, j) =>
        type === 3 ? valueView.setUint16(j * 2, value, true) : valueView.setUint32(j * 4, value, true),
      );
      if (bytes.length <= 4) ifd.set(bytes, at + 8);
      else extra.push({ field: at + 8, values: bytes });
    });
    const ifdAt = length;
    ifdOffsets.push(ifdAt);
    nextFields.push(ifdAt + ifd.length - 4);
    // The directory, then its long values; the fields are pointed at them (the chunk is the same array).
    add(ifd);
    for (const { field, values } of extra) view.setUint32(field, add(values), true);
  }
  headerView.setUint32(4, ifdOffsets[0] ?? 0, true);
  const out = new Uint8Array(length);
  out.set(header, 0);
  let at = 8;
  for (const chunk of chunks) {
    out.set(chunk, at);
    at += chunk.length;
  }
  const outView = new DataView(out.buffer);
  for (let i = 0; i + 1 < ifdOffsets.length; i++) outView.setUint32(nextFields[i]!, ifdOffsets[i + 1]!, true);
  return out;
}

/**
 * A directory bomb (hostile tests and measurements): about `fileBytes` of directories whose entries (StripOffsets, a
 * tag every reader keeps) all point at the same `valuesPerTag` LONG values, so a reader that reads each entry's values
 * reads the file's bytes many times over — a 1 MB file of 1000-value tags is 87 million values.
 */
export function writeTiffDirectoryBomb(fileBytes: number, valuesPerTag = 1000): Uint8Array {
  const shared = 8;
  const entriesPerIfd = 8000;
  const ifdBytes = 2 + entriesPerIfd * 12 + 4;
  const start = shared + valuesPerTag * 4;
  const ifds = Math.max(1, Math.floor((fileBytes - start) / ifdBytes));
  const out = new Uint8Array(start + ifds * ifdBytes);
  const view = new DataView(out.buffer);
  out.set([0x49, 0x49, 42, 0]);
  view.setUint32(4, start, true);
  for (let i = 0; i < valuesPerTag; i++) view.setUint32(shared + 4 * i, 0, true);
  for (let d = 0; d < ifds; d++) {
    const at = start + d * ifdBytes;
    view.setUint16(at, entriesPerIfd, true);
    for (let e = 0; e < entriesPerIfd; e++) {
      const entry = at + 2 + e * 12;
      view.setUint16(entry, 273, true);
      view.setUint16(entry + 2, 4, true);
      view.setUint32(entry + 4, valuesPerTag, true);
      view.setUint32(entry + 8, shared, true);
    }
    view.setUint32(at + ifdBytes - 4, d + 1 < ifds ? at + ifdBytes : 0, true);
  }
  return out;
}
