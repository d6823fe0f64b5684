import os from "node:os";
import { z } from "zod";
// eslint-disable-next-line no-restricted-imports -- the lib/input barrel imports fetch-remote.ts, which imports this module (a cycle through env).
import { parseAllowList } from "@/lib/input/allow-hosts";
import { DEFAULT_MAX_INLINE_BYTES } from "@/lib/vocabulary";

const MiB = 1024 * 1024;

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
  /** Tesseract workers per instance (default: available cores). */
  OCR_WORKERS: z.coerce.number().int().min(1).max(64).optional(),
  /** Recognition jobs allowed to wait for a worker before requests get `503 overloaded`. */
  OCR_QUEUE_LIMIT: int(64, 1),
  /** A worker is replaced after this many jobs (bounds wasm heap growth). */
  OCR_WORKER_MAX_JOBS: int(200, 1),
  OCR_WORKER_CREATE_TIMEOUT_MS: int(30_000, 1000),
  /**
   * Memory ceiling of one engine process (resident MB): a job that drives its process past it is stopped and
   * answered `413`. Every page is read in a separate process, so the ceiling is per job.
   */
  OCR_WORKER_MEMORY_MB: int(1024, 128),
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
  /** Engine processes that only open PDFs and read their text layers (no Tesseract), so opens never wait behind OCR. */
  OCR_INSPECT_WORKERS: int(1, 1),

  // Limits (docs/api.md#limits)
  MAX_INLINE_BYTES: int(DEFAULT_MAX_INLINE_BYTES, 1),
  MAX_URL_BYTES: int(25 * MiB, 1),
  /**
   * Private hosts `imageUrl` may reach (self-hosters: an internal MinIO, `127.0.0.1:9000`): host names, addresses
   * (each optionally `:port`) and CIDR ranges, comma-separated. Empty: only public addresses. lib/input/allow-hosts.ts.
   */
  URL_ALLOW_HOSTS: z
    .string()
    .optional()
    .superRefine((value, context) => {
      try {
        parseAllowList(value);
      } catch (error) {
        context.addIssue({ code: "custom", message: error instanceof Error ? error.message : String(error) });
      }
    }),
  URL_FETCH_TIMEOUT_MS: int(15_000, 100),
  URL_MAX_REDIRECTS: int(3, 0),
  MAX_PDF_PAGES: int(50, 1),
  MAX_IMAGE_PIXELS: int(50_000_000, 1),
  /** Most bytes one PDF stream (page content, font, form) may inflate to; a PDF with a larger one is `413`. */
  MAX_PDF_STREAM_BYTES: int(128 * MiB, 1024),
  REQUEST_DEADLINE_MS: int(55_000, 1000),
  RATE_LIMIT_PER_MINUTE: int(60, 1),
  /** OCR requests one account may have in flight on one instance; past it `429` with `Retry-After`. */
  ACCOUNT_MAX_IN_FLIGHT: int(4, 1),

  // Accounts and credits
  FREE_CREDITS: int(100, 0),
  /** Sign-ups allowed per client address per hour (an IPv6 address counts by its /64). */
  SIGNUP_PER_ADDRESS_PER_HOUR: int(3, 1),
  /** Sign-ups allowed per hour across the whole deployment: a ceiling on free credits given away. */
  SIGNUP_PER_HOUR: int(100, 1),
  /** Sign-in attempts allowed per client address per 15 minutes, whatever the e-mail. */
  SIGNIN_PER_ADDRESS: int(30, 1),

  // Client addresses (lib/client-ip.ts)
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
});

export type Env = z.infer<typeof envSchema> & { OCR_WORKERS: number };

let cached: Env | undefined;

/** The parsed configuration. Throws one readable error listing every bad variable. */
export function getEnv(): Env {
  if (cached) return cached;
  const parsed = envSchema.safeParse(process.env);
  if (!parsed.success) {
    throw new Error(`Invalid configuration:\n${z.prettifyError(parsed.error)}`);
  }
  cached = { ...parsed.data, OCR_WORKERS: parsed.data.OCR_WORKERS ?? Math.max(1, os.availableParallelism()) };
  return cached;
}

/** Forget the parsed configuration so the next `getEnv()` reads `process.env` again (tests, CLI). */
export function resetEnv(): void {
  cached = undefined;
}
