import { DEFAULT_MAX_INLINE_BYTES } from "@/lib/vocabulary";
import { UsageError } from "./errors";

const DEFAULT_BASE_URL = "http://localhost:3000";
/** The documented client defaults: 30 000 ms per attempt, 3 retries (docs/cli.md, Configuration). */
const DEFAULT_TIMEOUT_MS = 30_000;
const DEFAULT_RETRIES = 3;

/** Environment variables the CLI reads, first one set wins for the key. */
const KEY_VARIABLES = ["FETCH_MCP_SERVER_API_KEY", "OCR_API_KEY"] as const;

export interface Config {
  /** Without a trailing slash; may carry a path prefix (`https://example.com/ocr`). */
  baseUrl: string;
  /** Undefined when none is configured: commands that need one fail with exit code 3. */
  apiKey: string | undefined;
  /** Per attempt, in ms. */
  timeoutMs: number;
  retries: number;
  /** Local files above this are refused before any request (`OCR_MAX_INLINE_BYTES` for a server with another limit). */
  maxInlineBytes: number;
  userAgent: string;
}

export interface ConfigFlags {
  "base-url"?: string;
  "api-key"?: string;
  timeout?: string;
  retries?: string;
}

export function resolveConfig(
  flags: ConfigFlags,
  env: Readonly<Record<string, string | undefined>>,
  version: string,
): Config {
  return {
    baseUrl: parseBaseUrl(flags["base-url"] ?? nonEmpty(env.OCR_BASE_URL) ?? DEFAULT_BASE_URL),
    apiKey: nonEmpty(flags["api-key"]) ?? KEY_VARIABLES.map((name) => nonEmpty(env[name])).find(Boolean),
    timeoutMs: flags.timeout === undefined ? DEFAULT_TIMEOUT_MS : parseDuration(flags.timeout, "--timeout"),
    retries: flags.retries === undefined ? DEFAULT_RETRIES : parseInteger(flags.retries, "--retries", 0, 10),
    maxInlineBytes:
      env.OCR_MAX_INLINE_BYTES === undefined || env.OCR_MAX_INLINE_BYTES === ""
        ? DEFAULT_MAX_INLINE_BYTES
        : parseInteger(env.OCR_MAX_INLINE_BYTES, "OCR_MAX_INLINE_BYTES", 1, Number.MAX_SAFE_INTEGER),
    userAgent: `ocr-cli/${version} node/${process.versions.node}`,
  };
}

function nonEmpty(value: string | undefined): string | undefined {
  const trimmed = value?.trim();
  return trimmed ? trimmed : undefined;
}

export function parseBaseUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new UsageError(`--base-url / OCR_BASE_URL is not a URL: ${JSON.stringify(value.slice(0, 200))}`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new UsageError(`--base-url / OCR_BASE_URL must be http(s), not ${url.protocol}`);
  }
  if (url.username || url.password || url.search || url.hash) {
    throw new UsageError(
      "--base-url / OCR_BASE_URL takes no credentials, query or fragment (the key goes in FETCH_MCP_SERVER_API_KEY)",
    );
  }
  return url.href.replace(/\/+$/, "");
}

/** `30000`, `30000ms`, `30s` or `1.5m` → ms. */
export function parseDuration(value: string, name: string): number {
  const match = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m)?\s*$/.exec(value);
  const ms = match ? Number(match[1]) * ({ ms: 1, s: 1000, m: 60_000 }[match[2] ?? "ms"] ?? 1) : NaN;
  if (!Number.isFinite(ms) || ms < 100 || ms > 3_600_000) {
    throw new UsageError(
      `${name} must be a duration between 100 ms and 1 h, e.g. 30000, 30s or 2m (got ${JSON.stringify(value)})`,
    );
  }
  return Math.round(ms);
}

export function parseInteger(value: string, name: string, min: number, max: number): number {
  const number = Number(value);
  if (!/^\s*\d+\s*$/.test(value) || !Number.isSafeInteger(number) || number < min || number > max) {
    throw new UsageError(`${name} must be a whole number from ${min} to ${max} (got ${JSON.stringify(value)})`);
  }
  return number;
}

/** `http://` to anything but this machine sends the key in clear text. */
export function isInsecureRemote(baseUrl: string): boolean {
  const { protocol, hostname } = new URL(baseUrl);
  return (
    protocol === "http:" && !["localhost", "127.0.0.1", "[::1]"].includes(hostname) && !hostname.endsWith(".localhost")
  );
}
