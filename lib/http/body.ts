import { getEnv } from "@/lib/env";
import { ApiError, isApiError } from "@/lib/api/errors";
import { formatMegabytes } from "@/lib/input";

/** Nesting deeper than this is refused before `JSON.parse` (the request schema is two levels deep). */
export const MAX_JSON_DEPTH = 32;

/**
 * The largest request body read: the base64 of a `MAX_INLINE_BYTES` file (4/3 of it) plus 64 KiB for the JSON
 * around it. Checked while reading, before anything is parsed.
 */
export function maxBodyBytes(maxInlineBytes = getEnv().MAX_INLINE_BYTES): number {
  return Math.ceil((maxInlineBytes * 4) / 3) + 64 * 1024;
}

interface ReadBodyOptions {
  /** Default: {@link maxBodyBytes}. */
  maxBytes?: number;
}

/** A request's body, read on first use and at most once, cut off past its size limit. */
export interface RequestBody {
  /**
   * The raw bytes (`413 payload_too_large` past the limit, without buffering the rest; a declared `Content-Length`
   * over it is refused before reading). The same promise on every call.
   */
  bytes(): Promise<Uint8Array>;
  /** The bytes as parsed JSON (`unknown`: validate it with a schema); see {@link parseJsonBody} for the errors. */
  json(): Promise<unknown>;
}

/**
 * The body of `req`, read lazily and once: the idempotency check fingerprints the raw bytes and the handler parses
 * the same bytes. `withApiKey` makes one per request and hands it to the handler as `ApiContext.body`.
 */
export function requestBody(req: Request, options: ReadBodyOptions = {}): RequestBody {
  let pending: Promise<Uint8Array> | undefined;
  const bytes = () => (pending ??= readLimited(req, options.maxBytes ?? maxBodyBytes()));
  return { bytes, json: () => parseJsonBody(req.headers.get("content-type"), bytes) };
}

function bodyTooLarge(maxBytes: number): ApiError {
  return new ApiError(
    "payload_too_large",
    `The request body is larger than ${formatMegabytes(maxBytes)}, the limit for JSON bodies ` +
      `(about ${formatMegabytes(Math.floor(((maxBytes - 64 * 1024) * 3) / 4))} of file as base64). Send larger files with imageUrl.`,
  );
}

async function readLimited(req: Request, maxBytes: number): Promise<Uint8Array> {
  const declared = req.headers.get("content-length")?.trim();
  if (declared && /^\d+$/.test(declared) && Number(declared) > maxBytes) throw bodyTooLarge(maxBytes);
  if (!req.body) return new Uint8Array(0);

  const reader = req.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      total += value.byteLength;
      if (total > maxBytes) {
        void reader.cancel().catch(() => undefined);
        throw bodyTooLarge(maxBytes);
      }
      chunks.push(value);
    }
  } catch (error) {
    if (isApiError(error)) throw error;
    throw new ApiError("invalid_request", "The request body could not be read", { cause: error });
  }

  if (chunks.length === 1) return chunks[0]!;
  const bytes = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return bytes;
}

/** `application/json`, `application/<anything>+json`, or no Content-Type at all (clients that forget it). */
export function isJsonContentType(header: string | null): boolean {
  if (header === null || header.trim() === "") return true;
  const type = header.split(";")[0]!.trim().toLowerCase();
  return type === "application/json" || /^application\/[a-z0-9.!#$&^_-]+\+json$/.test(type);
}

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });

/**
 * The body as parsed JSON. Errors: `415` for a declared non-JSON content type (before reading), `413` past the size
 * limit, `400` for an empty body, invalid UTF-8, nesting deeper than {@link MAX_JSON_DEPTH} or invalid JSON.
 */
async function parseJsonBody(contentType: string | null, read: () => Promise<Uint8Array>): Promise<unknown> {
  if (!isJsonContentType(contentType)) {
    throw new ApiError(
      "unsupported_media_type",
      `Send the request body as JSON with Content-Type: application/json (got ${contentType!.split(";")[0]!.trim().slice(0, 60)})`,
    );
  }
  const bytes = await read();
  if (bytes.byteLength === 0) throw new ApiError("invalid_request", "The request body is empty; send a JSON object");

  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch (error) {
    throw new ApiError("invalid_request", "The request body is not valid UTF-8", { cause: error });
  }
  assertJsonDepth(text, MAX_JSON_DEPTH);
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    const detail = error instanceof Error ? error.message.slice(0, 120) : "";
    throw new ApiError("invalid_request", `The request body is not valid JSON${detail ? ` (${detail})` : ""}`, { cause: error });
  }
}

/**
 * One linear pass over the text counting `{`/`[` outside strings. Deeply nested JSON costs parse time and memory
 * for nothing (and recursion later, e.g. in `JSON.stringify`); refuse it before parsing.
 */
export function assertJsonDepth(text: string, maxDepth: number): void {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code === 0x22) {
      // Skip the string: jump from quote to quote, ignoring quotes escaped by an odd run of backslashes.
      let from = i + 1;
      for (;;) {
        const quote = text.indexOf('"', from);
        if (quote < 0) return; // unterminated: JSON.parse reports it
        let slashes = 0;
        for (let k = quote - 1; k > i && text.charCodeAt(k) === 0x5c; k--) slashes++;
        if (slashes % 2 === 0) {
          i = quote;
          break;
        }
        from = quote + 1;
      }
    } else if (code === 0x7b || code === 0x5b) {
      if (++depth > maxDepth) {
        throw new ApiError("invalid_request", `The request body is nested more than ${maxDepth} levels deep`);
      }
    } else if (code === 0x7d || code === 0x5d) {
      depth--;
    }
  }
}
