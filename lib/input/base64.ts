import { ApiError } from "@/lib/api/errors";

const MiB = 1024 * 1024;

/** Character classes by char code: 1 = base64 data (either alphabet), 2 = whitespace, 3 = padding. */
const CHAR_CLASS = new Uint8Array(128);
for (const char of "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/-_")
  CHAR_CLASS[char.charCodeAt(0)] = 1;
for (const char of " \t\n\v\f\r") CHAR_CLASS[char.charCodeAt(0)] = 2;
CHAR_CLASS["=".charCodeAt(0)] = 3;

/** `2.5 MB` style: MiB, at most one decimal. */
export function formatMegabytes(bytes: number): string {
  return `${Number((bytes / MiB).toFixed(1))} MB`;
}

function invalidBase64(detail: string): ApiError {
  return new ApiError("invalid_request", `image is not valid base64 (${detail})`);
}

/** Index where the base64 payload starts: after a `data:…;base64,` prefix if there is one, else 0. */
function payloadStart(input: string): number {
  let start = 0;
  while (start < input.length && CHAR_CLASS[input.charCodeAt(start)] === 2) start++;
  if (input.slice(start, start + 5).toLowerCase() !== "data:") return 0;
  const comma = input.indexOf(",", start);
  // The declared media type is ignored: the type is decided from the bytes. Headers are short; a long one
  // is not a data URL we want to run a regex over.
  if (comma < 0 || comma - start > 1024 || !/;\s*base64\s*$/i.test(input.slice(start, comma))) {
    throw new ApiError("invalid_request", "image: a data URL must be base64-encoded (data:<type>;base64,<data>)");
  }
  return comma + 1;
}

/**
 * Decodes an inline file: plain base64 or a `data:<type>;base64,<data>` URL. Whitespace anywhere is ignored,
 * the standard and URL-safe alphabets are both accepted, padding is optional.
 *
 * The size limit is checked from the payload's length in one pass over the string, before anything is
 * decoded or allocated, so an oversized body costs no memory.
 *
 * @throws ApiError `payload_too_large` past `maxBytes` decoded bytes; `invalid_request` for bad base64.
 */
export function decodeBase64Input(input: string, maxBytes: number): Uint8Array {
  const start = payloadStart(input);

  let dataChars = 0;
  let padding = 0;
  let badAt = -1;
  for (let i = start; i < input.length; i++) {
    const code = input.charCodeAt(i);
    const kind = code < 128 ? CHAR_CLASS[code] : 0;
    if (kind === 1) {
      if (padding > 0) badAt = i; // data after padding
      dataChars++;
    } else if (kind === 3) {
      padding++;
    } else if (kind !== 2) {
      badAt = i;
    }
    if (badAt >= 0) break;
  }

  const decodedBytes = Math.floor((dataChars * 3) / 4);
  if (badAt < 0 && decodedBytes > maxBytes) {
    throw new ApiError(
      "payload_too_large",
      `image is ${formatMegabytes(decodedBytes)} decoded; the inline limit is ${formatMegabytes(maxBytes)}. ` +
        "Send larger files with imageUrl instead.",
    );
  }
  if (badAt >= 0) throw invalidBase64(`unexpected character at position ${badAt - start}`);
  if (dataChars === 0) throw invalidBase64("empty");
  const remainder = dataChars % 4;
  if (remainder === 1) throw invalidBase64("impossible length");
  if (padding > 0 && (remainder === 0 || padding !== 4 - remainder)) throw invalidBase64("wrong padding");

  // Validated above, so Node's decoder (which skips whitespace and reads both alphabets) sees only good input.
  const buffer = Buffer.from(start > 0 ? input.slice(start) : input, "base64");
  if (buffer.length !== decodedBytes) throw invalidBase64("could not decode");
  // A plain Uint8Array that owns its memory: small Buffers are views into a shared pool.
  return buffer.byteLength === buffer.buffer.byteLength ? new Uint8Array(buffer.buffer) : new Uint8Array(buffer);
}
