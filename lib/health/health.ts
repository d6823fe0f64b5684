import { TimeoutError, withTimeout } from "@/lib/async";
import { isApiError } from "@/lib/api/errors";
import {
  HEALTH_SAMPLE_PDF_BASE64,
  HEALTH_SAMPLE_PDF_TEXT,
  HEALTH_SAMPLE_PNG_BASE64,
  HEALTH_SAMPLE_PNG_TEXT,
} from "./sample";
import { availableLanguages, extractDocument, recognizerInUse, render, type OcrPool, type OpenEnv } from "@/lib/ocr";
import type { Env } from "@/lib/env";
import { isOcrError, type TesseractInUse } from "@/lib/ocr/model";
import { countOverdueReservations } from "@/lib/credits";
import { eventLoopDelay, type EventLoopDelay } from "./event-loop";
import { MISSING_STORE_MESSAGE, type Store, type StoreMarker } from "@/lib/store";
import { SERVICE_VERSION } from "@/lib/version";

/**
 * What `GET /api/health` reports (app/api/health/route.ts is only its wiring): whether the store answers, the OCR
 * engine's processes and queues, this process's memory and event-loop delay; with `deep`, the built-in samples read
 * end to end through the real engine (cached, so probes cannot load the engine).
 */

/** A store that does not answer within this is reported as down: a health check must not hang. */
const PING_TIMEOUT_MS = 1_500;
/** `?deep=1` runs the engine at most once per this period; other calls get the cached result. */
const DEEP_CACHE_MS = 60_000;
/** A failed check is retried sooner, so a transient failure does not report the instance degraded for a minute. */
const DEEP_FAILURE_CACHE_MS = 10_000;
const DEEP_DEADLINE_MS = 30_000;
/**
 * How long `/api/health` reports a data loss after an instance found it (docs/decisions.md#store-marker): long enough
 * for a daily look to see it, and every instance reports it, since the finding is kept in Redis itself.
 */
export const DATA_LOSS_REPORT_MS = 24 * 60 * 60 * 1000;

export interface StoreHealth {
  kind: string;
  ok: boolean;
  latencyMs: number;
  /**
   * Credit reservations still open after their request's deadline (their instance died before settling them); the
   * sweep refunds them within a minute or two. A number that stays above zero means nothing sweeps.
   */
  overdueReservations?: number;
  error?: string;
  /**
   * Set for `DATA_LOSS_REPORT_MS` (24 h) after an instance found Redis empty of what it held before (the marker written
   * at first start was gone): accounts, keys and credits from before are lost. The store works; `status` is `degraded`.
   */
  dataLoss?: { detectedAt: string; message: string };
  /**
   * Redis's memory (`INFO memory`), where the store can say: used, its `maxmemory` (null: none set) and policy. At
   * {@link MEMORY_WARN_RATIO} of `maxmemory` or more, `status` is `degraded`: past it Redis refuses writes (credits,
   * keys, jobs) under `noeviction`, or evicts keys under another policy.
   */
  memory?: { usedMb: number; maxMb: number | null; policy: string | null };
  /** Set when Redis refused the health check's write: why. `status` is `degraded` (nothing that writes can work). */
  writeError?: string;
}

/** The share of `maxmemory` from which the store is reported near full (`degraded`). */
export const MEMORY_WARN_RATIO = 0.9;

export interface SampleReading {
  type: "png" | "pdf";
  ok: boolean;
  /** What the engine read (expected: the sample's text). */
  text?: string;
  /** `ocr` or `text-layer`. */
  source?: string;
  confidence?: number;
  latencyMs: number;
  error?: string;
}

export interface EngineCheck {
  ok: boolean;
  latencyMs: number;
  checkedAt: string;
  /** True when this result is from an earlier call (at most 60 s old). */
  cached: boolean;
  samples: SampleReading[];
}

export interface HealthBody {
  status: "ok" | "degraded";
  version: string;
  store: StoreHealth;
  engine: {
    /** Shallow: an OCR process is started and warm. Deep: both built-in samples were read correctly. */
    ready: boolean;
    /** OCR processes (live, busy) and jobs waiting for one. */
    workers: number;
    busy: number;
    queued: number;
    /** Expected wait before a new OCR job starts, in seconds (what admission control and `Retry-After` use). */
    expectedWaitS: number;
    /** Processes that only open PDFs and read text layers. */
    inspect: { workers: number; busy: number; queued: number };
    /** Engine processes stopped for a deadline, a work budget or the memory ceiling, or that died, since this instance started. */
    stopped: { timeout: number; work: number; memory: number; crashed: number };
    /** Processes replaced between jobs because they kept too much memory (Tesseract's heap only grows). */
    recycled: number;
    /** Resident memory of this server process and of each engine process, MB. */
    memoryMb: { server: number; engine: number[] };
    languages: string[];
    /**
     * The Tesseract the OCR processes read with (`OCR_TESSERACT`): `native` (the system's libtesseract, its version)
     * or `wasm` (tesseract.js; `note` says why the library was not used); null until an OCR process has started.
     */
    tesseract: TesseractInUse | null;
    /**
     * PaddleOCR's recognizer (`OCR_MODEL_DIR`): `PP-OCRv6_tiny`, or the npm fallback's `PP-OCRv4` (with a `note` when
     * `OCR_MODEL_DIR` was set but unusable); null when `OCR_ENGINES` leaves PaddleOCR out.
     */
    recognizer: { name: string; note?: string } | null;
    check?: EngineCheck;
  };
  /** This process's event-loop delay (the last 10-second window): the server stays responsive while pages are read. */
  eventLoop: EventLoopDelay;
}

/**
 * The health report: `status` is `degraded` when the store is down, when Redis lost its data (within the last 24 h),
 * when Redis refuses writes or is at 90 % of its `maxmemory`, or (deep) the engine misread a sample. `healthStatusCode` says which of those make it a `503`.
 *
 * `store` is called inside the check (a route context's lazy `store`): a store that cannot be built (no Redis
 * configured in production, a bad configuration) is reported, not thrown. `env.OCR_LANGUAGES` is what is listed.
 * `pool`: the process's engine pool (the route context's), whose state is reported and which reads the samples.
 */
export async function checkHealth(
  store: () => Store,
  { deep, env, pool }: { deep: boolean; env: OpenEnv & Pick<Env, "OCR_ENGINES" | "OCR_MODEL_DIR">; pool: OcrPool },
): Promise<HealthBody> {
  const [storeHealth, check] = await Promise.all([checkStore(store), deep ? checkEngine(env, pool) : undefined]);
  const stats = pool.stats();
  const healthy =
    storeHealth.ok &&
    !storeHealth.dataLoss &&
    !storeHealth.writeError &&
    !nearlyFull(storeHealth) &&
    (check?.ok ?? true);
  return {
    status: healthy ? "ok" : "degraded",
    version: SERVICE_VERSION,
    store: storeHealth,
    engine: {
      ready: check ? check.ok : stats.workers > 0,
      workers: stats.workers,
      busy: stats.busy,
      queued: stats.queued,
      expectedWaitS: Math.round(stats.expectedWaitMs / 100) / 10,
      inspect: { workers: stats.inspect.workers, busy: stats.inspect.busy, queued: stats.inspect.queued },
      stopped: stats.stopped,
      recycled: stats.recycled,
      memoryMb: {
        server: Math.round(process.memoryUsage.rss() / 1048576),
        engine: stats.processes.map((p) => p.rssMb),
      },
      languages: availableLanguages(env.OCR_LANGUAGES),
      tesseract: stats.tesseract,
      recognizer: recognizerInUse(env.OCR_ENGINES, env.OCR_MODEL_DIR),
      ...(check && { check }),
    },
    eventLoop: eventLoopDelay(),
  };
}

/**
 * `503` when this instance cannot serve: the store does not answer, or (deep) the engine misread a sample. A data loss
 * alone stays `200` (with `status: "degraded"`): the service works for new accounts, and a `503` would only take every
 * instance out of a load balancer's rotation for a day while nothing a restart could mend is wrong.
 */
export function healthStatusCode(body: HealthBody): 200 | 503 {
  return body.store.ok && (body.engine.check?.ok ?? true) ? 200 : 503;
}

const toMb = (bytes: number) => Math.round(bytes / 104857.6) / 10;

/** At {@link MEMORY_WARN_RATIO} of `maxmemory` or past it. */
function nearlyFull({ memory }: StoreHealth): boolean {
  return memory !== undefined && memory.maxMb !== null && memory.usedMb >= memory.maxMb * MEMORY_WARN_RATIO;
}

async function checkStore(openStore: () => Store): Promise<StoreHealth> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  let kind = "none";
  try {
    const store = openStore(); // throws in production when no Redis is configured
    kind = store.kind;
    await withTimeout(store.ping(), PING_TIMEOUT_MS, `no answer within ${PING_TIMEOUT_MS} ms`);
    const latencyMs = elapsed();
    const [overdueReservations, marker, memory, writeError] = await Promise.all([
      withTimeout(countOverdueReservations(store), PING_TIMEOUT_MS, "no answer").catch(() => undefined),
      withTimeout(checkStoreMarker(store), PING_TIMEOUT_MS, "no answer").catch((error: unknown) => {
        console.error(
          "[health] the store marker could not be checked:",
          error instanceof Error ? error.message : error,
        );
        return undefined;
      }),
      withTimeout(store.meta.memory(), PING_TIMEOUT_MS, "no answer").catch(() => null),
      withTimeout(store.meta.probeWrite(), PING_TIMEOUT_MS, "no answer").catch(() => "no answer to a write" as const),
    ]);
    const dataLoss = marker && dataLossReport(marker);
    return {
      kind,
      ok: true,
      latencyMs,
      ...(overdueReservations !== undefined && { overdueReservations }),
      ...(dataLoss && { dataLoss }),
      ...(memory && {
        memory: {
          usedMb: toMb(memory.usedBytes),
          maxMb: memory.maxBytes === null ? null : toMb(memory.maxBytes),
          policy: memory.policy,
        },
      }),
      ...(writeError && { writeError: `Redis refuses writes: ${writeError}` }),
    };
  } catch (error) {
    // Fixed wording, never the raw error: it could carry a connection string.
    const reason =
      error instanceof TimeoutError
        ? error.message
        : kind !== "none"
          ? "unreachable"
          : error instanceof Error && error.message === MISSING_STORE_MESSAGE
            ? "no store is configured"
            : "the store configuration is invalid";
    return { kind, ok: false, latencyMs: elapsed(), error: reason };
  }
}

// The marker each store (one per process, but tests swap them) was last seen with. On globalThis: Next bundles this
// module into instrumentation and each route separately, and development re-evaluates it on every change.
const markerSlot = globalThis as typeof globalThis & { __ocrSeenMarkers?: WeakMap<Store, string> };

/**
 * Read the store's marker (lib/store/meta/), writing it when there is none, and record a loss on it when it is not
 * the one this process saw before: Redis lost everything written before (restarted without persistence, flushed, or
 * evicting keys). A Redis without a marker that this process never saw one on is taken as new (a fresh deployment,
 * or data from before markers existed); so is one emptied while no running instance had seen it — only a process that
 * saw the marker can tell. Called at startup (instrumentation.ts) and by every health check.
 */
export async function checkStoreMarker(store: Store): Promise<StoreMarker> {
  const seen = (markerSlot.__ocrSeenMarkers ??= new WeakMap());
  const now = new Date().toISOString();
  let marker = (await store.meta.readMarker()) ?? (await store.meta.createMarker({ initializedAt: now }));
  const previous = seen.get(store);
  // A marker other than the one seen, not yet marked as a loss: this instance is the first to notice.
  if (previous !== undefined && marker.initializedAt !== previous && !marker.dataLostAt) {
    marker = { ...marker, dataLostAt: now };
    await store.meta.writeMarker(marker);
    console.error(
      `[health] Redis lost its data: the marker written at ${previous} is gone (now ${marker.initializedAt})`,
    );
  }
  seen.set(store, marker.initializedAt);
  return marker;
}

function dataLossReport(marker: StoreMarker): StoreHealth["dataLoss"] {
  const detectedAt = marker.dataLostAt;
  if (!detectedAt || !(Date.now() - Date.parse(detectedAt) < DATA_LOSS_REPORT_MS)) return undefined;
  return {
    detectedAt,
    message:
      "Redis lost its data (no persistence, flushed, or evicting keys?): accounts, API keys and credits written " +
      `before ${detectedAt} are gone. Enable persistence (AOF or RDB) and a noeviction policy; restore from a backup if there is one.`,
  };
}

let lastCheck: EngineCheck | undefined;
let running: Promise<EngineCheck> | undefined;

/** Read the built-in samples through the real engine; cached for 60 s (10 s if it failed). */
async function checkEngine(env: OpenEnv, pool: OcrPool): Promise<EngineCheck> {
  const ttl = lastCheck?.ok ? DEEP_CACHE_MS : DEEP_FAILURE_CACHE_MS;
  if (lastCheck && Date.now() - Date.parse(lastCheck.checkedAt) < ttl) return { ...lastCheck, cached: true };
  running ??= runEngineCheck(env, pool).finally(() => {
    running = undefined;
  });
  return running;
}

async function runEngineCheck(env: OpenEnv, pool: OcrPool): Promise<EngineCheck> {
  const started = performance.now();
  const samples = await Promise.all([
    readSample(env, pool, "png", HEALTH_SAMPLE_PNG_BASE64, HEALTH_SAMPLE_PNG_TEXT),
    readSample(env, pool, "pdf", HEALTH_SAMPLE_PDF_BASE64, HEALTH_SAMPLE_PDF_TEXT),
  ]);
  lastCheck = {
    ok: samples.every((sample) => sample.ok),
    latencyMs: Math.round(performance.now() - started),
    checkedAt: new Date().toISOString(),
    cached: false,
    samples,
  };
  return lastCheck;
}

async function readSample(
  env: OpenEnv,
  pool: OcrPool,
  type: SampleReading["type"],
  base64: string,
  expected: string,
): Promise<SampleReading> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  try {
    const bytes = new Uint8Array(Buffer.from(base64, "base64"));
    const document = await extractDocument(bytes, {
      env,
      pool,
      language: "eng",
      deadline: Date.now() + DEEP_DEADLINE_MS,
    });
    const text = render(document, "text").trim();
    const ok = normalize(text).includes(normalize(expected));
    const page = document.pages[0];
    return {
      type,
      ok,
      text: text.slice(0, 200),
      source: page?.source,
      confidence: page?.confidence,
      latencyMs: elapsed(),
      ...(!ok && { error: "the engine misread the sample" }),
    };
  } catch (error) {
    console.error(
      `[health] engine check (${type}) failed:`,
      error instanceof Error ? (error.stack ?? error.message) : error,
    );
    const message = isOcrError(error) || isApiError(error) ? `${error.code}: ${error.message}` : "the engine failed";
    return { type, ok: false, latencyMs: elapsed(), error: message };
  }
}

function normalize(text: string): string {
  return text.toLowerCase().replace(/\s+/g, " ").trim();
}
