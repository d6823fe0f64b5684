import { decodeFilter, filterOf, isImageFilter, MAX_EXPANSION, type PdfFilter } from "./pdf-filters";
import { isPdfWhite, PdfBudgetError, PdfName, PdfReader, PdfRef, type PdfDict, type PdfValue } from "./pdf-syntax";
import { pdfJsJpegFrame } from "./pdfjs-jpeg";

/**
 * What pdf.js would do with a file that is too much to let it try, found before it parses anything.
 *
 * Inflate bombs: pdf.js decodes a page's content streams (and fonts, forms, object streams) completely and keeps the
 * result in memory, with no limit of its own: a 1 MB content stream that inflates to 1 GB took 3.5 GB of RSS. So every
 * stream whose filters could take it past the limit is decoded once into nothing, counting bytes and stopping at the
 * limit. A stream whose compressed length × the filters' largest expansion is under the limit costs nothing.
 *
 * Every stream counts, whatever its /Type or /Subtype (pdf.js reads a stream marked /Image as page content when a page
 * says so), and its filters are read as pdf.js reads them (pdf-syntax.ts, pdf-filters.ts): `#xx` escapes in names,
 * /F before /Filter, a filter or filter array in another object (also inside an object stream), abbreviations, unknown
 * names passing bytes through, and whole chains (`[/ASCIIHexDecode /FlateDecode]`). A reference is checked against
 * every definition of its object in the file, so it does not matter which one pdf.js's cross-reference table picks.
 *
 * JPEG frames: pdf.js sizes a DCTDecode image from the JPEG's own frame header, while its `maxImageSize` option checks
 * the image dictionary's /Width and /Height. So the frame pdf.js will decode (pdfjs-jpeg.ts) of every DCT stream and of
 * every inline image in a content stream is held to the pixel limit.
 *
 * Not covered: encrypted files (their streams are ciphertext here; the memory ceiling still applies), and JPX, JBIG2
 * and CCITT data, whose decoders size their output from their own headers.
 */
export interface PdfLimits {
  /** Most bytes one stream may decode to. */
  maxStreamBytes: number;
  /** Most pixels of one image. */
  maxImagePixels: number;
}

export type PdfHazard =
  /** A stream that decodes to more than `limit` bytes. */
  | { kind: "stream"; object?: string; limit: number }
  /** An image of more than `limit` pixels that pdf.js would decode (or a stream declaring one that is also a bomb). */
  | { kind: "image"; object?: string; width: number; height: number; limit: number; inline?: boolean }
  /** A file built so that reading its objects would cost far more than its size. */
  | { kind: "structure" };

/** Chains tried per stream when references have several definitions (a real file has one). */
const MAX_CHAINS = 8;
/** Streams at most this long (decoded) are searched for inline images. */
const MAX_INLINE_SCAN_BYTES = 64 * 1024 * 1024;

interface Link {
  filter: PdfFilter;
  earlyChange?: number;
}

interface StreamObject {
  /** `12 0`. */
  object: string;
  dict: PdfDict;
  /** Offset right after the `stream` keyword. */
  streamAt: number;
}

/** The first hazard in the file, or null. */
export async function findPdfHazard(bytes: Uint8Array, limits: PdfLimits): Promise<PdfHazard | null> {
  const file = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  try {
    return await new Precheck(file, limits).run();
  } catch (error) {
    if (error instanceof PdfBudgetError) return { kind: "structure" };
    throw error;
  }
}

/** The first stream that decodes to more than `limit` bytes (pixel limits not applied), or null. */
export async function findOversizedStream(
  bytes: Uint8Array,
  limit: number,
): Promise<{ object?: string; limit: number } | null> {
  const hazard = await findPdfHazard(bytes, { maxStreamBytes: limit, maxImagePixels: Number.POSITIVE_INFINITY });
  if (!hazard || hazard.kind === "structure") return null;
  return { ...(hazard.object && { object: hazard.object }), limit };
}

class Precheck {
  private readonly reader: PdfReader;
  /** Every definition of each object (`num gen`), in file order, then those from object streams. */
  private readonly objects = new Map<string, PdfValue[]>();
  private readonly streams: StreamObject[] = [];

  constructor(
    private readonly file: Buffer,
    private readonly limits: PdfLimits,
  ) {
    this.reader = new PdfReader(file);
  }

  async run(): Promise<PdfHazard | null> {
    this.readObjects();
    // Object streams first: the other streams' filters may be objects packed in them.
    const objectStreams = new Set(
      this.streams.filter((stream) => nameOf(this.first(stream.dict.get("Type"))) === "ObjStm"),
    );
    for (const stream of objectStreams) {
      const hazard = await this.checkStream(stream, (decoded) => this.indexObjectStream(stream, decoded));
      if (hazard) return hazard;
    }
    for (const stream of this.streams) {
      if (objectStreams.has(stream)) continue;
      const hazard = await this.checkStream(stream);
      if (hazard) return hazard;
    }
    return null;
  }

  /**
   * Every `N G obj` in the file, wherever it stands (pdf.js goes wherever its cross-reference table points, and
   * rebuilds the table by scanning for headers when it is broken), read as pdf.js reads it.
   */
  private readObjects(): void {
    const { file } = this;
    for (let at = file.indexOf("obj"); at >= 0; at = file.indexOf("obj", at + 3)) {
      const after = file[at + 3];
      if (after !== undefined && !isDelimiter(after)) continue;
      const header = objectHeader(file, at);
      if (!header) continue;
      const { value, streamAt } = this.reader.readObject(at + 3);
      if (value === undefined) continue;
      const key = `${header.num} ${header.gen}`;
      const definitions = this.objects.get(key);
      if (definitions) definitions.push(value);
      else this.objects.set(key, [value]);
      if (streamAt !== undefined && value instanceof Map) this.streams.push({ object: key, dict: value, streamAt });
    }
  }

  /** The objects packed in an object stream (`/N` pairs of number and offset, then the objects from `/First`). */
  private indexObjectStream(stream: StreamObject, decoded: Buffer): void {
    const count = this.first(stream.dict.get("N"));
    const first = this.first(stream.dict.get("First"));
    if (!isCount(count) || !isCount(first)) return;
    const reader = new PdfReader(decoded);
    const pairs = decoded
      .subarray(0, Math.min(first, decoded.length))
      .toString("latin1")
      .trim()
      .split(/[\0\t\n\f\r ]+/)
      .map(Number);
    for (let i = 0; i + 1 < Math.min(pairs.length, count * 2); i += 2) {
      const num = pairs[i]!;
      const at = first + pairs[i + 1]!;
      if (!isCount(num) || !Number.isInteger(at) || at >= decoded.length) continue;
      const { value } = reader.readObject(at);
      if (value === undefined) continue;
      const key = `${num} 0`;
      const definitions = this.objects.get(key);
      if (definitions) definitions.push(value);
      else this.objects.set(key, [value]);
    }
  }

  /** One level of reference resolved to every definition (pdf.js's `Dict.get` and `fetchIfRef` resolve one level). */
  private resolve(value: PdfValue | undefined): PdfValue[] {
    if (value instanceof PdfRef) return this.objects.get(`${value.num} ${value.gen}`) ?? [null];
    return value === undefined ? [] : [value];
  }

  private first(value: PdfValue | undefined): PdfValue | undefined {
    return this.resolve(value)[0];
  }

  /**
   * The stream's data as pdf.js's `makeStream` finds it: from the line after `stream`, /Length bytes when `endstream`
   * follows them, else up to the first `endstream`. Of several possible ends (a /Length defined twice) the furthest
   * is taken: decoding more of a stream never yields less.
   */
  private streamData({ dict, streamAt }: StreamObject): Buffer {
    const { file } = this;
    let start = streamAt;
    while (start < file.length && file[start] !== 0x0d && file[start] !== 0x0a) start++;
    if (file[start] === 0x0d) start++;
    if (file[start] === 0x0a) start++;
    const found = findEndstream(file, start);
    let end = found < 0 ? file.length : found;
    for (const length of this.resolve(dict.get("Length"))) {
      const at = start + (isCount(length) ? length : 0);
      if (at > end && at <= file.length && endstreamAt(file, at)) end = at;
    }
    return file.subarray(start, end);
  }

  /** pdf.js's `Parser.filter`: /F or else /Filter, a name or an array of names; /DP or else /DecodeParms. */
  private chains(dict: PdfDict): Link[][] {
    const filters = this.resolve(dict.has("F") ? dict.get("F") : dict.get("Filter"));
    const params = this.resolve(dict.has("DP") ? dict.get("DP") : dict.get("DecodeParms"));
    const chains: Link[][] = [];
    for (const filter of filters.length > 0 ? filters : [null]) {
      if (filter instanceof PdfName) {
        chains.push([this.link(filter, params[0])]);
      } else if (Array.isArray(filter)) {
        // Each element is fetched one level; anything but a name fails the stream in pdf.js ("Bad filter name").
        let partial: Link[][] = [[]];
        filter.forEach((element, i) => {
          const param = Array.isArray(params[0]) ? this.first(params[0][i]) : undefined;
          const names = this.resolve(element).filter((value): value is PdfName => value instanceof PdfName);
          partial = partial
            .flatMap((chain) => names.map((name) => [...chain, this.link(name, param)]))
            .slice(0, MAX_CHAINS);
        });
        chains.push(...partial);
      } else {
        chains.push([]);
      }
      if (chains.length >= MAX_CHAINS) break;
    }
    return chains.slice(0, MAX_CHAINS);
  }

  private link(name: PdfName, params: PdfValue | undefined): Link {
    const filter = filterOf(name.name);
    if (filter !== "lzw" || !(params instanceof Map) || !params.has("EarlyChange")) return { filter };
    const earlyChange = this.first(params.get("EarlyChange"));
    return { filter, ...(typeof earlyChange === "number" && { earlyChange }) };
  }

  /** One stream under each of its possible filter chains; `onDecoded` gets its decoded bytes (object streams). */
  private async checkStream(stream: StreamObject, onDecoded?: (decoded: Buffer) => void): Promise<PdfHazard | null> {
    const data = this.streamData(stream);
    if (data.length === 0) return null;
    for (const chain of this.chains(stream.dict)) {
      const hazard = await this.checkChain(data, chain, stream, onDecoded);
      if (hazard) return hazard;
    }
    return null;
  }

  private async checkChain(
    data: Buffer,
    chain: Link[],
    stream: StreamObject,
    onDecoded?: (decoded: Buffer) => void,
  ): Promise<PdfHazard | null> {
    const { maxStreamBytes: limit } = this.limits;
    const imageAt = chain.findIndex((link) => isImageFilter(link.filter));
    const before = imageAt < 0 ? chain : chain.slice(0, imageAt);
    const dct = imageAt >= 0 && chain[imageAt]!.filter === "dct";
    // A JPEG's frame needs all of its bytes; inline images are looked for in streams of a sensible size.
    const decoded = await decodeChain(data, before, limit, dct ? limit : imageAt < 0 ? MAX_INLINE_SCAN_BYTES : 0);
    if (decoded === "over") return this.oversized(stream);
    if (decoded === null) return null;
    if (imageAt >= 0) {
      if (!dct) return null;
      const frame = pdfJsJpegFrame(decoded);
      if (frame && frame.width * frame.height > this.limits.maxImagePixels) {
        return { kind: "image", object: stream.object, ...frame, limit: this.limits.maxImagePixels };
      }
      return null;
    }
    onDecoded?.(decoded);
    return this.checkInlineImages(decoded, stream);
  }

  /** A stream past the limit: an image declaring more pixels than allowed is named as such (it is what the user sees). */
  private oversized(stream: StreamObject): PdfHazard {
    const object = { object: stream.object };
    const { dict } = stream;
    const width = this.first(dict.has("W") ? dict.get("W") : dict.get("Width"));
    const height = this.first(dict.has("H") ? dict.get("H") : dict.get("Height"));
    const image = nameOf(this.first(dict.get("Subtype"))) === "Image";
    if (image && isCount(width) && isCount(height) && width * height > this.limits.maxImagePixels) {
      return { kind: "image", ...object, width, height, limit: this.limits.maxImagePixels };
    }
    return { kind: "stream", ...object, limit: this.limits.maxStreamBytes };
  }

  /** Inline images (`BI … ID data EI`) in a stream pdf.js may read as page content: their JPEG frames. */
  private async checkInlineImages(content: Buffer, stream: StreamObject): Promise<PdfHazard | null> {
    if (content.indexOf("ID") < 0) return null;
    const reader = new PdfReader(content);
    for (let at = content.indexOf("BI"); at >= 0; at = content.indexOf("BI", at + 2)) {
      const before = at > 0 ? content[at - 1]! : 0x20;
      const after = content[at + 2];
      if (!isDelimiter(before) || after === undefined || !isDelimiter(after)) continue;
      const image = reader.readInlineImageDict(at + 2);
      if (!image) continue;
      const data = content.subarray(image.dataAt);
      for (const chain of this.chains(image.dict)) {
        const dctAt = chain.findIndex((link) => link.filter === "dct");
        if (dctAt < 0) continue;
        const decoded = await decodeChain(
          data,
          chain.slice(0, dctAt),
          this.limits.maxStreamBytes,
          this.limits.maxStreamBytes,
        );
        if (decoded === "over" || decoded === null) continue; // pdf.js reads inline data only up to `EI`
        const frame = pdfJsJpegFrame(decoded);
        if (frame && frame.width * frame.height > this.limits.maxImagePixels) {
          return { kind: "image", object: stream.object, ...frame, limit: this.limits.maxImagePixels, inline: true };
        }
      }
    }
    return null;
  }
}

/**
 * Decode `data` through `chain`, each filter's output capped at `limit` bytes (pdf.js keeps every stage's output in
 * memory). The result is kept when it is at most `keepUpTo` bytes (null otherwise: only counted).
 */
async function decodeChain(
  data: Buffer,
  chain: Link[],
  limit: number,
  keepUpTo: number,
): Promise<Buffer | null | "over"> {
  const links = chain.filter((link) => link.filter !== "none" && link.filter !== "crypt");
  let bytes: Buffer = data;
  for (const [i, link] of links.entries()) {
    const expansion = MAX_EXPANSION[link.filter as keyof typeof MAX_EXPANSION];
    // A filter that cannot expand its input past the limit is not watched (nothing to stop).
    const cap = expansion * bytes.length <= limit ? Number.POSITIVE_INFINITY : limit;
    const last = i === links.length - 1;
    const params = link.earlyChange === undefined ? {} : { earlyChange: link.earlyChange };
    const out = await decodeFilter(link.filter, bytes, cap, last ? keepUpTo : limit, params);
    if (out.total > limit) return "over";
    if (!out.bytes) return null;
    bytes = out.bytes;
  }
  return bytes.length <= keepUpTo ? bytes : null;
}

/** The object number and generation before the `obj` keyword at `at` (pdf.js reads both as numbers). */
function objectHeader(file: Buffer, at: number): { num: number; gen: number } | null {
  let i = at - 1;
  if (i < 0 || !(isPdfWhite(file[i]!) || (file[i]! >= 0x30 && file[i]! <= 0x39))) return null; // not `endobj`
  const readNumber = (): number | null => {
    while (i >= 0 && isPdfWhite(file[i]!)) i--;
    const end = i + 1;
    while (i >= 0 && ((file[i]! >= 0x30 && file[i]! <= 0x39) || file[i] === 0x2e || file[i] === 0x2b)) i--;
    if (end - (i + 1) === 0 || end - (i + 1) > 24) return null;
    const value = Number(file.toString("latin1", i + 1, end));
    return Number.isInteger(value) && value >= 0 ? value : null;
  };
  const gen = readNumber();
  const num = gen === null ? null : readNumber();
  return num === null || gen === null ? null : { num, gen };
}

/** Whether the first token at `at` is `endstream` (pdf.js checks this where /Length says the data ends). */
function endstreamAt(file: Buffer, at: number): boolean {
  let i = at;
  for (;;) {
    while (i < file.length && isPdfWhite(file[i]!)) i++;
    if (file[i] !== 0x25) break;
    while (i < file.length && file[i] !== 0x0a && file[i] !== 0x0d) i++;
  }
  if (file.toString("latin1", i, i + 9) !== "endstream") return false;
  const after = file[i + 9];
  return after === undefined || isDelimiter(after);
}

/** pdf.js's `#findStreamLength`: the first `endstream` (or `endsteam` / `endstrea` followed by white space). */
function findEndstream(file: Buffer, from: number): number {
  for (let at = file.indexOf("end", from); at >= 0; at = file.indexOf("end", at + 1)) {
    const rest = file.toString("latin1", at + 3, at + 9);
    if (rest === "stream") return at;
    const next = file[at + 8];
    if ((rest.startsWith("steam") || rest.startsWith("strea")) && next !== undefined && isPdfWhite(next)) return at;
  }
  return -1;
}

function isDelimiter(byte: number): boolean {
  return isPdfWhite(byte) || "()<>[]{}/%".includes(String.fromCharCode(byte));
}

function isCount(value: PdfValue | undefined): value is number {
  return typeof value === "number" && Number.isInteger(value) && value >= 0;
}

function nameOf(value: PdfValue | undefined): string | undefined {
  return value instanceof PdfName ? value.name : undefined;
}
