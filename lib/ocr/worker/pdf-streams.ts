import zlib from "node:zlib";

/**
 * Inflate bombs. pdf.js inflates a page's content streams (and fonts, forms, object streams) completely and keeps
 * the result in memory; it has no limit of its own. A 1 MB content stream that inflates to 1 GB took 3.5 GB of RSS.
 * Images are not a concern here: pdf.js reads only the bytes an image's declared size needs, and the declared size
 * is bounded by `maxImageSize`.
 *
 * So before pdf.js parses anything, every Flate stream that *could* exceed the limit is inflated once into nothing,
 * counting bytes and stopping at the limit. Deflate cannot expand data more than ~1032:1, so a stream whose
 * compressed length × 1032 is under the limit is skipped unread: fonts and ordinary content streams cost nothing;
 * a large legitimate stream costs one extra inflate.
 */
const MAX_DEFLATE_RATIO = 1032;

export interface OversizedStream {
  /** `12 0` when the stream's object header was found. */
  object?: string;
  /** The limit it went past. */
  limit: number;
}

const STREAM = Buffer.from("stream");
const ENDSTREAM = Buffer.from("endstream");
/** How far back from a `stream` keyword its dictionary may start. */
const MAX_DICT_BYTES = 64 * 1024;

/** The first Flate stream of the file that inflates to more than `limit` bytes, or null. */
export async function findOversizedStream(bytes: Uint8Array, limit: number): Promise<OversizedStream | null> {
  const file = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (let at = file.indexOf(STREAM); at >= 0; at = file.indexOf(STREAM, at + STREAM.length)) {
    const stream = streamAt(file, at);
    if (!stream || stream.skip) continue;
    if ((stream.end - stream.start) * MAX_DEFLATE_RATIO <= limit) continue;
    if (await inflatesBeyond(file.subarray(stream.start, stream.end), limit)) {
      return { ...(stream.object && { object: stream.object }), limit };
    }
  }
  return null;
}

interface StreamSpan {
  start: number;
  end: number;
  /** Not Flate-encoded, or an image (bounded by its declared pixel size). */
  skip: boolean;
  object?: string;
}

/** The stream whose `stream` keyword is at `at`, when it is one (`>> stream EOL`, not `endstream`). */
function streamAt(file: Buffer, at: number): StreamSpan | null {
  if (at >= 3 && file.toString("latin1", at - 3, at) === "end") return null;
  let start = at + STREAM.length;
  if (file[start] === 0x0d) start++;
  if (file[start] === 0x0a) start++;
  else if (file[start - 1] !== 0x0d) return null; // `stream` must end its line
  let close = at - 1;
  while (close > 0 && isWhite(file[close]!)) close--;
  if (file[close] !== 0x3e || file[close - 1] !== 0x3e) return null;
  const open = matchingOpen(file, close);
  if (open < 0) return null;
  const dict = file.toString("latin1", open, close + 1);
  const filters = /\/Filter\s*(\[[^\]]*\]|\/[A-Za-z0-9]+)/.exec(dict)?.[1] ?? "";
  const firstFilter = /\/([A-Za-z0-9]+)/.exec(filters)?.[1];
  const skip = !(firstFilter === "FlateDecode" || firstFilter === "Fl") || /\/Subtype\s*\/Image\b/.test(dict);
  const length = /\/Length\s+(\d+)(?!\s+\d+\s+R)/.exec(dict)?.[1];
  let end = length === undefined ? -1 : start + Number(length);
  if (end < start || end > file.length || !endsStream(file, end)) end = file.indexOf(ENDSTREAM, start);
  if (end < 0) end = file.length;
  const header = /(\d+)\s+(\d+)\s+obj\s*$/.exec(file.toString("latin1", Math.max(0, open - 40), open));
  return { start, end, skip, ...(header && { object: `${header[1]} ${header[2]}` }) };
}

/** Index of the `<<` opening the dictionary whose closing `>>` ends at index `closeEnd` (nested ones skipped). */
function matchingOpen(file: Buffer, closeEnd: number): number {
  let depth = 0;
  const floor = Math.max(0, closeEnd - MAX_DICT_BYTES);
  for (let i = closeEnd; i > floor; i--) {
    if (file[i] === 0x3e && file[i - 1] === 0x3e) {
      depth++;
      i--;
    } else if (file[i] === 0x3c && file[i - 1] === 0x3c) {
      depth--;
      i--;
      if (depth === 0) return i;
    }
  }
  return -1;
}

function endsStream(file: Buffer, end: number): boolean {
  let i = end;
  while (i < file.length && isWhite(file[i]!)) i++;
  return file.subarray(i, i + ENDSTREAM.length).equals(ENDSTREAM);
}

function isWhite(byte: number): boolean {
  return byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09 || byte === 0x0c || byte === 0x00;
}

/** Inflate `data` into nothing, counting; true as soon as more than `limit` bytes came out. Corrupt data: false. */
function inflatesBeyond(data: Buffer, limit: number): Promise<boolean> {
  return new Promise((resolve) => {
    // A truncated or corrupt stream is pdf.js's business (it reads what it can), not a bomb.
    const inflate = zlib.createInflate({ finishFlush: zlib.constants.Z_SYNC_FLUSH });
    let total = 0;
    let done = false;
    const finish = (beyond: boolean) => {
      if (done) return;
      done = true;
      inflate.destroy();
      resolve(beyond);
    };
    inflate.on("data", (chunk: Buffer) => {
      total += chunk.length;
      if (total > limit) finish(true);
    });
    inflate.on("end", () => finish(false));
    inflate.on("error", () => finish(false));
    inflate.end(data);
  });
}
