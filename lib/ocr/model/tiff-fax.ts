import { OcrError } from "./ocr-error";

/*
 * CCITT fax data (TIFF compressions 2, 3 and 4: modified Huffman, T.4 Group 3 one- and two-dimensional, T.6 Group 4),
 * decoded with its work bounded by the page (issue 39 point 10). utif2's decoders, which this replaces, build each
 * code as a string a bit at a time and look every bit's string up, and scan the whole reference row for each bit:
 * on data that is not fax (a run of zeros never matches a code) the string grows without end and the work grows with
 * its square — 20 KB held an engine process over two minutes. Here a code is at most 13 bits (a longer one is not a
 * code: the strip stops), a run never passes the row's width, a row never reads past the page's rows, and the
 * reference row is walked once per row; every step reads at least one bit, so the work is linear in the strip's bytes
 * plus its rows. A strip that breaks before half its rows were read is not a fax page (`unreadable`); one that breaks
 * later keeps the rows it had (a fax damaged near its end).
 */

// ITU-T T.4 code tables, as bit strings: terminating codes for runs 0–63, make-up codes for 64–1728 by 64, and the
// extended make-up codes 1792–2560 that both colours share.
const TERM_WHITE =
  "00110101,000111,0111,1000,1011,1100,1110,1111,10011,10100,00111,01000,001000,000011,110100,110101,101010,101011,0100111,0001100,0001000,0010111,0000011,0000100,0101000,0101011,0010011,0100100,0011000,00000010,00000011,00011010,00011011,00010010,00010011,00010100,00010101,00010110,00010111,00101000,00101001,00101010,00101011,00101100,00101101,00000100,00000101,00001010,00001011,01010010,01010011,01010100,01010101,00100100,00100101,01011000,01011001,01011010,01011011,01001010,01001011,00110010,00110011,00110100";
const TERM_BLACK =
  "0000110111,010,11,10,011,0011,0010,00011,000101,000100,0000100,0000101,0000111,00000100,00000111,000011000,0000010111,0000011000,0000001000,00001100111,00001101000,00001101100,00000110111,00000101000,00000010111,00000011000,000011001010,000011001011,000011001100,000011001101,000001101000,000001101001,000001101010,000001101011,000011010010,000011010011,000011010100,000011010101,000011010110,000011010111,000001101100,000001101101,000011011010,000011011011,000001010100,000001010101,000001010110,000001010111,000001100100,000001100101,000001010010,000001010011,000000100100,000000110111,000000111000,000000100111,000000101000,000001011000,000001011001,000000101011,000000101100,000001011010,000001100110,000001100111";
const MAKEUP_WHITE =
  "11011,10010,010111,0110111,00110110,00110111,01100100,01100101,01101000,01100111,011001100,011001101,011010010,011010011,011010100,011010101,011010110,011010111,011011000,011011001,011011010,011011011,010011000,010011001,010011010,011000,010011011";
const MAKEUP_BLACK =
  "0000001111,000011001000,000011001001,000001011011,000000110011,000000110100,000000110101,0000001101100,0000001101101,0000001001010,0000001001011,0000001001100,0000001001101,0000001110010,0000001110011,0000001110100,0000001110101,0000001110110,0000001110111,0000001010010,0000001010011,0000001010100,0000001010101,0000001011010,0000001011011,0000001100100,0000001100101";
const MAKEUP_EXTENDED =
  "00000001000,00000001100,00000001101,000000010010,000000010011,000000010100,000000010101,000000010110,000000010111,000000011100,000000011101,000000011110,000000011111";

/** The longest run code, in bits. */
const MAX_CODE_BITS = 13;

/**
 * Run lengths by code, one table a colour (0 white, 1 black), indexed by `1 << bits | code` (the leading 1 keeps
 * `0011` apart from `011`); -1 where no code is.
 */
const RUN_TABLES: readonly Int16Array[] = [
  [TERM_WHITE, MAKEUP_WHITE],
  [TERM_BLACK, MAKEUP_BLACK],
].map(([terminating, makeUp]) => {
  const table = new Int16Array(1 << (MAX_CODE_BITS + 1)).fill(-1);
  const add = (codes: string, first: number, step: number) =>
    codes.split(",").forEach((code, i) => (table[(1 << code.length) | parseInt(code, 2)] = first + i * step));
  add(terminating!, 0, 1);
  add(makeUp!, 64, 64);
  add(MAKEUP_EXTENDED, 1792, 64);
  return table;
});

const enum Mode {
  Pass,
  Horizontal,
  Vertical,
  /** An EOL or what is not a mode code: the strip's end, or its data broken. */
  None,
}

export interface FaxOptions {
  /** 2 modified Huffman, 3 Group 3 (T.4), 4 Group 4 (T.6). */
  compression: 2 | 3 | 4;
  /** FillOrder 2: the bits of each byte are read from the lowest. */
  lsbFirst: boolean;
  /** Group 3 only, T4Options bit 0: rows may be coded two-dimensionally (a tag bit after each EOL says which). */
  twoDimensional: boolean;
}

/** What decoding read: bits, counted each time one is read (an EOL looked for and not found is read again). */
export interface FaxMeter {
  bits: number;
}

/** Thrown inside the decoder at a code that is not one: caught by `decodeFax`. */
class BadCode extends Error {}

/**
 * Decode one strip (or tile) of CCITT data into `out`: `rows` rows of `width` pixels, each padded to a byte, 1 for
 * black (utif2's layout: PhotometricInterpretation 0 reads it as stored). Returns the rows decoded. Stops at the end of
 * the data, of `rows` or of `out`; `unreadable` when the data breaks before half of the rows.
 */
export function decodeFax(
  input: Uint8Array,
  out: Uint8Array,
  width: number,
  rows: number,
  options: FaxOptions,
  meter: FaxMeter = { bits: 0 },
): number {
  const stride = Math.ceil(width / 8);
  const rowCount = Math.max(0, Math.min(rows, Math.floor(out.length / stride)));
  const totalBits = input.length * 8;
  let pos = 0;
  const bit = (): number => {
    if (pos >= totalBits) throw new BadCode("end of data");
    const byte = input[pos >> 3]!;
    const shift = options.lsbFirst ? pos & 7 : 7 - (pos & 7);
    pos++;
    meter.bits++;
    return (byte >> shift) & 1;
  };
  /** One run (make-up codes added to their terminating code) of `colour`, at most `room` pixels. */
  const readRun = (colour: number, room: number): number => {
    const table = RUN_TABLES[colour]!;
    let total = 0;
    for (;;) {
      let code = 1;
      let length = -1;
      for (let bits = 0; bits < MAX_CODE_BITS && length < 0; bits++) {
        code = (code << 1) | bit();
        length = table[code]!;
      }
      if (length < 0) throw new BadCode("not a run code");
      total += length;
      if (total > room) throw new BadCode("a run past the end of the row");
      if (length < 64) return total;
    }
  };
  /** An EOL (eleven zeros or more, then a one) if one is next; the position is kept otherwise. */
  const skipEol = (): boolean => {
    const start = pos;
    let zeros = 0;
    while (pos < totalBits) {
      if (bit() === 1) {
        if (zeros >= 11) return true;
        break;
      }
      zeros++;
    }
    pos = start;
    return false;
  };
  const readMode = (): { mode: Mode; delta: number } => {
    if (bit() === 1) return { mode: Mode.Vertical, delta: 0 };
    if (bit() === 1) return { mode: Mode.Vertical, delta: bit() === 1 ? 1 : -1 };
    if (bit() === 1) return { mode: Mode.Horizontal, delta: 0 };
    if (bit() === 1) return { mode: Mode.Pass, delta: 0 };
    if (bit() === 1) return { mode: Mode.Vertical, delta: bit() === 1 ? 2 : -2 };
    if (bit() === 1) return { mode: Mode.Vertical, delta: bit() === 1 ? 3 : -3 };
    return { mode: Mode.None, delta: 0 };
  };

  // Changing elements: where the colour changes along a row, white first; two sentinels at the width end the list.
  let reference = new Int32Array(width + 4);
  let current = new Int32Array(width + 4);
  let referenceCount = 0;

  const oneDimensional = (): number => {
    let count = 0;
    let a0 = 0;
    for (let colour = 0; a0 < width; colour ^= 1) {
      a0 += readRun(colour, width - a0);
      current[count++] = a0;
      if (count > width + 1) throw new BadCode("more changes than pixels");
    }
    return count;
  };
  const twoDimensional = (): number => {
    const changeAt = (i: number) => (i < referenceCount ? reference[i]! : width);
    let count = 0;
    let a0 = -1;
    let colour = 0;
    let r = 0; // the first change on the reference row right of a0: only moves right, as a0 does
    while (a0 < width) {
      while (r < referenceCount && reference[r]! <= a0) r++;
      // b1: the first change right of a0 to the colour opposite a0's (even indices are changes to black).
      const b = (r & 1) === colour ? r : r + 1;
      const b1 = changeAt(b);
      const b2 = changeAt(b + 1);
      const from = Math.max(a0, 0);
      const { mode, delta } = readMode();
      if (mode === Mode.Pass) {
        a0 = b2;
      } else if (mode === Mode.Horizontal) {
        const a1 = from + readRun(colour, width - from);
        const a2 = a1 + readRun(colour ^ 1, width - a1);
        current[count++] = a1;
        current[count++] = a2;
        a0 = a2;
      } else if (mode === Mode.Vertical) {
        const a1 = b1 + delta;
        if (a1 < from || a1 > width) throw new BadCode("a change out of the row's order");
        current[count++] = a1;
        a0 = a1;
        colour ^= 1;
      } else throw new BadCode("not a mode code");
      if (count > width + 1) throw new BadCode("more changes than pixels");
    }
    return count;
  };

  let decoded = 0;
  try {
    for (let row = 0; row < rowCount; row++) {
      let twoD = options.compression === 4;
      if (options.compression === 3) {
        if (skipEol() && options.twoDimensional) twoD = bit() === 0;
        else if (options.twoDimensional && row > 0) twoD = false;
      }
      const count = twoD ? twoDimensional() : oneDimensional();
      writeRow(out, row * stride, stride, current, count, width);
      [reference, current] = [current, reference];
      referenceCount = count;
      decoded++;
      if (options.compression === 2 && (pos & 7) !== 0) pos += 8 - (pos & 7); // each row starts on a byte
    }
  } catch (error) {
    if (!(error instanceof BadCode)) throw error;
    // Out of data or a broken code: a fax page cut short keeps its rows; data that is not a fax page is refused.
    if (decoded * 2 < rowCount)
      throw new OcrError(
        "unreadable",
        `The TIFF's CCITT data is not fax data (${error.message} at row ${decoded + 1})`,
      );
  }
  return decoded;
}

/** Black runs of one row (between changes 0–1, 2–3, …) set as 1 bits; the row cleared first. */
function writeRow(out: Uint8Array, at: number, stride: number, changes: Int32Array, count: number, width: number) {
  out.fill(0, at, at + stride);
  for (let i = 0; i < count; i += 2) {
    const start = changes[i]!;
    const end = Math.min(i + 1 < count ? changes[i + 1]! : width, width);
    for (let x = start; x < end;) {
      if ((x & 7) === 0 && x + 8 <= end) {
        out[at + (x >> 3)] = 0xff;
        x += 8;
      } else {
        out[at + (x >> 3)]! |= 0x80 >> (x & 7);
        x++;
      }
    }
  }
}
