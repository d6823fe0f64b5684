import type { Redis } from "@upstash/redis";
import type { BinaryRedis } from "./node-redis-requester";
import { createMemoryAccountStore } from "./accounts/memory";
import type { AccountStore } from "./accounts/port";
import { createRedisAccountStore } from "./accounts/redis";
import { MemoryBalances, createMemoryCreditStore } from "./credits/memory";
import type { CreditStore } from "./credits/port";
import { createRedisCreditStore } from "./credits/redis";
import { createMemoryIdempotencyStore } from "./idempotency/memory";
import type { IdempotencyStore } from "./idempotency/port";
import { createRedisIdempotencyStore } from "./idempotency/redis";
import { createMemoryApiKeyStore } from "./keys/memory";
import type { ApiKeyStore } from "./keys/port";
import { createRedisApiKeyStore } from "./keys/redis";
import { createMemoryJobStore } from "./jobs/memory";
import type { JobStore } from "./jobs/port";
import { createRedisJobStore } from "./jobs/redis";
import { createMemoryLimitStore } from "./limits/memory";
import type { LimitStore } from "./limits/port";
import { createRedisLimitStore } from "./limits/redis";
import { createMemoryMailboxStore } from "./mailbox/memory";
import type { MailboxStore } from "./mailbox/port";
import { createRedisMailboxStore } from "./mailbox/redis";
import { createMemoryMetaStore } from "./meta/memory";
import type { MetaStore } from "./meta/port";
import { createRedisMetaStore } from "./meta/redis";
import { createMemoryOAuthStore } from "./oauth/memory";
import type { OAuthStore } from "./oauth/port";
import { createRedisOAuthStore } from "./oauth/redis";
import { call, keyLayout, type RedisContext } from "./redis-support";
import { createMemoryWebhookStore } from "./webhooks/memory";
import type { WebhookStore } from "./webhooks/port";
import { createRedisWebhookStore } from "./webhooks/redis";

export type StoreKind = "memory" | "redis-tcp" | "redis-rest";

/**
 * Everything the service keeps, one port per concern, built once over one connection (`getStore()` in index.ts).
 * Each domain module takes the port it needs: lib/accounts `accounts` (and `limits` for sign-in), lib/keys `keys`
 * (and `limits`), lib/credits `credits` and `idempotency`, the MCP relay `mailbox`, lib/health/health.ts `meta`, lib/jobs
 * `jobs`, lib/webhooks `webhooks`, lib/oauth `oauth`. Each port has a redis adapter (Upstash REST or TCP) and a memory adapter side by side;
 * `tests/store/contract.test.ts` runs the same cases against each.
 *
 * Failures to reach Redis surface as `ApiError("unavailable")` — except `limits.rateLimit`, which fails open.
 */
export interface Store {
  readonly kind: StoreKind;
  /** Throws `unavailable` when the store cannot be reached (health check). */
  ping(): Promise<void>;
  /** Release connections (CLI, tests). */
  close(): Promise<void>;
  readonly accounts: AccountStore;
  readonly keys: ApiKeyStore;
  readonly credits: CreditStore;
  readonly idempotency: IdempotencyStore;
  readonly limits: LimitStore;
  readonly mailbox: MailboxStore;
  readonly jobs: JobStore;
  readonly meta: MetaStore;
  readonly webhooks: WebhookStore;
  readonly oauth: OAuthStore;
}

interface RedisStoreOptions {
  /** An @upstash/redis client created with `automaticDeserialization: false` (see lib/store/connect.ts). */
  redis: Redis;
  /** Prefix of every key, e.g. `ocr:`. */
  prefix: string;
  kind: Extract<StoreKind, "redis-tcp" | "redis-rest">;
  /** Binary-safe commands (TCP): job files stored as bytes. Without: as base64 (Upstash REST carries JSON strings). */
  binary?: BinaryRedis;
  /** Called by `close()` (TCP connections). */
  onClose?: () => Promise<void>;
}

/**
 * The redis adapters over one client, for Upstash REST and TCP alike (the @upstash/redis API). Multi-key changes
 * are Lua scripts (each concern's scripts.ts); the key layout is in lib/store/redis-support.ts.
 */
export function createRedisStore({ redis, binary, prefix, kind, onClose }: RedisStoreOptions): Store {
  const context: RedisContext = { redis, binary, key: keyLayout(prefix) };
  return {
    kind,
    async ping() {
      await call("ping", () => redis.ping());
    },
    async close() {
      await onClose?.();
    },
    accounts: createRedisAccountStore(context),
    keys: createRedisApiKeyStore(context),
    credits: createRedisCreditStore(context),
    idempotency: createRedisIdempotencyStore(context),
    limits: createRedisLimitStore(context),
    mailbox: createRedisMailboxStore(context),
    jobs: createRedisJobStore(context),
    meta: createRedisMetaStore(context),
    webhooks: createRedisWebhookStore(context),
    oauth: createRedisOAuthStore(context),
  };
}

/**
 * The embedded store: the same contract as the redis adapters, for one process. The default when no Redis is
 * configured, so `npm run dev` works on a fresh machine; everything is lost when the process exits.
 */
export function createMemoryStore(): Store {
  const balances = new MemoryBalances();
  return {
    kind: "memory",
    async ping() {},
    async close() {},
    accounts: createMemoryAccountStore(balances),
    keys: createMemoryApiKeyStore(),
    credits: createMemoryCreditStore(balances),
    idempotency: createMemoryIdempotencyStore(),
    limits: createMemoryLimitStore(),
    mailbox: createMemoryMailboxStore(),
    jobs: createMemoryJobStore(balances),
    meta: createMemoryMetaStore(),
    webhooks: createMemoryWebhookStore(),
    oauth: createMemoryOAuthStore(),
  };
}
