import "server-only"; // reads the store's credentials from the environment: never in a client bundle (Next fails the build)
import { getEnv, type Env } from "@/lib/env";
import { createRestRedis, createTcpRedis } from "./connect";
import { createMemoryStore, createRedisStore, type Store } from "./store";

export { createMemoryStore, createRedisStore, type Store, type StoreKind } from "./store";
export { createRestRedis, createTcpRedis } from "./connect";
export { isRedisConnectionError, logQueueErrors, REDIS_SOCKET_OPTIONS, watchRedisClient } from "./redis-link";
export type { AccountStore, SessionRecord, UserRecord } from "./accounts/port";
export type { ApiKeyRecord, ApiKeyStore } from "./keys/port";
export type { CreditStore, LedgerDraft, LedgerEntry, LedgerFormat, LedgerPage, LedgerReason } from "./credits/port";
export type { IdempotencyRecord, IdempotencyStore } from "./idempotency/port";
export type { BackoffPolicy, BackoffState, LimitStore, RateLimitResult, SlotResult } from "./limits/port";
export type { MailboxStore } from "./mailbox/port";
export type {
  CreateJobResult,
  EndedJob,
  EndJobInput,
  JobPageList,
  JobRecord,
  JobStatus,
  JobStore,
  NewJob,
  PageOutcome,
} from "./jobs/port";
export { jobCounts } from "./jobs/port";
export { activeJobStatuses, jobStatuses } from "./jobs/port";
export type { MetaStore, StoreMarker, StoreMemory, WriteRefusal } from "./meta/port";
export type { BreakerPolicy, DeliveryAttempt, EndpointState, WebhookAccount, WebhookStore } from "./webhooks/port";
export { DELIVERY_LOG_SIZE, deliveryAttemptSchema } from "./webhooks/port";
export type {
  GrantRef,
  OAuthClientRecord,
  OAuthCodeRecord,
  OAuthGrantRecord,
  OAuthStore,
  OAuthTokenRecord,
  SingleUse,
} from "./oauth/port";

type StoreConfig =
  | { kind: "redis-rest"; url: string; token: string; prefix: string }
  | { kind: "redis-tcp"; url: string; prefix: string }
  | { kind: "memory" };

type StoreEnv = Pick<
  Env,
  | "NODE_ENV"
  | "UPSTASH_REDIS_REST_URL"
  | "UPSTASH_REDIS_REST_TOKEN"
  | "KV_REST_API_URL"
  | "KV_REST_API_TOKEN"
  | "REDIS_URL"
  | "REDIS_PREFIX"
>;

export const MISSING_STORE_MESSAGE =
  "No Redis is configured, and the in-memory store is for development only (accounts, keys and credits would " +
  "vanish on every cold start). Set UPSTASH_REDIS_REST_URL and UPSTASH_REDIS_REST_TOKEN (Upstash; on Vercel the " +
  "integration's KV_REST_API_URL and KV_REST_API_TOKEN work too), or REDIS_URL for a self-hosted Redis.";

/**
 * Which store the configuration asks for: Upstash REST (`UPSTASH_REDIS_REST_*`, else Vercel's `KV_REST_API_*`),
 * else TCP (`REDIS_URL`), else memory — which production refuses.
 */
export function resolveStoreConfig(env: StoreEnv): StoreConfig {
  const prefix = env.REDIS_PREFIX;
  const restUrl = env.UPSTASH_REDIS_REST_URL ?? env.KV_REST_API_URL;
  const restToken = env.UPSTASH_REDIS_REST_URL ? env.UPSTASH_REDIS_REST_TOKEN : env.KV_REST_API_TOKEN;
  if (restUrl) {
    if (!restToken) {
      throw new Error(
        `${env.UPSTASH_REDIS_REST_URL ? "UPSTASH_REDIS_REST_URL" : "KV_REST_API_URL"} is set without its token ` +
          `(${env.UPSTASH_REDIS_REST_URL ? "UPSTASH_REDIS_REST_TOKEN" : "KV_REST_API_TOKEN"}).`,
      );
    }
    return { kind: "redis-rest", url: restUrl, token: restToken, prefix };
  }
  if (env.REDIS_URL) return { kind: "redis-tcp", url: env.REDIS_URL, prefix };
  if (env.NODE_ENV === "production") throw new Error(MISSING_STORE_MESSAGE);
  return { kind: "memory" };
}

/** Build a store for a configuration (the CLI and tests use this directly; the app uses `getStore()`). */
function createStore(config: StoreConfig): Store {
  switch (config.kind) {
    case "redis-rest":
      return createRedisStore({ redis: createRestRedis(config), prefix: config.prefix, kind: "redis-rest" });
    case "redis-tcp": {
      const { redis, binary, close } = createTcpRedis(config.url);
      return createRedisStore({ redis, binary, prefix: config.prefix, kind: "redis-tcp", onClose: close });
    }
    case "memory":
      return createMemoryStore();
  }
}

// On globalThis, not in a module variable: Next dev re-evaluates modules on every change, and the memory store
// (or a TCP connection) must survive that.
const globalSlot = globalThis as typeof globalThis & { __ocrStore?: Store };

/**
 * The process-wide store: its ports, built once over one connection from the configuration (`getEnv()`) on first
 * use. Callers take the port they need (`getStore().credits`) at each call, not once: tests swap the store
 * (`installStore`, or `resetStore()` after changing the configuration). Throws on first use in production when no
 * Redis is configured.
 */
export function getStore(): Store {
  globalSlot.__ocrStore ??= createStore(resolveStoreConfig(getEnv()));
  return globalSlot.__ocrStore;
}

/**
 * Make `store` the process-wide store (until `resetStore()`): tests wrap a real store to lose a reply or fail a
 * call, the way a network does.
 */
export function installStore(store: Store): void {
  globalSlot.__ocrStore = store;
}

/** Close and forget the process-wide store (CLI exit, tests). */
export async function resetStore(): Promise<void> {
  const store = globalSlot.__ocrStore;
  globalSlot.__ocrStore = undefined;
  await store?.close();
}

/** For `instrumentation.ts` or a health check: throws the configuration error early instead of on first use. */
export function assertStoreConfigured(): void {
  resolveStoreConfig(getEnv());
}
