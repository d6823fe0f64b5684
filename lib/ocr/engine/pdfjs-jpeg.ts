/**
 * The frame pdf.js will decode from a DCTDecode stream, found by walking markers exactly as its `JpegStream` and
 * `JpegImage.parse` do (pdfjs-dist/legacy/build/pdf.worker.mjs): bytes before the first `FF D8` are dropped, a segment
 * whose length does not land on a marker is re-scanned from its start for the next `FFC0`–`FFFE`, other unexpected
 * bytes are skipped to the next such pair, and the first SOF0/1/2 is the frame (pdf.js refuses a second one and
 * supports no other). pdf.js sizes its buffers from this frame, not from the image dictionary's /Width and /Height,
 * and its `maxImageSize` option only looks at the dictionary: a JPEG saying 12000×12000 under a dictionary saying
 * 64×64 was decoded at 144 megapixels.
 *
 * Null when pdf.js would find no frame (it then fails the image without decoding anything).
 */
export function pdfJsJpegFrame(input: Uint8Array): { width: number; height: number } | null {
  let start = 0;
  while (start + 1 < input.length && !(input[start] === 0xff && input[start + 1] === 0xd8)) start++;
  const data = start + 1 < input.length ? input.subarray(start) : input;
  const u16 = (at: number) => {
    if (at < 0 || at + 1 >= data.length) throw new RangeError("past the end");
    return (data[at]! << 8) | data[at + 1]!;
  };
  const isMarker = (value: number) => value >= 0xffc0 && value <= 0xfffe;
  /** pdf.js's `findNextFileMarker`: the marker at `current`, else the first one scanning from `from`. */
  const nextMarker = (current: number, from = current): { offset: number; invalid: boolean } | null => {
    const max = data.length - 1;
    if (current >= max) return null;
    if (isMarker(u16(current))) return { offset: current, invalid: false };
    for (let at = Math.min(from, current); at < max; at++) if (isMarker(u16(at))) return { offset: at, invalid: true };
    return null;
  };
  /** Where pdf.js goes on after an APPn or COM segment whose length field is at `offset` (`readDataBlock`). */
  const afterSegment = (offset: number) => {
    const start = offset + 2;
    let end = start + u16(offset) - 2;
    const found = nextMarker(end, start);
    if (found?.invalid) end = found.offset;
    return start + Math.max(0, Math.min(end, data.length) - start);
  };

  try {
    if (u16(0) !== 0xffd8) return null;
    let offset = 2;
    let marker = u16(offset);
    offset += 2;
    while (marker !== 0xffd9) {
      if ((marker >= 0xffe0 && marker <= 0xffef) || marker === 0xfffe) {
        offset = afterSegment(offset);
      } else if (marker === 0xffdb) {
        const end = offset + u16(offset);
        offset += 2;
        while (offset < end) {
          const spec = data[offset++]! >> 4;
          if (spec === 0) offset += 64;
          else if (spec === 1) offset += 128;
          else return null; // pdf.js: "DQT - invalid table spec"
        }
      } else if (marker === 0xffc0 || marker === 0xffc1 || marker === 0xffc2) {
        // A DNL marker in the first scan's data, when it names another line count, makes pdf.js start over with it.
        return { width: u16(offset + 5), height: Math.max(u16(offset + 3), dnlLines(data, offset)) };
      } else if (marker === 0xffc4) {
        const length = u16(offset);
        offset += 2;
        for (let i = 2; i < length;) {
          let sum = 0;
          for (let j = 0; j < 16; j++) sum += data[offset + 1 + j] ?? 0;
          offset += 17 + sum;
          i += 17 + sum;
        }
      } else if (marker === 0xffdd || marker === 0xffdc) {
        offset += 4;
      } else if (marker === 0xffda) {
        return null; // a scan before any frame: pdf.js fails on it
      } else if (marker === 0xffff) {
        if (data[offset] !== 0xff) offset--;
      } else {
        const found = nextMarker(offset - 2, offset - 3);
        if (!found?.invalid) return null; // a marker pdf.js does not support, or the end: no frame
        offset = found.offset;
      }
      if (offset >= data.length - 1) return null;
      marker = u16(offset);
      offset += 2;
    }
    return null;
  } catch (error) {
    if (error instanceof RangeError) return null; // pdf.js reads past the end and fails the same way
    throw error;
  }
}

/** The line count of a DNL marker inside the first scan after `from` (0 when there is none), as pdf.js's decodeScan finds it. */
function dnlLines(data: Uint8Array, from: number): number {
  let at = from;
  while (at + 3 < data.length && !(data[at] === 0xff && data[at + 1] === 0xda)) at++;
  at += 2 + (((data[at + 2] ?? 0) << 8) | (data[at + 3] ?? 0)); // past the scan header
  for (; at + 5 < data.length; at++) {
    if (data[at] !== 0xff) continue;
    const next = data[at + 1]!;
    if (next === 0xdc) return (data[at + 4]! << 8) | data[at + 5]!; // FF DC, length, lines
    if (next !== 0x00 && next !== 0xff && (next < 0xd0 || next > 0xd7)) return 0; // the scan ended
    at++;
  }
  return 0;
}
