import zlib from "node:zlib";

/**
 * PDF stream filters as pdf.js applies them (`Parser.makeFilter`, pdfjs-dist/legacy/build/pdf.worker.mjs), for the
 * checks that run before pdf.js opens a file: the same names and abbreviations, an unknown name passing the data
 * through unchanged (pdf.js warns and goes on), and each decoder producing pdf.js's bytes so that the next filter of a
 * chain sees what pdf.js's would. Every decoder stops as soon as its output passes a cap.
 */
export type PdfFilter =
  "flate" | "lzw" | "ahx" | "a85" | "rl" | "brotli" | "dct" | "jpx" | "jbig2" | "ccf" | "crypt" | "none";

const FILTER_NAMES: Record<string, PdfFilter> = {
  Fl: "flate",
  FlateDecode: "flate",
  LZW: "lzw",
  LZWDecode: "lzw",
  AHx: "ahx",
  ASCIIHexDecode: "ahx",
  A85: "a85",
  ASCII85Decode: "a85",
  RL: "rl",
  RunLengthDecode: "rl",
  BrotliDecode: "brotli",
  DCT: "dct",
  DCTDecode: "dct",
  JPX: "jpx",
  JPXDecode: "jpx",
  JBIG2Decode: "jbig2",
  CCF: "ccf",
  CCITTFaxDecode: "ccf",
  Crypt: "crypt",
};

/** pdf.js's reading of a filter name (after `#xx` escapes are decoded): unknown names are no filter at all. */
export function filterOf(name: string): PdfFilter {
  return Object.hasOwn(FILTER_NAMES, name) ? FILTER_NAMES[name]! : "none";
}

/** Image decoders: their output is an image of the size their own header gives (checked separately, if at all). */
export function isImageFilter(filter: PdfFilter): boolean {
  return filter === "dct" || filter === "jpx" || filter === "jbig2" || filter === "ccf";
}

/**
 * Most output bytes one input byte can become. Deflate: ~1032. LZW: a 9–12-bit code stands for at most 4096 bytes.
 * RunLength: 2 bytes → 128. ASCII85: `z` → 4 zero bytes. Brotli has no useful bound. Crypt and unknown filters pass
 * bytes through (encrypted files are not checked: their streams are ciphertext here).
 */
export const MAX_EXPANSION: Record<Exclude<PdfFilter, "dct" | "jpx" | "jbig2" | "ccf">, number> = {
  flate: 1032,
  lzw: Math.ceil((4096 * 8) / 9),
  ahx: 0.5,
  a85: 4,
  rl: 64,
  brotli: Number.POSITIVE_INFINITY,
  crypt: 1,
  none: 1,
};

export interface Decoded {
  /** The output, when it was no longer than `keepUpTo`. */
  bytes?: Buffer;
  /** Output bytes produced (more than the cap means: stopped there). */
  total: number;
}

export interface DecodeParams {
  /** LZW's `/EarlyChange` (default 1). */
  earlyChange?: number;
}

/**
 * Decode `input` with one filter, stopping once the output passes `cap` bytes. The output is returned when it is no
 * longer than `keepUpTo` (otherwise only counted). Corrupt data ends the output where pdf.js's would (it reads what it
 * can), never with an error.
 */
export async function decodeFilter(
  filter: PdfFilter,
  input: Uint8Array,
  cap: number,
  keepUpTo: number,
  params: DecodeParams = {},
): Promise<Decoded> {
  switch (filter) {
    case "flate":
      // pdf.js checks the zlib header as Node does; it does not check the trailing checksum (Z_SYNC_FLUSH: partial
      // output of a truncated stream counts).
      return pipeThrough(zlib.createInflate({ finishFlush: zlib.constants.Z_SYNC_FLUSH }), input, cap, keepUpTo);
    case "brotli":
      return pipeThrough(
        zlib.createBrotliDecompress({ finishFlush: zlib.constants.BROTLI_OPERATION_FLUSH }),
        input,
        cap,
        keepUpTo,
      );
    case "lzw":
      return collect(decodeLzw(input, params.earlyChange ?? 1), cap, keepUpTo);
    case "rl":
      return collect(decodeRunLength(input), cap, keepUpTo);
    case "ahx":
      return collect(decodeAsciiHex(input), cap, keepUpTo);
    case "a85":
      return collect(decodeAscii85(input), cap, keepUpTo);
    default:
      return {
        total: input.length,
        ...(input.length <= keepUpTo && { bytes: Buffer.from(input.buffer, input.byteOffset, input.byteLength) }),
      };
  }
}

/** Output chunks kept while their total stays within `keepUpTo`. */
class Sink {
  private chunks: Uint8Array[] | null = [];
  total = 0;

  constructor(
    private readonly cap: number,
    private readonly keepUpTo: number,
  ) {}

  /** False once the cap is passed. */
  add(chunk: Uint8Array, copy: boolean): boolean {
    this.total += chunk.length;
    if (this.total > this.cap) return false;
    if (this.total > this.keepUpTo) this.chunks = null;
    else this.chunks?.push(copy ? chunk.slice() : chunk);
    return true;
  }

  result(): Decoded {
    return { total: this.total, ...(this.chunks && this.total <= this.cap && { bytes: Buffer.concat(this.chunks) }) };
  }
}

function pipeThrough(
  transform: zlib.Inflate | zlib.BrotliDecompress,
  input: Uint8Array,
  cap: number,
  keepUpTo: number,
): Promise<Decoded> {
  return new Promise((resolve) => {
    const sink = new Sink(cap, keepUpTo);
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      transform.destroy();
      resolve(sink.result());
    };
    transform.on("data", (chunk: Buffer) => {
      if (!sink.add(chunk, false)) finish();
    });
    transform.on("end", finish);
    transform.on("error", finish);
    transform.end(input);
  });
}

/** Runs a synchronous decoder's chunks; yields to the event loop between batches of output. */
async function collect(chunks: Iterable<Uint8Array>, cap: number, keepUpTo: number): Promise<Decoded> {
  const sink = new Sink(cap, keepUpTo);
  let sinceYield = 0;
  for (const chunk of chunks) {
    if (!sink.add(chunk, true)) break;
    sinceYield += chunk.length;
    if (sinceYield > 16 << 20) {
      sinceYield = 0;
      await new Promise((resolve) => setImmediate(resolve));
    }
  }
  return sink.result();
}

const CHUNK = 64 * 1024;

/** pdf.js's `LZWStream`: 9–12-bit codes, 256 clears the table, 257 ends; `earlyChange` as in `/DecodeParms`. */
function* decodeLzw(input: Uint8Array, earlyChange: number): Generator<Uint8Array> {
  const size = 4096;
  const values = new Uint8Array(size);
  const lengths = new Uint16Array(size);
  const prevCodes = new Uint16Array(size);
  const sequence = new Uint8Array(size);
  for (let i = 0; i < 256; i++) {
    values[i] = i;
    lengths[i] = 1;
  }
  let sequenceLength = 0;
  let nextCode = 258;
  let codeLength = 9;
  let prevCode = 0;
  let cached = 0;
  let bitsCached = 0;
  let at = 0;
  let out = new Uint8Array(CHUNK + size);
  let outLength = 0;
  for (;;) {
    while (bitsCached < codeLength && at < input.length) {
      cached = ((cached << 8) | input[at++]!) & 0xffffff;
      bitsCached += 8;
    }
    if (bitsCached < codeLength) break; // pdf.js pads the end with a few zero bytes; irrelevant to a size
    bitsCached -= codeLength;
    const code = (cached >>> bitsCached) & ((1 << codeLength) - 1);
    const hasPrev = sequenceLength > 0;
    if (code < 256) {
      sequence[0] = code;
      sequenceLength = 1;
    } else if (code >= 258) {
      if (code < nextCode) {
        sequenceLength = lengths[code]!;
        for (let j = sequenceLength - 1, q = code; j >= 0; j--) {
          sequence[j] = values[q]!;
          q = prevCodes[q]!;
        }
      } else {
        sequence[sequenceLength++] = sequence[0]!;
      }
    } else if (code === 256) {
      codeLength = 9;
      nextCode = 258;
      sequenceLength = 0;
      continue;
    } else {
      break;
    }
    if (hasPrev) {
      if (nextCode < size) {
        prevCodes[nextCode] = prevCode;
        lengths[nextCode] = lengths[prevCode]! + 1;
        values[nextCode] = sequence[0]!;
      }
      nextCode++;
      const next = nextCode + earlyChange;
      codeLength = next & (next - 1) ? codeLength : Math.min(Math.log(next) / Math.LN2 + 1, 12) | 0;
    }
    prevCode = code;
    out.set(sequence.subarray(0, sequenceLength), outLength);
    outLength += sequenceLength;
    if (outLength >= CHUNK) {
      yield out.subarray(0, outLength);
      out = new Uint8Array(CHUNK + size);
      outLength = 0;
    }
  }
  if (outLength > 0) yield out.subarray(0, outLength);
}

/** pdf.js's `RunLengthStream`: n < 128 copies n + 1 bytes, n > 128 repeats the next byte 257 − n times, 128 ends. */
function* decodeRunLength(input: Uint8Array): Generator<Uint8Array> {
  let out = new Uint8Array(CHUNK + 128);
  let outLength = 0;
  let at = 0;
  while (at + 1 < input.length) {
    const n = input[at]!;
    if (n === 128) break;
    if (n < 128) {
      const run = input.subarray(at + 1, at + 2 + n);
      out.set(run, outLength);
      outLength += run.length;
      at += 2 + n;
    } else {
      out.fill(input[at + 1]!, outLength, outLength + 257 - n);
      outLength += 257 - n;
      at += 2;
    }
    if (outLength >= CHUNK) {
      yield out.subarray(0, outLength);
      out = new Uint8Array(CHUNK + 128);
      outLength = 0;
    }
  }
  if (outLength > 0) yield out.subarray(0, outLength);
}

function hexValue(ch: number): number {
  if (ch >= 0x30 && ch <= 0x39) return ch & 0x0f;
  if ((ch >= 0x41 && ch <= 0x46) || (ch >= 0x61 && ch <= 0x66)) return (ch & 0x0f) + 9;
  return -1;
}

/** pdf.js's `AsciiHexStream`: pairs of hex digits, anything else skipped, `>` ends, an odd last digit is its high half. */
function* decodeAsciiHex(input: Uint8Array): Generator<Uint8Array> {
  const out = new Uint8Array(Math.ceil(input.length / 2) + 1);
  let outLength = 0;
  let first = -1;
  for (const ch of input) {
    if (ch === 0x3e) break;
    const digit = hexValue(ch);
    if (digit === -1) continue;
    if (first === -1) {
      first = digit;
    } else {
      out[outLength++] = (first << 4) | digit;
      first = -1;
    }
  }
  if (first !== -1) out[outLength++] = first << 4;
  yield out.subarray(0, outLength);
}

/** pdf.js's `Ascii85Stream`: groups of five, `z` for four zero bytes, white space skipped, `~` ends. */
function* decodeAscii85(input: Uint8Array): Generator<Uint8Array> {
  let out = new Uint8Array(CHUNK + 4);
  let outLength = 0;
  let at = 0;
  const white = (c: number) => c === 0x20 || c === 0x09 || c === 0x0d || c === 0x0a;
  const next = () => {
    let c = at < input.length ? input[at++]! : -1;
    while (white(c)) c = at < input.length ? input[at++]! : -1;
    return c;
  };
  const group = new Array<number>(5);
  for (;;) {
    const c = next();
    if (c === -1 || c === 0x7e) break;
    if (c === 0x7a) {
      out.fill(0, outLength, outLength + 4);
      outLength += 4;
    } else {
      group[0] = c;
      let i = 1;
      for (; i < 5; i++) {
        const d = next();
        group[i] = d;
        if (d === -1 || d === 0x7e) break;
      }
      const count = i - 1;
      const ended = i < 5;
      for (; i < 5; i++) group[i] = 0x21 + 84;
      let t = 0;
      for (let k = 0; k < 5; k++) t = t * 85 + (group[k]! - 0x21);
      for (let k = 3; k >= 0; k--) {
        if (k < count) out[outLength + k] = t & 0xff;
        t = Math.floor(t / 256);
      }
      outLength += count;
      if (ended) break;
    }
    if (outLength >= CHUNK) {
      yield out.subarray(0, outLength);
      out = new Uint8Array(CHUNK + 4);
      outLength = 0;
    }
  }
  if (outLength > 0) yield out.subarray(0, outLength);
}
