import type { Env } from "@/lib/env";
import { ApiError, isApiError } from "@/lib/api/errors";
import { formatMegabytes } from "@/lib/input";

/** Nesting deeper than this is refused before `JSON.parse` (the request schema is two levels deep). */
export const MAX_JSON_DEPTH = 32;

/**
 * How a request body is sent: `json` (`application/json`, `…+json`, or no Content-Type), `multipart`
 * (`multipart/form-data`, the file in its `file` field), `file` (the file itself: `application/pdf`, `image/jpeg`,
 * `image/png`, `image/webp`, `image/tiff`, `application/octet-stream`), or `other` (refused where a body is parsed).
 */
export type BodyKind = "json" | "multipart" | "file" | "other";

/** The Content-Types a raw file body may declare; the bytes still decide the type (magic numbers). */
export const FILE_CONTENT_TYPES = [
  "application/pdf",
  "image/jpeg",
  "image/jpg",
  "image/png",
  "image/webp",
  "image/tiff",
  "application/octet-stream",
] as const;

/** The media type of a Content-Type header, lowercased, without its parameters (`""` for none). */
export function mediaTypeOf(header: string | null): string {
  return (header ?? "").split(";")[0]!.trim().toLowerCase();
}

export function bodyKind(contentType: string | null): BodyKind {
  if (isJsonContentType(contentType)) return "json";
  const type = mediaTypeOf(contentType);
  if (type === "multipart/form-data") return "multipart";
  return (FILE_CONTENT_TYPES as readonly string[]).includes(type) ? "file" : "other";
}

/**
 * The most parts a multipart body may have: its fields are `file` and four options, each once (lib/http/upload.ts);
 * room for a few more keeps the precise refusal of a field sent twice. Counted before the body is parsed: a parser
 * given a body of 259 000 empty parts held the main thread 1.3–2.3 s each time (issue 39).
 */
export const MAX_MULTIPART_PARTS = 16;

/**
 * `400` when `bytes`, a multipart body, has more than {@link MAX_MULTIPART_PARTS} parts: its boundary delimiters
 * are counted (a native search, stopping at the limit), before any parser sees it. A body whose boundary cannot be
 * read passes: the parser refuses it.
 */
export function assertMultipartParts(bytes: Uint8Array, contentType: string | null): void {
  if (multipartPartsOver(bytes, contentType, MAX_MULTIPART_PARTS)) {
    throw new ApiError(
      "invalid_request",
      `The multipart/form-data body has more than ${MAX_MULTIPART_PARTS} parts; it holds the file in "file" and ` +
        "at most the option fields format, language, pages and webhook, each once. Nothing was charged.",
    );
  }
}

/** Whether a multipart body has more than `max` parts (delimiters `--boundary` past the first, the last closes). */
function multipartPartsOver(bytes: Uint8Array, contentType: string | null, max: number): boolean {
  const boundary = /;\s*boundary=(?:"([^"]{1,200})"|([^\s;]{1,200}))/i.exec(contentType ?? "");
  const value = boundary?.[1] ?? boundary?.[2];
  if (!value) return false;
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const delimiter = Buffer.from(`--${value}`, "latin1");
  let delimiters = 0;
  for (let at = buffer.indexOf(delimiter); at >= 0; at = buffer.indexOf(delimiter, at + delimiter.length)) {
    // Every part opens with a delimiter, and one more closes the body: max parts are max + 1 delimiters.
    if (++delimiters > max + 1) return true;
  }
  return false;
}

/** Room for a multipart body's boundaries, part headers and option fields around the file. */
export const MULTIPART_OVERHEAD_BYTES = 64 * 1024;

/**
 * The largest request body read: for JSON the base64 of a `MAX_INLINE_BYTES` file (4/3 of it) plus 64 KiB for the JSON
 * around it; for multipart the file plus {@link MULTIPART_OVERHEAD_BYTES}; for a raw file body the file. Checked while
 * reading, before anything is parsed (a declared `Content-Length` over it before reading at all).
 */
export function maxBodyBytes(maxInlineBytes: number, kind: BodyKind = "json"): number {
  switch (kind) {
    case "multipart":
      return maxInlineBytes + MULTIPART_OVERHEAD_BYTES;
    case "file":
      return maxInlineBytes;
    default:
      return Math.ceil((maxInlineBytes * 4) / 3) + 64 * 1024;
  }
}

/** What the body's limit and its `413` message are taken from. */
type BodyEnv = Pick<Env, "MAX_INLINE_BYTES" | "MAX_URL_BYTES" | "MAX_JOB_URL_BYTES" | "onVercel">;

interface ReadBodyOptions {
  /** The configuration (the request context's): the limits, and the advice of a `413`. */
  env: BodyEnv;
  /** Default: {@link maxBodyBytes} of `env.MAX_INLINE_BYTES` for the body's kind (from its Content-Type). */
  maxBytes?: number;
}

/** A request's body, read on first use and at most once, cut off past its size limit. */
export interface RequestBody {
  /** What the Content-Type says the body is. */
  kind: BodyKind;
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
export function requestBody(req: Request, options: ReadBodyOptions): RequestBody {
  const contentType = req.headers.get("content-type");
  const kind = bodyKind(contentType);
  let pending: Promise<Uint8Array> | undefined;
  const bytes = () =>
    (pending ??= readLimited(
      req,
      options.maxBytes ?? maxBodyBytes(options.env.MAX_INLINE_BYTES, kind),
      kind,
      options.env,
    ));
  // Parsed once: a route may look at it before its handler (lib/mcp/route.ts decides its rate limit from it).
  let parsed: Promise<unknown> | undefined;
  return { kind, bytes, json: () => (parsed ??= parseJsonBody(contentType, bytes)) };
}

/**
 * What to do instead of a body too large: by URL, synchronously or as a job; and Vercel's own limit where it applies
 * (`env.onVercel`: its platform refuses request bodies over 4.5 MB before the function runs).
 */
export function largeFileAdvice(env: Omit<BodyEnv, "MAX_INLINE_BYTES">): string {
  const platform = env.onVercel
    ? "This deployment runs on Vercel, whose request bodies stop at 4.5 MB, so larger files cannot be sent in the request at all. "
    : "";
  return (
    `${platform}Put the file where the service can fetch it and send its URL instead: {"imageUrl": "https://…"} to ` +
    `POST /api/ocr/process (up to ${formatMegabytes(env.MAX_URL_BYTES)}), or to POST /api/ocr/jobs (up to ` +
    `${formatMegabytes(env.MAX_JOB_URL_BYTES)}, read in the background). Nothing was charged.`
  );
}

function bodyTooLarge(maxBytes: number, kind: BodyKind, env: BodyEnv): ApiError {
  const file =
    kind === "json"
      ? Math.floor(((maxBytes - 64 * 1024) * 3) / 4)
      : kind === "multipart"
        ? maxBytes - MULTIPART_OVERHEAD_BYTES
        : maxBytes;
  const what =
    kind === "json"
      ? `The request body is larger than ${formatMegabytes(maxBytes)}, the limit for JSON bodies (about ${formatMegabytes(file)} of file as base64). ` +
        "Send the file itself instead of base64 (curl --data-binary @scan.pdf, or multipart -F file=@scan.pdf): that carries a third more. "
      : `The file is larger than ${formatMegabytes(file)}, the limit for a file sent in the request (MAX_INLINE_BYTES). `;
  // The rest of the body is not read: the connection closes after the answer (as nginx does after a 413), or a client
  // that keeps it alive sends its next request behind bytes the server never reads, and that request is lost.
  return new ApiError("payload_too_large", what + largeFileAdvice(env), { headers: { Connection: "close" } });
}

async function readLimited(req: Request, maxBytes: number, kind: BodyKind, env: BodyEnv): Promise<Uint8Array> {
  const declared = req.headers.get("content-length")?.trim();
  if (declared && /^\d+$/.test(declared) && Number(declared) > maxBytes) throw bodyTooLarge(maxBytes, kind, env);
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
        throw bodyTooLarge(maxBytes, kind, env);
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
    throw new ApiError("invalid_request", `The request body is not valid JSON${detail ? ` (${detail})` : ""}`, {
      cause: error,
    });
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

/**
 * What an `Idempotency-Key` fingerprints of the body: its bytes, but a multipart body by its fields (names, file names
 * and contents: a client's random boundary differs between tries of the same request), and a raw file body with its
 * query string (the options).
 */
export async function fingerprintParts(req: Request, body: RequestBody): Promise<Array<string | Uint8Array>> {
  const bytes = await body.bytes();
  if (body.kind === "file") return [new URL(req.url).search, bytes];
  if (body.kind !== "multipart") return [bytes];
  // Too many parts to parse: the handler refuses it (400), as often as it is sent.
  if (multipartPartsOver(bytes, req.headers.get("content-type"), MAX_MULTIPART_PARTS)) return [bytes];
  let form: FormData;
  try {
    form = await new Response(bytes as BodyInit, {
      headers: { "content-type": req.headers.get("content-type")! },
    }).formData();
  } catch {
    return [bytes]; // unparseable: the handler answers 400, as often as it is sent
  }
  const parts: Array<string | Uint8Array> = ["multipart"];
  for (const [name, value] of form) {
    parts.push(name);
    if (typeof value === "string") parts.push("text", value);
    else parts.push("file", value.name, new Uint8Array(await value.arrayBuffer()));
  }
  return parts;
}
