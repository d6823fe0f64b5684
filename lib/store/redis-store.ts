import { Ratelimit } from "@upstash/ratelimit";
import type { Redis } from "@upstash/redis";
import { z } from "zod";
import { storeUnavailable } from "./errors";
import {
  claimIdempotencyScript,
  completeIdempotencyScript,
  createApiKeyScript,
  createUserScript,
  drainMailboxScript,
  grantCreditsScript,
  ledgerPageScript,
  pushMailboxScript,
  recordBackoffFailureScript,
  releaseCreditsScript,
  releaseIdempotencyScript,
  reserveCreditsScript,
  resolveApiKeyScript,
  revokeApiKeyScript,
} from "./scripts";
import {
  MAILBOX_MAX_MESSAGES,
  RESERVATION_TTL_MS,
  TOMBSTONE_TTL_MS,
  parseReservationMember,
  reservationMember,
  apiKeyRecordSchema,
  idempotencyRecordSchema,
  ledgerEntrySchema,
  resolvedApiKeySchema,
  sessionRecordSchema,
  userRecordSchema,
  type ApiKeyRecord,
  type BackoffState,
  type IdempotencyRecord,
  type LedgerDraft,
  type RateLimitResult,
  type Store,
  type StoreKind,
} from "./types";

interface RedisStoreOptions {
  /** An @upstash/redis client created with `automaticDeserialization: false` (see lib/store/connect.ts). */
  redis: Redis;
  /** Prefix of every key, e.g. `ocr:`. */
  prefix: string;
  kind: Extract<StoreKind, "redis-tcp" | "redis-rest">;
  /** Called by `close()` (TCP connections). */
  onClose?: () => Promise<void>;
}

const integer = z.coerce.number().int();
const reservedTuple = z.tuple([integer, integer]);
const stringList = z.array(z.string());
const flatHash = z.array(z.union([z.string(), z.number()])).transform((items) => {
  const record: Record<string, string> = {};
  for (let i = 0; i + 1 < items.length; i += 2) record[String(items[i])] = String(items[i + 1]);
  return record;
});
/** A record in the revoked-keys hash: revoked, with the last use the revoke script copied from the hash index. */
const revokedApiKeySchema = apiKeyRecordSchema.extend({
  revokedAt: z.iso.datetime(),
  lastUsedMs: z.number().int().nonnegative().optional(),
});
const claimReply = z.union([
  z.tuple([z.literal("claimed")]),
  z.tuple([z.literal("exists"), flatHash]),
]);

/**
 * The redis adapter: one implementation for Upstash REST and TCP Redis, on the @upstash/redis API. Multi-key
 * changes are Lua scripts (lib/store/scripts.ts); rate limits are @upstash/ratelimit's fixed window.
 *
 * Key layout (prefix `ocr:`): `user:{id}` hash · `email:{email}` → user id · `session:{sha256}` JSON ·
 * `apikey:{sha256}` hash (the hot lookup) · `keys:{userId}` / `revokedkeys:{userId}` hash keyId → JSON ·
 * `credits:{userId}` integer · `ledger:{userId}` list of JSON, oldest first · `usage:{userId}` hash day → pages ·
 * `reservation:{userId}:{requestId}` · `idem:{scope}` hash · `ratelimit:{bucket}:…` · `mailbox:{id}` list +
 * `mailbox-open:{id}`.
 */
export function createRedisStore({ redis, prefix, kind, onClose }: RedisStoreOptions): Store {
  const key = {
    user: (userId: string) => `${prefix}user:${userId}`,
    email: (email: string) => `${prefix}email:${email}`,
    session: (sessionKey: string) => `${prefix}session:${sessionKey}`,
    apiKey: (hash: string) => `${prefix}apikey:${hash}`,
    keys: (userId: string) => `${prefix}keys:${userId}`,
    revokedKeys: (userId: string) => `${prefix}revokedkeys:${userId}`,
    credits: (userId: string) => `${prefix}credits:${userId}`,
    ledger: (userId: string) => `${prefix}ledger:${userId}`,
    usage: (userId: string) => `${prefix}usage:${userId}`,
    reservation: (userId: string, requestId: string) => `${prefix}reservation:${userId}:${requestId}`,
    openReservations: () => `${prefix}reservations:open`,
    idempotency: (scope: string) => `${prefix}idem:${scope}`,
    rateLimit: (bucket: string) => `${prefix}ratelimit:${bucket}`,
    backoff: (subject: string) => `${prefix}backoff:${subject}`,
    mailbox: (id: string) => `${prefix}mailbox:${id}`,
    mailboxOpen: (id: string) => `${prefix}mailbox-open:${id}`,
  };

  const scripts = {
    createUser: redis.createScript<unknown>(createUserScript),
    createApiKey: redis.createScript<unknown>(createApiKeyScript),
    resolveApiKey: redis.createScript<unknown>(resolveApiKeyScript),
    revokeApiKey: redis.createScript<unknown>(revokeApiKeyScript),
    reserveCredits: redis.createScript<unknown>(reserveCreditsScript),
    releaseCredits: redis.createScript<unknown>(releaseCreditsScript),
    grantCredits: redis.createScript<unknown>(grantCreditsScript),
    ledgerPage: redis.createScript<unknown>(ledgerPageScript),
    claimIdempotency: redis.createScript<unknown>(claimIdempotencyScript),
    completeIdempotency: redis.createScript<unknown>(completeIdempotencyScript),
    releaseIdempotency: redis.createScript<unknown>(releaseIdempotencyScript),
    pushMailbox: redis.createScript<unknown>(pushMailboxScript),
    drainMailbox: redis.createScript<unknown>(drainMailboxScript),
    recordBackoffFailure: redis.createScript<unknown>(recordBackoffFailureScript),
  };

  const limiters = new Map<string, Ratelimit>();

  /** Every Redis call goes through here: failures become `unavailable` (fail closed). */
  async function call<T>(operation: string, run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (error) {
      throw storeUnavailable(operation, error);
    }
  }

  const fixed = (draft: LedgerDraft) => JSON.stringify(draft);

  return {
    kind,

    async ping() {
      await call("ping", () => redis.ping());
    },

    async close() {
      await onClose?.();
    },

    async createUser({ user, signupCredits, signupEntry }) {
      const reply = await call("createUser", () =>
        scripts.createUser.exec(
          [key.email(user.email), key.user(user.id), key.credits(user.id), key.ledger(user.id)],
          [user.id, user.email, user.passwordHash, user.createdAt, String(signupCredits), fixed(signupEntry)],
        ),
      );
      return integer.parse(reply) === 1;
    },

    async getUser(userId) {
      const reply = await call("getUser", () => redis.hgetall(key.user(userId)));
      const record = flatHash.nullable().parse(reply);
      return record && Object.keys(record).length > 0 ? userRecordSchema.parse(record) : null;
    },

    async getUserIdByEmail(email) {
      const reply = await call("getUserIdByEmail", () => redis.get(key.email(email)));
      return z.string().nullable().parse(reply);
    },

    async createSession(sessionKey, session, ttlMs) {
      await call("createSession", () => redis.set(key.session(sessionKey), JSON.stringify(session), { px: ttlMs }));
    },

    async getSession(sessionKey) {
      const reply = await call("getSession", () => redis.get(key.session(sessionKey)));
      const raw = z.string().nullable().parse(reply);
      return raw === null ? null : sessionRecordSchema.parse(JSON.parse(raw));
    },

    async deleteSession(sessionKey) {
      await call("deleteSession", () => redis.del(key.session(sessionKey)));
    },

    async createApiKey(record, maxActive) {
      const stored = apiKeyRecordSchema.parse(record);
      const reply = await call("createApiKey", () =>
        scripts.createApiKey.exec(
          [key.keys(stored.userId), key.apiKey(stored.hash)],
          [
            stored.id,
            JSON.stringify(stored),
            String(maxActive),
            stored.userId,
            stored.start,
            stored.name,
            stored.createdAt,
          ],
        ),
      );
      return integer.parse(reply) === 1;
    },

    async listApiKeys(userId) {
      const lists = redis.pipeline();
      lists.hgetall(key.keys(userId));
      lists.hgetall(key.revokedKeys(userId));
      const [activeHash, revokedHash] = z
        .tuple([flatHash.nullable(), flatHash.nullable()])
        .parse(await call("listApiKeys", () => lists.exec()));
      const revoked = Object.values(revokedHash ?? {}).map((json): ApiKeyRecord => {
        // The revoke script appended the key's last use, which lived on its (now deleted) hash index.
        const { lastUsedMs, ...record } = revokedApiKeySchema.parse(JSON.parse(json));
        return lastUsedMs === undefined ? record : { ...record, lastUsedAt: new Date(lastUsedMs).toISOString() };
      });
      const stored = Object.values(activeHash ?? {}).map((json) => apiKeyRecordSchema.parse(JSON.parse(json)));
      if (stored.length === 0) return revoked;
      // lastUsed lives on the hash index, where the hot path writes it.
      const pipeline = redis.pipeline();
      for (const record of stored) pipeline.hget(key.apiKey(record.hash), "lastUsedMs");
      const lastUsed = z.array(z.union([z.string(), z.number()]).nullable()).parse(await call("listApiKeys", () => pipeline.exec()));
      const active = stored.map((record, index) => {
        const ms = lastUsed[index];
        return { ...record, lastUsedAt: ms === null || ms === undefined ? null : new Date(Number(ms)).toISOString() };
      });
      return [...active, ...revoked];
    },

    async resolveApiKey(hash, now, touchIntervalMs) {
      const reply = await call("resolveApiKey", () =>
        scripts.resolveApiKey.exec([key.apiKey(hash)], [String(now.getTime()), String(touchIntervalMs)]),
      );
      const record = flatHash.nullable().parse(reply);
      if (!record) return null;
      return resolvedApiKeySchema.parse({
        keyId: record.keyId,
        userId: record.userId,
        name: record.name,
        start: record.start,
        lastUsedAt: record.lastUsedMs ? new Date(Number(record.lastUsedMs)).toISOString() : null,
      });
    },

    async revokeApiKey(userId, keyId, revokedAt) {
      const reply = await call("revokeApiKey", () => redis.hget(key.keys(userId), keyId));
      const json = z.string().nullable().parse(reply);
      if (json === null) return false;
      const record: ApiKeyRecord = { ...apiKeyRecordSchema.parse(JSON.parse(json)), revokedAt };
      const revoked = await call("revokeApiKey", () =>
        scripts.revokeApiKey.exec(
          [key.keys(userId), key.revokedKeys(userId), key.apiKey(record.hash)],
          [keyId, JSON.stringify(record)],
        ),
      );
      return integer.parse(revoked) === 1;
    },

    async getBalance(userId) {
      const reply = await call("getBalance", () => redis.get(key.credits(userId)));
      return reply === null ? 0 : integer.parse(reply);
    },

    async reserveCredits({ userId, requestId, pages, entry, day, deadline }) {
      const reply = await call("reserveCredits", () =>
        scripts.reserveCredits.exec(
          [key.credits(userId), key.ledger(userId), key.usage(userId), key.reservation(userId, requestId), key.openReservations()],
          [String(pages), fixed(entry), day, String(RESERVATION_TTL_MS), String(deadline), reservationMember(userId, requestId)],
        ),
      );
      const [ok, balance] = reservedTuple.parse(reply);
      return ok === -1 ? { ok: false, balance, duplicate: true } : { ok: ok === 1, balance };
    },

    async releaseCredits({ userId, requestId, pages, entry, day }) {
      const reply = await call("releaseCredits", () =>
        scripts.releaseCredits.exec(
          [key.credits(userId), key.ledger(userId), key.usage(userId), key.reservation(userId, requestId), key.openReservations()],
          [String(pages), fixed(entry), day, String(TOMBSTONE_TTL_MS), reservationMember(userId, requestId)],
        ),
      );
      const [refunded, balance] = reservedTuple.parse(reply);
      return { refunded, balance };
    },

    async listOverdueReservations(before, limit) {
      const reply = await call("listOverdueReservations", () =>
        redis.zrange(key.openReservations(), "-inf", before, { byScore: true, offset: 0, count: limit, withScores: true }),
      );
      const flat = z.array(z.union([z.string(), z.number()])).parse(reply);
      const overdue: Array<{ userId: string; requestId: string; deadline: number }> = [];
      for (let i = 0; i + 1 < flat.length; i += 2) {
        const parsed = parseReservationMember(String(flat[i]));
        if (parsed) overdue.push({ ...parsed, deadline: Number(flat[i + 1]) });
      }
      return overdue;
    },

    async countOverdueReservations(before) {
      return integer.parse(await call("countOverdueReservations", () => redis.zcount(key.openReservations(), "-inf", before)));
    },

    async grantCredits({ userId, credits, entry }) {
      const reply = await call("grantCredits", () =>
        scripts.grantCredits.exec([key.credits(userId), key.ledger(userId)], [String(credits), fixed(entry)]),
      );
      return { balance: integer.parse(reply) };
    },

    async listLedger(userId, { limit, cursor }) {
      const before = cursor ? Number.parseInt(cursor, 10) : -1;
      const reply = await call("listLedger", () =>
        scripts.ledgerPage.exec([key.ledger(userId)], [String(limit), String(Number.isFinite(before) ? before : -1)]),
      );
      const [first, ...entries] = z.tuple([integer], z.string()).parse(reply);
      return {
        entries: entries.reverse().map((json) => ledgerEntrySchema.parse(JSON.parse(json))),
        nextCursor: first > 0 ? String(first) : null,
      };
    },

    async getDailyUsage(userId, days) {
      if (days.length === 0) return [];
      const reply = await call("getDailyUsage", () => redis.hmget(key.usage(userId), ...days));
      // With automatic deserialization off, HMGET answers the raw RESP array.
      const values = z.array(z.union([z.string(), z.number()]).nullable()).parse(reply);
      return values.map((value) => Math.max(0, value === null ? 0 : Number(value)));
    },

    async claimIdempotency(scope, claim, leaseMs) {
      const reply = await call("claimIdempotency", () =>
        scripts.claimIdempotency.exec(
          [key.idempotency(scope)],
          [claim.fingerprint, claim.token, claim.createdAt, String(leaseMs)],
        ),
      );
      const parsed = claimReply.parse(reply);
      if (parsed[0] === "claimed") return { claimed: true };
      return { claimed: false, record: idempotencyRecordSchema.parse(parsed[1]) };
    },

    async completeIdempotency(scope, token, response, ttlMs) {
      const reply = await call("completeIdempotency", () =>
        scripts.completeIdempotency.exec([key.idempotency(scope)], [token, response, String(ttlMs)]),
      );
      return integer.parse(reply) === 1;
    },

    async releaseIdempotency(scope, token) {
      const reply = await call("releaseIdempotency", () =>
        scripts.releaseIdempotency.exec([key.idempotency(scope)], [token]),
      );
      return integer.parse(reply) === 1;
    },

    async getIdempotency(scope): Promise<IdempotencyRecord | null> {
      const reply = await call("getIdempotency", () => redis.hgetall(key.idempotency(scope)));
      const record = flatHash.nullable().parse(reply);
      return record && Object.keys(record).length > 0 ? idempotencyRecordSchema.parse(record) : null;
    },

    async getIdempotencyTtl(scope) {
      const ttl = integer.parse(await call("getIdempotencyTtl", () => redis.pttl(key.idempotency(scope))));
      return ttl < 0 ? null : ttl;
    },

    async rateLimit({ bucket, identifier, limit, windowMs, weight = 1 }): Promise<RateLimitResult> {
      const id = `${bucket}:${limit}:${windowMs}`;
      let limiter = limiters.get(id);
      if (!limiter) {
        limiter = new Ratelimit({
          redis,
          limiter: Ratelimit.fixedWindow(limit, `${windowMs} ms`),
          prefix: key.rateLimit(bucket),
          analytics: false,
          // No per-instance block cache: every instance (and the memory adapter) answers the same way.
          ephemeralCache: false,
          timeout: 3_000,
        });
        limiters.set(id, limiter);
      }
      const failOpen = (reason: string): RateLimitResult => {
        console.warn(`[store] rate limit ${bucket} not checked (${reason}); letting the request through`);
        return { success: true, limit, remaining: limit, reset: Date.now() + windowMs, failedOpen: true };
      };
      try {
        const result = await limiter.limit(identifier, { rate: weight });
        if (result.reason === "timeout") return failOpen("timeout");
        return { success: result.success, limit: result.limit, remaining: result.remaining, reset: result.reset };
      } catch (error) {
        // Rate limits fail open: a Redis hiccup should not turn into an outage of its own.
        return failOpen(error instanceof Error ? error.name : "error");
      }
    },

    async getBackoff(subject): Promise<BackoffState | null> {
      const record = flatHash.nullable().parse(await call("getBackoff", () => redis.hgetall(key.backoff(subject))));
      if (!record?.failures) return null;
      return { failures: integer.parse(record.failures), until: integer.parse(record.until ?? 0) };
    },

    async recordBackoffFailure(subject, now, policy): Promise<BackoffState> {
      const reply = await call("recordBackoffFailure", () =>
        scripts.recordBackoffFailure.exec(
          [key.backoff(subject)],
          [String(now), String(policy.free), String(policy.baseMs), String(policy.maxMs), String(policy.ttlMs)],
        ),
      );
      const [failures, until] = reservedTuple.parse(reply);
      return { failures, until };
    },

    async clearBackoff(subject) {
      await call("clearBackoff", () => redis.del(key.backoff(subject)));
    },

    async openMailbox(id, ttlMs) {
      await call("openMailbox", async () => {
        const pipeline = redis.multi();
        pipeline.set(key.mailboxOpen(id), "1", { px: ttlMs });
        pipeline.pexpire(key.mailbox(id), ttlMs);
        await pipeline.exec();
      });
    },

    async hasMailbox(id) {
      return integer.parse(await call("hasMailbox", () => redis.exists(key.mailboxOpen(id)))) === 1;
    },

    async pushMailbox(id, message, ttlMs) {
      const reply = await call("pushMailbox", () =>
        scripts.pushMailbox.exec(
          [key.mailboxOpen(id), key.mailbox(id)],
          [message, String(ttlMs), String(MAILBOX_MAX_MESSAGES)],
        ),
      );
      return integer.parse(reply) === 1;
    },

    async drainMailbox(id) {
      const reply = await call("drainMailbox", () => scripts.drainMailbox.exec([key.mailbox(id)], []));
      return stringList.parse(reply);
    },

    async closeMailbox(id) {
      await call("closeMailbox", () => redis.del(key.mailboxOpen(id), key.mailbox(id)));
    },
  };
}
