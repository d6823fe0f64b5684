import dns from "node:dns";
import http from "node:http";
import https from "node:https";
import type { LookupFunction } from "node:net";
import { pipeline, type Readable } from "node:stream";
import zlib from "node:zlib";
import { ApiError, isApiError } from "@/lib/api/errors";
import { SERVICE_VERSION } from "@/lib/version";
import { type IpAddress, isLocalhostName, isPublicAddress, parseHostLiteral } from "./address";
import { allowsAddress, allowsName, portOf, type AllowList } from "./allow-hosts";
import { formatMegabytes } from "./base64";

type ResolvedAddress = IpAddress;

/** Resolves a hostname to every address it has; `dns.promises.lookup(host, { all: true, verbatim: true })`. */
export type ResolveHost = (hostname: string) => Promise<ResolvedAddress[]>;

export interface FetchRemoteOptions {
  /** Largest body accepted, in bytes after content decoding (a request's: `MAX_URL_BYTES`, 25 MiB by default). */
  maxBytes: number;
  /** Budget for the whole fetch, every hop's DNS, connect, headers and body. Default: `fetchSettings().timeoutMs` (15 s, the constant). */
  timeoutMs?: number;
  /** Redirects followed before giving up with `fetch_failed`. Default: `fetchSettings().maxRedirects` (3). */
  maxRedirects?: number;
  /** The caller's deadline. When it aborts, its reason is rethrown if it is an ApiError, else `timeout`. */
  signal?: AbortSignal;
  /** Stand-in for DNS (tests). Default: the system resolver, `dns.promises.lookup` with `all: true`. */
  resolveHost?: ResolveHost;
  /** Private hosts let through (lib/input/allow-hosts.ts): `URL_ALLOW_HOSTS`, `configuredAllowList(env)`. */
  allowHosts: AllowList;
}

/** Constants of an `imageUrl` fetch (they were `URL_FETCH_TIMEOUT_MS` and `URL_MAX_REDIRECTS`). */
export interface FetchSettings {
  /** Budget of a request's fetch: every hop's DNS, connect, headers and body (a job's may take longer). */
  timeoutMs: number;
  /** Redirects followed, each hop checked again. */
  maxRedirects: number;
}

/** The fetch constants, with `overrides` on top (lib/settings.ts). */
export function fetchSettings(overrides: Partial<FetchSettings> = {}): FetchSettings {
  return { timeoutMs: 15_000, maxRedirects: 3, ...overrides };
}

interface RemoteFile {
  bytes: Uint8Array;
  /** The URL the bytes came from, after redirects. Its query may carry secrets: never log it. */
  finalUrl: string;
  contentType: string | undefined;
}

const USER_AGENT = `ocr-service/${SERVICE_VERSION} (+fetch)`;
const ACCEPT = "application/pdf,image/*;q=0.9,*/*;q=0.5";
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

const systemResolveHost: ResolveHost = async (hostname) => {
  const answers = await dns.promises.lookup(hostname, { all: true, verbatim: true });
  return answers.map(({ address, family }) => ({ address, family: family === 6 ? 6 : 4 }));
};

/**
 * Fetches `url` for OCR, guarded against SSRF: http(s) only, no credentials; the host is resolved and every
 * address must be public; the connection goes to an address that was checked (no second DNS lookup that
 * could be rebound); redirects are followed by hand with the same checks on every hop. The body is streamed
 * and cut at `maxBytes`; one timeout covers the whole fetch.
 *
 * @throws ApiError `invalid_request` (URL not allowed), `payload_too_large`, `fetch_failed` (DNS, connect,
 *   TLS, non-2xx, too many redirects, timed out), or `timeout` / the caller's ApiError when `signal` aborts.
 */
export async function fetchRemoteFile(url: string, options: FetchRemoteOptions): Promise<RemoteFile> {
  const settings = fetchSettings();
  const maxBytes = options.maxBytes;
  const timeoutMs = options.timeoutMs ?? settings.timeoutMs;
  const maxRedirects = options.maxRedirects ?? settings.maxRedirects;
  const resolveHost = options.resolveHost ?? systemResolveHost;
  const allow = options.allowHosts;

  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(), timeoutMs);
  const signal = options.signal ? AbortSignal.any([deadline.signal, options.signal]) : deadline.signal;

  try {
    signal.throwIfAborted();
    let target = parseTarget(url, false);
    for (let redirects = 0; ; redirects++) {
      const addresses = await resolveAllowed(target, resolveHost, signal, redirects > 0, allow);
      const response = await sendRequest(target, addresses, signal);
      const status = response.statusCode ?? 0;

      if (REDIRECT_STATUSES.has(status)) {
        response.destroy();
        if (redirects >= maxRedirects) {
          throw new ApiError(
            "fetch_failed",
            `Could not fetch imageUrl: too many redirects (more than ${maxRedirects})`,
          );
        }
        target = redirectTarget(target, response.headers.location);
        continue;
      }
      if (status < 200 || status > 299) {
        response.destroy();
        throw new ApiError("fetch_failed", `Could not fetch imageUrl: ${target.hostname} answered HTTP ${status}`);
      }

      const bytes = await readBody(response, maxBytes);
      return { bytes, finalUrl: target.href, contentType: response.headers["content-type"] };
    }
  } catch (error) {
    if (options.signal?.aborted) {
      const reason: unknown = options.signal.reason;
      if (isApiError(reason)) throw reason;
      throw new ApiError("timeout", "The request deadline passed while fetching imageUrl", { cause: reason });
    }
    if (deadline.signal.aborted) {
      throw new ApiError("fetch_failed", `Could not fetch imageUrl: timed out after ${timeoutMs / 1000} s`, {
        cause: error,
      });
    }
    if (isApiError(error)) throw error;
    throw new ApiError("fetch_failed", `Could not fetch imageUrl: ${describeNetworkError(error)}`, { cause: error });
  } finally {
    clearTimeout(timer);
  }
}

function notAllowed(reason: string, afterRedirect: boolean): ApiError {
  return new ApiError("invalid_request", `URL not allowed: ${reason}${afterRedirect ? " (after a redirect)" : ""}`);
}

/** Scheme and credential checks. Messages name the scheme or host only: query strings may carry secrets. */
function parseTarget(raw: string, afterRedirect: boolean, label = "imageUrl"): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ApiError("invalid_request", `${label} is not a valid URL`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw notAllowed(`only http and https are fetched, not ${url.protocol.slice(0, 20)}`, afterRedirect);
  }
  if (url.username || url.password) throw notAllowed("credentials in the URL are not accepted", afterRedirect);
  return url;
}

function redirectTarget(from: URL, location: string | undefined): URL {
  if (!location)
    throw new ApiError("fetch_failed", `Could not fetch imageUrl: ${from.hostname} redirected without a Location`);
  let next: URL;
  try {
    next = new URL(location, from);
  } catch {
    throw new ApiError("fetch_failed", `Could not fetch imageUrl: ${from.hostname} redirected to an invalid URL`);
  }
  return parseTarget(next.href, true);
}

/**
 * The trust boundary: the addresses returned here are the only ones the request may connect to, and every
 * one of them is public — or let through by `URL_ALLOW_HOSTS` (a listed name, on its port if one is given, with
 * whatever it resolves to; a listed address or range). An IP-literal host is checked as is; a name is resolved once,
 * and if any of its addresses is private and not allowed the URL is refused (a name that mixes public and private
 * answers is an attack). Every redirect hop comes through here again.
 */
async function resolveAllowed(
  url: URL,
  resolveHost: ResolveHost,
  signal: AbortSignal,
  afterRedirect: boolean,
  allow: AllowList,
  label = "imageUrl",
): Promise<IpAddress[]> {
  const host = url.hostname;
  const port = portOf(url);
  const literal = parseHostLiteral(host);
  if (literal) {
    if (!isPublicAddress(literal.address) && !allowsAddress(allow, literal, port)) {
      throw notAllowed(`${host} is not a public address`, afterRedirect);
    }
    return [literal];
  }
  const nameAllowed = allowsName(allow, host, port);
  if (isLocalhostName(host) && !nameAllowed) throw notAllowed(`${host} resolves to a private address`, afterRedirect);

  let answers: ResolvedAddress[];
  try {
    answers = await abortable(resolveHost(host), signal);
  } catch (error) {
    if (signal.aborted) throw error;
    throw new ApiError("fetch_failed", `${failurePrefix(label)}: could not resolve ${host}`, { cause: error });
  }
  if (answers.length === 0) throw new ApiError("fetch_failed", `${failurePrefix(label)}: could not resolve ${host}`);

  const checked: IpAddress[] = [];
  for (const answer of answers) {
    const address = parseHostLiteral(answer.address);
    if (!address || !(nameAllowed || isPublicAddress(address.address) || allowsAddress(allow, address, port))) {
      throw notAllowed(`${host} resolves to a private address`, afterRedirect);
    }
    checked.push(address);
  }
  return checked;
}

const failurePrefix = (label: string) =>
  label === "imageUrl" ? "Could not fetch imageUrl" : `Could not reach the ${label}`;

function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  signal.throwIfAborted();
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(error);
      },
    );
  });
}

/**
 * A `lookup` for `http.request` that answers with the already checked addresses instead of asking DNS
 * again, so a name cannot be re-pointed (rebound) at a private address between the check and the connect.
 * Node calls it with `all: true` (happy eyeballs, an array answer) or without (one address and its family).
 */
export function pinnedLookup(addresses: readonly IpAddress[]): LookupFunction {
  if (addresses.length === 0) throw new Error("pinnedLookup needs at least one address");
  return (_hostname, options, callback) => {
    const wanted = options.family === 4 || options.family === 6 ? options.family : undefined;
    const usable = wanted ? addresses.filter((address) => address.family === wanted) : addresses;
    const answer = usable.length > 0 ? usable : addresses;
    if (options.all)
      callback(
        null,
        answer.map(({ address, family }) => ({ address, family })),
      );
    else callback(null, answer[0]!.address, answer[0]!.family);
  };
}

/**
 * One GET over node:http(s) to `url`'s host, connecting only to `addresses`. The hostname still goes into
 * the Host header, TLS SNI and certificate verification. No agent: no pooled socket outlives the fetch or
 * is reused for a later, differently resolved URL.
 */
function sendRequest(
  url: URL,
  addresses: readonly IpAddress[],
  signal: AbortSignal,
  send?: { method: "POST"; headers: Record<string, string>; body: string },
): Promise<http.IncomingMessage> {
  const client = url.protocol === "https:" ? https : http;
  const hostname = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname;
  return new Promise((resolve, reject) => {
    const request = client.request({
      protocol: url.protocol,
      hostname,
      port: url.port || undefined,
      path: `${url.pathname}${url.search}`,
      method: send?.method ?? "GET",
      headers: send
        ? { "user-agent": USER_AGENT, ...send.headers }
        : { "user-agent": USER_AGENT, accept: ACCEPT, "accept-encoding": "identity" },
      agent: false,
      lookup: pinnedLookup(addresses),
      signal,
    });
    request.once("response", resolve);
    request.once("error", reject);
    request.end(send?.body);
  });
}

function tooLarge(maxBytes: number): ApiError {
  return new ApiError(
    "payload_too_large",
    `The file at imageUrl is larger than the ${formatMegabytes(maxBytes)} limit for URL files`,
  );
}

/** Decoders for servers that compress although we asked for `identity`; their output is capped like the body. */
function createDecoder(encoding: string): zlib.Gunzip | zlib.Inflate | zlib.BrotliDecompress | undefined {
  switch (encoding) {
    case "gzip":
    case "x-gzip":
      return zlib.createGunzip();
    case "deflate":
      return zlib.createInflate();
    case "br":
      return zlib.createBrotliDecompress();
    default:
      return undefined;
  }
}

/** Reads the body, stopping (and closing the connection) as soon as it passes `maxBytes`. */
async function readBody(response: http.IncomingMessage, maxBytes: number): Promise<Uint8Array> {
  const declared = Number(response.headers["content-length"]);
  if (Number.isFinite(declared) && declared > maxBytes) {
    response.destroy();
    throw tooLarge(maxBytes);
  }

  const encoding = (response.headers["content-encoding"] ?? "identity").trim().toLowerCase();
  let source: Readable = response;
  if (encoding !== "identity" && encoding !== "") {
    const decoder = createDecoder(encoding);
    if (!decoder) {
      response.destroy();
      throw new ApiError(
        "fetch_failed",
        `Could not fetch imageUrl: unsupported content-encoding ${encoding.slice(0, 20)}`,
      );
    }
    // The compressed stream is capped too: endless input that inflates to nothing must not run forever.
    let raw = 0;
    response.on("data", (chunk: Buffer) => {
      raw += chunk.length;
      if (raw > maxBytes) response.destroy(tooLarge(maxBytes));
    });
    source = pipeline(response, decoder, () => {});
  }

  // A body that says its length (and is not re-encoded) is written into one buffer as it arrives: a 200 MB file
  // (a job's) then needs 200 MB, not the chunks and their copy at once.
  const length = source === response ? declared : NaN;
  const preallocated = Number.isSafeInteger(length) && length > 0 && length <= maxBytes ? new Uint8Array(length) : null;
  const chunks: Buffer[] = [];
  let total = 0;
  try {
    for await (const chunk of source) {
      const buffer = chunk as Buffer;
      if (preallocated && total + buffer.length <= preallocated.length) preallocated.set(buffer, total);
      else chunks.push(buffer);
      total += buffer.length;
      if (total > maxBytes) throw tooLarge(maxBytes);
    }
  } finally {
    response.destroy();
    source.destroy();
  }

  if (preallocated && chunks.length === 0)
    return total === preallocated.length ? preallocated : preallocated.slice(0, total);
  // No length, or more than it said: the chunks (and whatever was written before them) joined.
  const bytes = new Uint8Array(total);
  let offset = 0;
  if (preallocated) {
    const head = Math.min(total - chunks.reduce((sum, chunk) => sum + chunk.length, 0), preallocated.length);
    bytes.set(preallocated.subarray(0, head), 0);
    offset = head;
  }
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.length;
  }
  return bytes;
}

const TLS_ERROR = /^(ERR_TLS_|ERR_SSL_|CERT_|UNABLE_TO_|DEPTH_ZERO_|SELF_SIGNED_|HOSTNAME_MISMATCH|ERR_OSSL_)/;

const DECODE_ERROR = /^(Z_|ERR__ERROR_|ERR_BROTLI_)/;

/** A short, safe reason: error codes and host names only, never a URL (its query may carry secrets). */
function describeNetworkError(error: unknown): string {
  const code = typeof error === "object" && error !== null && "code" in error ? String(error.code) : undefined;
  switch (code) {
    case "ENOTFOUND":
    case "EAI_AGAIN":
    case "EAI_FAIL":
    case "EAI_NODATA":
      return "could not resolve the host";
    case "ECONNREFUSED":
      return "connection refused";
    case "ECONNRESET":
      return "connection reset by the server";
    case "ETIMEDOUT":
    case "ENETUNREACH":
    case "EHOSTUNREACH":
      return `could not connect (${code})`;
    case "HPE_INVALID_CONSTANT":
    case "HPE_INVALID_HEADER_TOKEN":
      return "the server did not answer valid HTTP";
    default:
      if (code && TLS_ERROR.test(code)) return `TLS handshake failed (${code})`;
      if (code && DECODE_ERROR.test(code)) return `the compressed body is corrupt (${code})`;
      return code ? `network error (${code})` : "network error";
  }
}

/** Options of `checkRemoteUrl` and `postRemote`: the guard's, as `fetchRemoteFile` takes them. */
export interface GuardOptions {
  /** Stand-in for DNS (tests). Default: the system resolver. */
  resolveHost?: ResolveHost;
  /** Private hosts let through: `URL_ALLOW_HOSTS`, `configuredAllowList(env)`. */
  allowHosts: AllowList;
  /** What the URL is, in messages (`webhook URL`). */
  label: string;
  signal?: AbortSignal;
}

/**
 * The SSRF guard of `fetchRemoteFile` on its own, for a URL the service will call later (a webhook): http(s), no
 * credentials, and every address the host resolves to public or allowed by `URL_ALLOW_HOSTS`. Returns the URL.
 *
 * @throws ApiError `invalid_request` (not allowed), `fetch_failed` (the name does not resolve)
 */
export async function checkRemoteUrl(url: string, options: GuardOptions): Promise<URL> {
  const target = parseTarget(url, false, options.label);
  const allow = options.allowHosts;
  await resolveAllowed(
    target,
    options.resolveHost ?? systemResolveHost,
    options.signal ?? new AbortController().signal,
    false,
    allow,
    options.label,
  );
  return target;
}

/** Whether `allowHosts` (`URL_ALLOW_HOSTS`) names this URL's host (a name, or an address or range holding it). */
export function isAllowListed(url: URL, allowHosts: AllowList): boolean {
  const allow = allowHosts;
  const port = portOf(url);
  const literal = parseHostLiteral(url.hostname);
  return literal ? allowsAddress(allow, literal, port) : allowsName(allow, url.hostname, port);
}

/**
 * POST `body` to `url` through the same guard as `fetchRemoteFile` (checked addresses, pinned connection, no agent),
 * within `timeoutMs` for everything. Redirects are not followed (a `3xx` is answered as it is). At most 64 KiB of the
 * answer is read, and dropped: the status (and a `Retry-After`) is what counts.
 *
 * @throws ApiError `invalid_request` (URL not allowed), `fetch_failed` (DNS, connect, TLS, timed out)
 */
export async function postRemote(
  url: string,
  {
    headers,
    body,
    timeoutMs,
    ...guard
  }: GuardOptions & { headers: Record<string, string>; body: string; timeoutMs: number },
): Promise<{ status: number; retryAfter?: string }> {
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(), timeoutMs);
  const signal = guard.signal ? AbortSignal.any([deadline.signal, guard.signal]) : deadline.signal;
  try {
    const target = parseTarget(url, false, guard.label);
    const allow = guard.allowHosts;
    const addresses = await resolveAllowed(
      target,
      guard.resolveHost ?? systemResolveHost,
      signal,
      false,
      allow,
      guard.label,
    );
    const response = await sendRequest(target, addresses, signal, {
      method: "POST",
      headers: { "content-type": "application/json", "content-length": String(Buffer.byteLength(body)), ...headers },
      body,
    });
    const status = response.statusCode ?? 0;
    const retryAfter = response.headers["retry-after"];
    let read = 0;
    try {
      for await (const chunk of response) {
        read += (chunk as Buffer).length;
        if (read > 64 * 1024) break;
      }
    } finally {
      response.destroy();
    }
    return { status, ...(retryAfter && { retryAfter }) };
  } catch (error) {
    if (deadline.signal.aborted) {
      throw new ApiError("fetch_failed", `${failurePrefix(guard.label)}: no answer within ${timeoutMs / 1000} s`, {
        cause: error,
      });
    }
    if (isApiError(error)) throw error;
    throw new ApiError("fetch_failed", `${failurePrefix(guard.label)}: ${describeNetworkError(error)}`, {
      cause: error,
    });
  } finally {
    clearTimeout(timer);
  }
}
