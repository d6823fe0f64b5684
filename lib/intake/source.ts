import { aboutField, ApiError } from "@/lib/api/errors";
import type { InputSource, OcrRequest } from "@/lib/api/schemas";
import {
  decodeBase64Input,
  fetchRemoteFile,
  formatMegabytes,
  readOwnSample,
  type AllowList,
  type FetchSettings,
  type ResolveHost,
} from "@/lib/input";

/**
 * Where a request's document comes from. JSON bodies carry it as base64 (`image`) or a URL (`imageUrl`); a route
 * that reads a multipart or raw body hands its bytes as they came (`bytes`, with the size the request declared).
 */
export type DocumentSource =
  | { kind: "base64"; data: string }
  | { kind: "url"; url: string }
  | {
      kind: "bytes";
      bytes: Uint8Array;
      /** The size the request declared (its `Content-Length`, a part's header) when known: checked first. */
      declaredBytes?: number;
      /** The field the bytes came in (`file`, or `body` for a raw body), for messages. Default `file`. */
      field?: string;
    };

/** The source of a validated JSON body (`ocrRequestSchema`: exactly one of `image` and `imageUrl`). */
export function sourceOfBody(body: Pick<OcrRequest, "image" | "imageUrl">): DocumentSource {
  return body.image !== undefined ? { kind: "base64", data: body.image } : { kind: "url", url: body.imageUrl! };
}

/** The answer's `inputSource`: `url` for a URL, `base64` for `image`, `upload` for a file sent itself (multipart, raw). */
export function inputSourceOf(source: DocumentSource): InputSource {
  return source.kind === "url" ? "url" : source.kind === "base64" ? "base64" : "upload";
}

export interface LoadOptions {
  /** The request's signal (lib/request-scope.ts): a fetch stops when it aborts. */
  signal: AbortSignal;
  /** Most bytes fetched from a URL: `MAX_URL_BYTES` for a request read now, `MAX_JOB_URL_BYTES` when a job may read it. */
  maxUrlBytes: number;
  /** Most bytes of a base64 file: `MAX_INLINE_BYTES` (a file sent itself was checked against it before loading). */
  maxInlineBytes: number;
  /** The fetch's settings (the request context's `settings.fetch`): its time limit and redirects. */
  fetch: FetchSettings;
  /** The fetch's own time limit (`502` past it), when longer than `fetch.timeoutMs` (a job's large file). */
  fetchTimeoutMs?: number;
  resolveHost?: ResolveHost;
  /** The private hosts a URL may reach (`URL_ALLOW_HOSTS`, parsed: `configuredAllowList(env)`). */
  allowHosts: AllowList;
  /** The `Host` the request came to: an `imageUrl` of this deployment's samples is read from disk. */
  serverHost?: string;
}

/**
 * The cheap part of a source's checks, before anything is decoded or fetched: its declared size against its limit
 * (`limit`: `MAX_INLINE_BYTES`).
 */
export function checkDeclaredSize(source: DocumentSource, limit: number): void {
  if (source.kind !== "bytes") return; // base64: checked from its length before decoding; a URL: from its headers
  const size = Math.max(source.declaredBytes ?? 0, source.bytes.byteLength);
  if (size > limit) {
    throw new ApiError(
      "payload_too_large",
      `${source.field ?? "file"} is ${formatMegabytes(size)}; the limit for a file in the request body is ${formatMegabytes(limit)}. ` +
        "Send larger files with imageUrl instead.",
      { field: source.field ?? "file" },
    );
  }
  if (size === 0)
    throw new ApiError("invalid_request", `${source.field ?? "file"} is empty`, { field: source.field ?? "file" });
}

/**
 * The document's bytes, loaded once: base64 decoded (its size checked before), bytes taken as they are (their size and
 * emptiness decided before loading, by `checkDeclaredSize` in the intake's cheap checks), a URL of this
 * deployment's own samples read from disk, any other URL fetched — streamed with the request's signal and cut at
 * `maxUrlBytes`. lib/input's messages name the field they were given; the errors say so for other surfaces.
 */
export async function loadDocument(source: DocumentSource, options: LoadOptions): Promise<Uint8Array> {
  switch (source.kind) {
    case "bytes":
      return source.bytes;
    case "base64":
      try {
        return decodeBase64Input(source.data, options.maxInlineBytes);
      } catch (error) {
        throw aboutField(error, "image");
      }
    case "url": {
      const sample = await readOwnSample(source.url, options.serverHost);
      if (sample) return sample;
      try {
        const file = await fetchRemoteFile(source.url, {
          signal: options.signal,
          resolveHost: options.resolveHost,
          maxBytes: options.maxUrlBytes,
          allowHosts: options.allowHosts,
          timeoutMs: options.fetchTimeoutMs ?? options.fetch.timeoutMs,
          maxRedirects: options.fetch.maxRedirects,
        });
        return file.bytes;
      } catch (error) {
        throw aboutField(error, "imageUrl");
      }
    }
  }
}
