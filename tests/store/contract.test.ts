import { createHash, randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import {
  createMemoryStore,
  createRedisStore,
  createRestRedis,
  createTcpRedis,
  type ApiKeyRecord,
  type LedgerDraft,
  type NewJob,
  type OAuthGrantRecord,
  type OAuthTokenRecord,
  type Store,
  type UserRecord,
} from "@/lib/store";
import {
  TEST_REDIS_URL,
  assertRedisReachable,
  countKeysWithPrefix,
  createTestPrefix,
  deleteKeysWithPrefix,
  inOneWindow,
  readPttl,
  waitForWindowRoom,
} from "../support/redis";
import { startUpstashBridge, type UpstashBridge } from "../support/upstash-bridge";

interface Adapter {
  name: string;
  open(): Promise<{ store: Store; prefix?: string; bridge?: UpstashBridge }>;
}

/**
 * How long a record given a lifetime of a few hundred milliseconds (1.5 s for a pending source) may outlive it: asked
 * every 50 ms, so a test waits for the expiry itself rather than a fixed sleep past it.
 */
const EXPIRY = { timeout: 2_000, interval: 50 };

const adapters: Adapter[] = [
  { name: "memory", open: async () => ({ store: createMemoryStore() }) },
  {
    name: "redis over TCP",
    async open() {
      await assertRedisReachable();
      const prefix = createTestPrefix("store-tcp");
      const { redis, binary, close } = createTcpRedis(TEST_REDIS_URL);
      return { store: createRedisStore({ redis, binary, prefix, kind: "redis-tcp", onClose: close }), prefix };
    },
  },
  {
    name: "redis over Upstash REST (msw bridge onto the same Redis)",
    async open() {
      await assertRedisReachable();
      const prefix = createTestPrefix("store-rest");
      const bridge = startUpstashBridge({ redisUrl: TEST_REDIS_URL });
      const redis = createRestRedis({ url: bridge.url, token: bridge.token });
      return { store: createRedisStore({ redis, prefix, kind: "redis-rest" }), prefix, bridge };
    },
  },
];

const id = (kind: string) => `${kind}_${randomBytes(8).toString("hex")}`;
const now = () => new Date().toISOString();
const draft = (reason: LedgerDraft["reason"], extra: Partial<LedgerDraft> = {}): LedgerDraft => ({
  id: id("led"),
  at: now(),
  reason,
  ...extra,
});
const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");
const today = () => new Date().toISOString().slice(0, 10);

describe.each(adapters)("Store contract: $name", (adapter) => {
  let store: Store;
  let prefix: string | undefined;
  let bridge: UpstashBridge | undefined;

  beforeAll(async () => {
    ({ store, prefix, bridge } = await adapter.open());
  });

  afterAll(async () => {
    await store?.close();
    await bridge?.close();
    if (prefix) {
      await deleteKeysWithPrefix(prefix);
      expect(await countKeysWithPrefix(prefix)).toBe(0);
    }
  });

  async function newUser(signupCredits = 0): Promise<UserRecord> {
    const user: UserRecord = {
      id: id("usr"),
      email: `${id("e")}@example.com`,
      passwordHash: "scrypt$test",
      createdAt: now(),
    };
    expect(await store.accounts.createUser({ user, signupCredits, signupEntry: draft("signup") })).toBe(true);
    return user;
  }

  function newKey(userId: string, name = "test key"): { key: string; record: ApiKeyRecord } {
    const key = `ocr_${randomBytes(32).toString("base64url")}`;
    return {
      key,
      record: {
        id: id("key"),
        userId,
        name,
        start: key.slice(0, 12),
        hash: sha256(key),
        createdAt: now(),
        lastUsedAt: null,
        revokedAt: null,
      },
    };
  }

  /**
   * That the idempotency record under `scope` lives between `minMs` and `maxMs` from now. The ports have no TTL
   * getter: on Redis the key's PTTL is read directly; in memory the clock is moved (fake `Date`) and a probe claim
   * must see the record at `minMs` and find it gone past `maxMs` (the probe's claim is then released).
   */
  async function expectIdempotencyLifetime(scope: string, minMs: number, maxMs: number): Promise<void> {
    if (prefix) {
      const ttl = await readPttl(`${prefix}idem:${scope}`);
      expect(ttl).toBeGreaterThan(minMs);
      expect(ttl).toBeLessThanOrEqual(maxMs);
      return;
    }
    const start = Date.now();
    vi.useFakeTimers({ toFake: ["Date"], now: start });
    try {
      const probe = { fingerprint: "probe", token: "probe", createdAt: now() };
      vi.setSystemTime(start + minMs);
      expect((await store.idempotency.claimIdempotency(scope, probe, 1_000)).claimed).toBe(false);
      vi.setSystemTime(start + maxMs + 1);
      expect((await store.idempotency.claimIdempotency(scope, probe, 1_000)).claimed).toBe(true);
      expect(await store.idempotency.releaseIdempotency(scope, "probe")).toBe(true);
    } finally {
      vi.useRealTimers();
    }
  }

  it("answers ping", async () => {
    await expect(store.ping()).resolves.toBeUndefined();
  });

  describe("users", () => {
    it("creates a user with its e-mail index, signup credits and a signup ledger entry", async () => {
      const user = await newUser(25);
      expect(await store.accounts.getUser(user.id)).toEqual(user);
      expect(await store.accounts.getUserIdByEmail(user.email)).toBe(user.id);
      expect(await store.credits.getBalance(user.id)).toBe(25);
      const { entries } = await store.credits.listLedger(user.id, { limit: 10 });
      expect(entries).toEqual([expect.objectContaining({ reason: "signup", delta: 25, balanceAfter: 25 })]);
    });

    it("refuses a second user with the same e-mail and writes nothing", async () => {
      const user = await newUser(10);
      const twin: UserRecord = { ...user, id: id("usr") };
      expect(await store.accounts.createUser({ user: twin, signupCredits: 10, signupEntry: draft("signup") })).toBe(
        false,
      );
      expect(await store.accounts.getUser(twin.id)).toBeNull();
      expect(await store.credits.getBalance(twin.id)).toBe(0);
      expect(await store.accounts.getUserIdByEmail(user.email)).toBe(user.id);
    });

    it("returns null / zero for unknown users", async () => {
      expect(await store.accounts.getUser("usr_missing")).toBeNull();
      expect(await store.accounts.getUserIdByEmail("nobody@example.com")).toBeNull();
      expect(await store.credits.getBalance("usr_missing")).toBe(0);
      expect(await store.credits.listLedger("usr_missing", { limit: 5 })).toEqual({ entries: [], nextCursor: null });
    });
  });

  describe("sessions", () => {
    it("stores, reads and deletes a session", async () => {
      const session = { userId: "usr_a", createdAt: now(), expiresAt: new Date(Date.now() + 60_000).toISOString() };
      const key = sha256(id("s"));
      await store.accounts.createSession(key, session, 60_000);
      expect(await store.accounts.getSession(key)).toEqual(session);
      await store.accounts.deleteSession(key);
      expect(await store.accounts.getSession(key)).toBeNull();
    });

    it("expires a session after its TTL", async () => {
      const key = sha256(id("s"));
      await store.accounts.createSession(key, { userId: "usr_a", createdAt: now(), expiresAt: now() }, 150);
      expect(await store.accounts.getSession(key)).not.toBeNull();
      await expect.poll(() => store.accounts.getSession(key), EXPIRY).toBeNull();
    });
  });

  describe("OAuth", () => {
    const resource = "https://ocr.example.com/api/mcp";
    const grantOf = (userId: string, clientId: string, scopes = ["documents:read"]): OAuthGrantRecord => ({
      id: id("grt"),
      userId,
      clientId,
      clientName: "Claude",
      scopes,
      resource,
      createdAt: now(),
      lastUsedAt: null,
    });
    const tokenOf = (grant: OAuthGrantRecord, lifetimeMs = 3_600_000): OAuthTokenRecord => ({
      grantId: grant.id,
      userId: grant.userId,
      clientId: grant.clientId,
      scopes: grant.scopes,
      resource,
      expiresAt: Date.now() + lifetimeMs,
    });

    it("keeps a client; an unused one expires, a kept one does not", async () => {
      const client = {
        clientId: id("ocl"),
        kind: "registered" as const,
        name: "Cursor",
        redirectUris: ["http://127.0.0.1:5173/callback"],
        clientUri: null,
        createdAt: now(),
      };
      await store.oauth.saveClient(client, 60_000);
      expect(await store.oauth.getClient(client.clientId)).toEqual(client);
      await store.oauth.keepClient(client.clientId);
      if (prefix) expect(await readPttl(`${prefix}oauth-client:${sha256(client.clientId)}`)).toBeNull();
      expect(await store.oauth.getClient(client.clientId)).toEqual(client);
      const cached = {
        ...client,
        clientId: "https://client.example/oauth/metadata.json",
        kind: "metadata-document" as const,
      };
      await store.oauth.saveClient(cached, 60_000);
      expect(await store.oauth.getClient(cached.clientId)).toEqual(cached);
      // It expires with its TTL: on Redis the key's PTTL says so; in memory the clock is moved past it.
      if (prefix) {
        const ttl = await readPttl(`${prefix}oauth-client:${sha256(cached.clientId)}`);
        expect(ttl).toBeGreaterThan(0);
        expect(ttl).toBeLessThanOrEqual(60_000);
      } else {
        vi.useFakeTimers({ toFake: ["Date"], now: Date.now() + 60_001 });
        try {
          expect(await store.oauth.getClient(cached.clientId)).toBeNull();
        } finally {
          vi.useRealTimers();
        }
      }
      expect(await store.oauth.getClient("ocl_unknown")).toBeNull();
    });

    it("a code is found while unused, consumed once, then known as reused with the grant it led to", async () => {
      const user = await newUser();
      const hash = sha256(id("oac"));
      const code = {
        clientId: "ocl_x",
        userId: user.id,
        redirectUri: "http://127.0.0.1/cb",
        codeChallenge: "abc",
        scopes: ["documents:read"],
        resource,
        expiresAt: Date.now() + 60_000,
      };
      await store.oauth.saveCode(hash, code, 60_000);
      expect(await store.oauth.findCode(hash)).toEqual({ record: code });
      const consumed = await Promise.all([
        store.oauth.consumeCode(hash, 60_000),
        store.oauth.consumeCode(hash, 60_000),
      ]);
      expect(consumed.sort()).toEqual([false, true]);
      expect(await store.oauth.findCode(hash)).toEqual({ reused: null });
      await store.oauth.markCodeRedeemed(hash, { userId: user.id, grantId: "grt_1" });
      expect(await store.oauth.findCode(hash)).toEqual({ reused: { userId: user.id, grantId: "grt_1" } });
      expect(await store.oauth.findCode(sha256("unknown"))).toBeNull();
      // Marking a code that was never used creates nothing.
      await store.oauth.markCodeRedeemed(sha256("never"), { userId: user.id, grantId: "grt_1" });
      expect(await store.oauth.findCode(sha256("never"))).toBeNull();
    });

    it("one grant per account and client: a second authorization updates it, keeping its id", async () => {
      const user = await newUser();
      const first = await store.oauth.upsertGrant(grantOf(user.id, "ocl_a"));
      const again = await store.oauth.upsertGrant({ ...grantOf(user.id, "ocl_a", ["documents:read", "jobs:manage"]) });
      expect(again.id).toBe(first.id);
      expect(again.scopes).toEqual(["documents:read", "jobs:manage"]);
      const other = await store.oauth.upsertGrant(grantOf(user.id, "ocl_b"));
      expect(other.id).not.toBe(first.id);
      const listed = await store.oauth.listGrants(user.id);
      expect(listed.map((grant) => grant.id).sort()).toEqual([first.id, other.id].sort());
      expect(await store.oauth.listGrants((await newUser()).id)).toEqual([]);
    });

    it("an access token resolves while its grant lives and records the grant's use once per interval", async () => {
      const user = await newUser();
      const grant = await store.oauth.upsertGrant(grantOf(user.id, "ocl_c"));
      const hash = sha256(id("oat"));
      const token = tokenOf(grant);
      await store.oauth.saveAccessToken(hash, token, 3_600_000);
      const t0 = Date.now();
      expect(await store.oauth.resolveAccessToken(hash, t0, 60_000)).toEqual(token);
      const used = (await store.oauth.listGrants(user.id))[0]?.lastUsedAt;
      expect(used).toBe(new Date(t0).toISOString());
      await store.oauth.resolveAccessToken(hash, t0 + 1_000, 60_000);
      expect((await store.oauth.listGrants(user.id))[0]?.lastUsedAt).toBe(used);
      // Past its expiry it no longer resolves, whatever its key's TTL.
      expect(await store.oauth.resolveAccessToken(hash, token.expiresAt, 60_000)).toBeNull();
      expect(await store.oauth.isGrantActive(user.id, grant.id)).toBe(true);

      expect(await store.oauth.revokeGrant(user.id, grant.id)).toBe(true);
      expect(await store.oauth.revokeGrant(user.id, grant.id)).toBe(false);
      expect(await store.oauth.isGrantActive(user.id, grant.id)).toBe(false);
      expect(await store.oauth.resolveAccessToken(hash, t0, 60_000)).toBeNull();
      expect(await store.oauth.listGrants(user.id)).toEqual([]);
      // A new authorization after a revoke is a new grant: the old tokens stay dead.
      const renewed = await store.oauth.upsertGrant(grantOf(user.id, "ocl_c"));
      expect(renewed.id).not.toBe(grant.id);
      expect(await store.oauth.resolveAccessToken(hash, t0, 60_000)).toBeNull();

      const deleted = sha256(id("oat"));
      await store.oauth.saveAccessToken(deleted, tokenOf(renewed), 3_600_000);
      await store.oauth.deleteAccessToken(deleted);
      expect(await store.oauth.resolveAccessToken(deleted, Date.now(), 60_000)).toBeNull();
      if (prefix) {
        const ttl = await readPttl(`${prefix}oauth-token:${hash}`);
        expect(ttl).toBeGreaterThan(3_500_000);
      }
    });

    it("a refresh token is used once; afterwards it is known as reused, naming its grant", async () => {
      const user = await newUser();
      const grant = await store.oauth.upsertGrant(grantOf(user.id, "ocl_d"));
      const hash = sha256(id("ort"));
      const token = tokenOf(grant);
      await store.oauth.saveRefreshToken(hash, token, 3_600_000);
      expect(await store.oauth.findRefreshToken(hash)).toEqual({ record: token });
      const consumed = await Promise.all([
        store.oauth.consumeRefreshToken(hash, 60_000),
        store.oauth.consumeRefreshToken(hash, 60_000),
      ]);
      expect(consumed.sort()).toEqual([false, true]);
      expect(await store.oauth.findRefreshToken(hash)).toEqual({ reused: { userId: user.id, grantId: grant.id } });
      expect(await store.oauth.findRefreshToken(sha256("unknown"))).toBeNull();
    });
  });

  describe("API keys", () => {
    it("resolves a key by its hash, lists it and records its use at most once per interval", async () => {
      const user = await newUser();
      const { record } = newKey(user.id, "laptop");
      expect(await store.keys.createApiKey(record, 50)).toBe(true);

      const first = await store.keys.resolveApiKey(record.hash, new Date(), 60_000);
      expect(first).toEqual({
        keyId: record.id,
        userId: user.id,
        name: "laptop",
        start: record.start,
        lastUsedAt: null,
      });
      const used = (await store.keys.listApiKeys(user.id))[0]?.lastUsedAt;
      expect(used).toEqual(expect.any(String));

      // Within the interval the use is not written again.
      const second = await store.keys.resolveApiKey(record.hash, new Date(Date.now() + 1_000), 60_000);
      expect(second?.lastUsedAt).toBe(used);
      expect((await store.keys.listApiKeys(user.id))[0]?.lastUsedAt).toBe(used);

      // After it, it is.
      const later = new Date(Date.now() + 120_000);
      await store.keys.resolveApiKey(record.hash, later, 60_000);
      expect((await store.keys.listApiKeys(user.id))[0]?.lastUsedAt).toBe(later.toISOString());

      expect(await store.keys.listApiKeys(user.id)).toEqual([{ ...record, lastUsedAt: later.toISOString() }]);
    });

    it("does not resolve an unknown key", async () => {
      expect(await store.keys.resolveApiKey(sha256("ocr_unknown"), new Date(), 60_000)).toBeNull();
    });

    it("stops resolving a revoked key at once and keeps it listed, after the active ones, with revokedAt and its last use", async () => {
      const user = await newUser();
      const keep = newKey(user.id, "keep").record;
      const revoke = newKey(user.id, "revoke").record;
      const never = newKey(user.id, "never used").record;
      await store.keys.createApiKey(revoke, 50);
      await store.keys.createApiKey(keep, 50);
      await store.keys.createApiKey(never, 50);
      const usedAt = new Date(Date.now() - 5_000);
      expect(await store.keys.resolveApiKey(revoke.hash, usedAt, 60_000)).not.toBeNull();

      const revokedAt = now();
      expect(await store.keys.revokeApiKey(user.id, revoke.id, revokedAt)).toBe(true);
      expect(await store.keys.revokeApiKey(user.id, never.id, revokedAt)).toBe(true);
      expect(await store.keys.resolveApiKey(revoke.hash, new Date(), 60_000)).toBeNull();
      expect(await store.keys.resolveApiKey(never.hash, new Date(), 60_000)).toBeNull();
      const listed = await store.keys.listApiKeys(user.id);
      expect(listed[0]).toEqual(keep);
      expect(listed.slice(1).sort((a, b) => a.name.localeCompare(b.name))).toEqual([
        { ...never, revokedAt },
        { ...revoke, lastUsedAt: usedAt.toISOString(), revokedAt },
      ]);
      // Revoked once and for all: a second revoke finds no active key, and the record is not touched.
      expect(await store.keys.revokeApiKey(user.id, revoke.id, now())).toBe(false);
      expect((await store.keys.listApiKeys(user.id)).find((key) => key.id === revoke.id)?.revokedAt).toBe(revokedAt);
      expect(await store.keys.resolveApiKey(revoke.hash, new Date(), 60_000)).toBeNull();
      // Another user cannot revoke someone else's key.
      expect(await store.keys.revokeApiKey("usr_other", keep.id, now())).toBe(false);
      expect(await store.keys.resolveApiKey(keep.hash, new Date(), 60_000)).not.toBeNull();
    });

    it("refuses more than the maximum of active keys; revoking frees a slot", async () => {
      const user = await newUser();
      const records = Array.from({ length: 3 }, () => newKey(user.id).record);
      for (const record of records) expect(await store.keys.createApiKey(record, 3)).toBe(true);
      const extra = newKey(user.id).record;
      expect(await store.keys.createApiKey(extra, 3)).toBe(false);
      expect(await store.keys.resolveApiKey(extra.hash, new Date(), 60_000)).toBeNull();
      await store.keys.revokeApiKey(user.id, records[0]?.id ?? "", now());
      expect(await store.keys.createApiKey(extra, 3)).toBe(true);
      // Revoked keys stay listed but do not count: 3 active (the maximum) and 1 revoked.
      const listed = await store.keys.listApiKeys(user.id);
      expect(listed.filter((key) => key.revokedAt === null)).toHaveLength(3);
      expect(listed.filter((key) => key.revokedAt !== null).map((key) => key.id)).toEqual([records[0]?.id]);
      expect(await store.keys.createApiKey(newKey(user.id).record, 3)).toBe(false);
    });

    it("says whether a key is an active key of its user (open streams check it while they run)", async () => {
      const user = await newUser();
      const { record } = newKey(user.id);
      expect(await store.keys.isApiKeyActive(user.id, record.id)).toBe(false);
      await store.keys.createApiKey(record, 50);
      expect(await store.keys.isApiKeyActive(user.id, record.id)).toBe(true);
      expect(await store.keys.isApiKeyActive("usr_other", record.id)).toBe(false);
      await store.keys.revokeApiKey(user.id, record.id, now());
      expect(await store.keys.isApiKeyActive(user.id, record.id)).toBe(false);
    });
  });

  describe("credits", () => {
    /**
     * A reservation as the service makes one: a job created with its pages (`createJob`; a read in its request or in
     * the background), its id `requestId`, answered in the shape of the reservation it replaced.
     */
    const reserveAsJob = async (input: {
      userId: string;
      requestId: string;
      pages: number;
      entry: LedgerDraft;
      day: string;
      deadline: number;
    }): Promise<{ ok: boolean; balance: number; duplicate?: boolean }> => {
      const created = await store.jobs.createJob(
        {
          id: input.requestId,
          userId: input.userId,
          requestId: input.requestId,
          createdAt: Date.now(),
          deadline: input.deadline,
          expiresAt: input.deadline + 3_600_000,
          fileType: "png",
          inputSource: "base64",
          bytes: 1,
          sourceChunks: 0,
          pageCount: input.pages,
          selection: `1-${input.pages}`,
          pagesTotal: input.pages,
          creditsReserved: input.pages,
          format: "text",
          language: "auto",
        },
        { entry: input.entry, day: input.day, maxQueuedPages: Number.MAX_SAFE_INTEGER, ttlMs: 3_600_000 },
      );
      if (created.ok) return { ok: true, balance: created.balance };
      if (created.reason === "insufficient_credits") return { ok: false, balance: created.balance };
      return { ok: false, balance: await store.credits.getBalance(input.userId), duplicate: true };
    };

    it("reserves, never below zero, and writes nothing when the balance is too low", async () => {
      const user = await newUser(5);
      const reserve = (pages: number) =>
        reserveAsJob({
          userId: user.id,
          requestId: id("req"),
          pages,
          entry: draft("ocr", { keyId: "key_x" }),
          day: today(),
          deadline: Date.now() + 60_000,
        });
      expect(await reserve(3)).toEqual({ ok: true, balance: 2 });
      expect(await reserve(3)).toEqual({ ok: false, balance: 2 });
      expect(await store.credits.getBalance(user.id)).toBe(2);
      const { entries } = await store.credits.listLedger(user.id, { limit: 10 });
      expect(entries.map((entry) => [entry.reason, entry.delta, entry.balanceAfter, entry.pages])).toEqual([
        ["ocr", -3, 2, 3],
        ["signup", 5, 5, undefined],
      ]);
      expect(entries[0]?.keyId).toBe("key_x");
    });

    it("settles the unused part of a reservation once, and refunds no more than was reserved", async () => {
      const user = await newUser(10);
      const requestId = id("req");
      await reserveAsJob({
        userId: user.id,
        requestId,
        pages: 4,
        entry: draft("ocr", { requestId }),
        day: today(),
        deadline: Date.now() + 60_000,
      });
      const release = (pages: number) =>
        store.credits.releaseCredits({
          userId: user.id,
          requestId,
          pages,
          entry: draft("refund", { requestId }),
          day: today(),
        });
      expect(await release(1)).toEqual({ refunded: 1, balance: 7 });
      // The reservation is closed: a second settle or refund gives nothing back.
      expect(await release(3)).toEqual({ refunded: 0, balance: 7 });

      const other = id("req");
      await reserveAsJob({
        userId: user.id,
        requestId: other,
        pages: 2,
        entry: draft("ocr", { requestId: other }),
        day: today(),
        deadline: Date.now() + 60_000,
      });
      const refund = await store.credits.releaseCredits({
        userId: user.id,
        requestId: other,
        pages: 99,
        entry: draft("refund", { requestId: other }),
        day: today(),
      });
      expect(refund).toEqual({ refunded: 2, balance: 7 });
      const { entries } = await store.credits.listLedger(user.id, { limit: 10 });
      expect(entries.map((entry) => [entry.reason, entry.delta, entry.pages])).toEqual([
        ["refund", 2, 2],
        ["ocr", -2, 2],
        ["refund", 1, 1],
        ["ocr", -4, 4],
        ["signup", 10, undefined],
      ]);
      expect(await store.credits.getDailyUsage(user.id, [today(), "2000-01-01"])).toEqual([3, 0]);
    });

    it("records the request's format (and its key and request id) on the ocr entry and its refund", async () => {
      const user = await newUser(10);
      const requestId = id("req");
      const refs = { requestId, keyId: "key_fmt", format: "markdown" } as const;
      await reserveAsJob({
        userId: user.id,
        requestId,
        pages: 3,
        entry: draft("ocr", refs),
        day: today(),
        deadline: Date.now() + 60_000,
      });
      await store.credits.releaseCredits({
        userId: user.id,
        requestId,
        pages: 1,
        entry: draft("refund", refs),
        day: today(),
      });
      await store.credits.grantCredits({ userId: user.id, credits: 1, entry: draft("grant") });
      const { entries } = await store.credits.listLedger(user.id, { limit: 10 });
      expect(entries.map((entry) => [entry.reason, entry.format, entry.requestId, entry.keyId, entry.pages])).toEqual([
        ["grant", undefined, undefined, undefined, undefined],
        ["refund", "markdown", requestId, "key_fmt", 1],
        ["ocr", "markdown", requestId, "key_fmt", 3],
        ["signup", undefined, undefined, undefined, undefined],
      ]);
    });

    it("grants credits with a ledger entry", async () => {
      const user = await newUser();
      expect(await store.credits.grantCredits({ userId: user.id, credits: 40, entry: draft("grant") })).toEqual({
        balance: 40,
      });
      expect((await store.credits.listLedger(user.id, { limit: 1 })).entries[0]).toMatchObject({
        reason: "grant",
        delta: 40,
        balanceAfter: 40,
      });
    });

    it("pages the ledger newest first with a cursor that is stable under new entries", async () => {
      const user = await newUser();
      for (let i = 1; i <= 7; i++)
        await store.credits.grantCredits({ userId: user.id, credits: i, entry: draft("grant") });
      const first = await store.credits.listLedger(user.id, { limit: 3 });
      expect(first.entries.map((entry) => entry.delta)).toEqual([7, 6, 5]);
      await store.credits.grantCredits({ userId: user.id, credits: 100, entry: draft("grant") });
      const second = await store.credits.listLedger(user.id, { limit: 3, cursor: first.nextCursor });
      expect(second.entries.map((entry) => entry.delta)).toEqual([4, 3, 2]);
      const third = await store.credits.listLedger(user.id, { limit: 3, cursor: second.nextCursor });
      expect(third.entries.map((entry) => entry.delta)).toEqual([1]);
      expect(third.nextCursor).toBeNull();
    });

    it("indexes open reservations by deadline; release takes them out; the ledger always balances", async () => {
      const user = await newUser(20);
      const base = Date.now() - 1_000_000; // far in the past: other tests' reservations are all later
      const requests = Array.from({ length: 3 }, () => id("req"));
      for (const [i, requestId] of requests.entries()) {
        const result = await reserveAsJob({
          userId: user.id,
          requestId,
          pages: i + 1,
          entry: draft("ocr", { requestId }),
          day: today(),
          deadline: base + i * 1000,
        });
        expect(result).toEqual({ ok: true, balance: 20 - (i === 0 ? 1 : i === 1 ? 3 : 6) });
      }
      expect(await store.credits.countOverdueReservations(base + 1500)).toBe(2);
      expect(await store.credits.listOverdueReservations(base + 1500, 10)).toEqual([
        { userId: user.id, requestId: requests[0], deadline: base },
        { userId: user.id, requestId: requests[1], deadline: base + 1000 },
      ]);
      expect(await store.credits.listOverdueReservations(base + 5000, 1)).toHaveLength(1);

      const release = (requestId: string, pages: number, reason: LedgerDraft["reason"] = "refund") =>
        store.credits.releaseCredits({
          userId: user.id,
          requestId,
          pages,
          entry: draft(reason, { requestId }),
          day: today(),
        });
      expect(await release(requests[1]!, 0)).toEqual({ refunded: 0, balance: 14 }); // settled, all pages used
      expect(await store.credits.listOverdueReservations(base + 5000, 10)).toEqual([
        { userId: user.id, requestId: requests[0], deadline: base },
        { userId: user.id, requestId: requests[2], deadline: base + 2000 },
      ]);
      expect(await release(requests[0]!, 100, "expired")).toEqual({ refunded: 1, balance: 15 });
      expect(await release(requests[2]!, 100)).toEqual({ refunded: 3, balance: 18 });
      expect(await store.credits.countOverdueReservations(base + 5000)).toBe(0);

      const { entries } = await store.credits.listLedger(user.id, { limit: 20 });
      expect(entries.slice(0, 2).map((entry) => [entry.reason, entry.delta, entry.requestId])).toEqual([
        ["refund", 3, requests[2]],
        ["expired", 1, requests[0]],
      ]);
      expect(entries.reduce((sum, entry) => sum + entry.delta, 0)).toBe(await store.credits.getBalance(user.id));
    });

    it("a request id reserves once: a second reserve, or one arriving after its release (a lost reply), charges nothing", async () => {
      const user = await newUser(10);
      const reserve = (requestId: string) =>
        reserveAsJob({
          userId: user.id,
          requestId,
          pages: 2,
          entry: draft("ocr", { requestId }),
          day: today(),
          deadline: Date.now() + 60_000,
        });
      const twice = id("req");
      expect(await reserve(twice)).toEqual({ ok: true, balance: 8 });
      expect(await reserve(twice)).toEqual({ ok: false, balance: 8, duplicate: true });

      // Reconciliation first (the reserve's reply was lost, so its outcome is unknown), the reserve itself after it.
      const late = id("req");
      expect(
        await store.credits.releaseCredits({
          userId: user.id,
          requestId: late,
          pages: 2,
          entry: draft("refund", { requestId: late }),
          day: today(),
        }),
      ).toEqual({ refunded: 0, balance: 8 });
      expect(await reserve(late)).toEqual({ ok: false, balance: 8, duplicate: true });

      expect(await store.credits.getBalance(user.id)).toBe(8);
      const { entries } = await store.credits.listLedger(user.id, { limit: 10 });
      expect(entries.map((entry) => entry.reason)).toEqual(["ocr", "signup"]);
      expect(await store.credits.countOverdueReservations(Date.now() + 120_000)).toBeGreaterThanOrEqual(1);
      await store.credits.releaseCredits({
        userId: user.id,
        requestId: twice,
        pages: 0,
        entry: draft("refund"),
        day: today(),
      });
    });

    it("concurrent releases of one reservation (two sweeps) give it back exactly once", async () => {
      const user = await newUser(30);
      const requests = Array.from({ length: 20 }, () => id("req"));
      for (const requestId of requests) {
        await reserveAsJob({
          userId: user.id,
          requestId,
          pages: 1,
          entry: draft("ocr", { requestId }),
          day: today(),
          deadline: Date.now() - 1,
        });
      }
      expect(await store.credits.getBalance(user.id)).toBe(10);
      const sweep = () =>
        Promise.all(
          requests.map((requestId) =>
            store.credits.releaseCredits({
              userId: user.id,
              requestId,
              pages: 100,
              entry: draft("expired", { requestId }),
              day: today(),
            }),
          ),
        );
      const [first, second] = await Promise.all([sweep(), sweep()]);
      const refunded = [...first!, ...second!].reduce((sum, result) => sum + result.refunded, 0);
      expect(refunded).toBe(20);
      expect(await store.credits.getBalance(user.id)).toBe(30);
      const { entries } = await store.credits.listLedger(user.id, { limit: 100 });
      expect(entries.filter((entry) => entry.reason === "expired")).toHaveLength(20);
      expect(entries.reduce((sum, entry) => sum + entry.delta, 0)).toBe(30);
    });

    it("race: 100 concurrent reserves of 1 credit on a balance of 10 → exactly 10 succeed", async () => {
      const user = await newUser(10);
      const results = await Promise.all(
        Array.from({ length: 100 }, () => {
          const requestId = id("req");
          return reserveAsJob({
            userId: user.id,
            requestId,
            pages: 1,
            entry: draft("ocr", { requestId }),
            day: today(),
            deadline: Date.now() + 60_000,
          });
        }),
      );
      expect(results.filter((result) => result.ok)).toHaveLength(10);
      expect(results.every((result) => result.balance >= 0)).toBe(true);
      expect(await store.credits.getBalance(user.id)).toBe(0);

      const { entries, nextCursor } = await store.credits.listLedger(user.id, { limit: 100 });
      expect(nextCursor).toBeNull();
      expect(entries).toHaveLength(11); // signup + 10 charges
      expect(entries.reduce((sum, entry) => sum + entry.delta, 0)).toBe(0);
      // Each entry's balanceAfter follows from the one before it (oldest first).
      const chronological = [...entries].reverse();
      chronological.forEach((entry, index) => {
        const before = index === 0 ? 0 : (chronological[index - 1]?.balanceAfter ?? NaN);
        expect(entry.balanceAfter).toBe(before + entry.delta);
      });
      expect(await store.credits.getDailyUsage(user.id, [today()])).toEqual([10]);
    });
  });

  describe("idempotency", () => {
    const DAY = 24 * 60 * 60 * 1000;

    it("lets the first claim win; concurrent claims see it in progress", async () => {
      const scope = `usr_a:${id("idem")}`;
      const claims = await Promise.all(
        Array.from({ length: 10 }, (_, index) =>
          store.idempotency.claimIdempotency(
            scope,
            { fingerprint: "fp-1", token: `token-${index}`, createdAt: now() },
            60_000,
          ),
        ),
      );
      expect(claims.filter((claim) => claim.claimed)).toHaveLength(1);
      for (const claim of claims) {
        if (!claim.claimed) expect(claim.record).toMatchObject({ state: "in-progress", fingerprint: "fp-1" });
      }
      await expectIdempotencyLifetime(scope, 50_000, 60_000);
    });

    it("stores the response when done, replays it with a 24 h TTL, and only the owner completes", async () => {
      const scope = `usr_a:${id("idem")}`;
      expect(
        await store.idempotency.claimIdempotency(scope, { fingerprint: "fp", token: "mine", createdAt: now() }, 60_000),
      ).toEqual({
        claimed: true,
      });
      expect(await store.idempotency.completeIdempotency(scope, "not-mine", "{}", DAY)).toBe(false);
      expect(await store.idempotency.completeIdempotency(scope, "mine", '{"status":200,"body":"ok"}', DAY)).toBe(true);
      const again = await store.idempotency.claimIdempotency(
        scope,
        { fingerprint: "fp", token: "retry", createdAt: now() },
        60_000,
      );
      expect(again).toEqual({
        claimed: false,
        record: expect.objectContaining({ state: "done", fingerprint: "fp", response: '{"status":200,"body":"ok"}' }),
      });
      // A done record cannot be released.
      expect(await store.idempotency.releaseIdempotency(scope, "mine")).toBe(false);
      await expectIdempotencyLifetime(scope, DAY - 60_000, DAY);
    });

    it("releases an in-progress claim so a retry can claim it again", async () => {
      const scope = `usr_a:${id("idem")}`;
      await store.idempotency.claimIdempotency(scope, { fingerprint: "fp", token: "t1", createdAt: now() }, 60_000);
      expect(await store.idempotency.releaseIdempotency(scope, "t2")).toBe(false);
      expect(await store.idempotency.releaseIdempotency(scope, "t1")).toBe(true);
      expect(
        (await store.idempotency.claimIdempotency(scope, { fingerprint: "fp", token: "t2", createdAt: now() }, 60_000))
          .claimed,
      ).toBe(true);
    });

    it("lets an abandoned claim expire after its lease", async () => {
      const scope = `usr_a:${id("idem")}`;
      await store.idempotency.claimIdempotency(scope, { fingerprint: "fp", token: "t1", createdAt: now() }, 150);
      // A refused claim changes nothing: asked again until the lease has run out.
      await expect
        .poll(
          async () =>
            (
              await store.idempotency.claimIdempotency(
                scope,
                { fingerprint: "fp", token: "t2", createdAt: now() },
                60_000,
              )
            ).claimed,
          EXPIRY,
        )
        .toBe(true);
    });
  });

  describe("rate limits", () => {
    it("allows N requests per window and rejects the next with the reset time", async () => {
      const identifier = id("key");
      const windowMs = 60_000;
      await waitForWindowRoom(windowMs, 5_000);
      const before = Date.now();
      const results = [];
      for (let i = 0; i < 6; i++)
        results.push(await store.limits.rateLimit({ bucket: "api", identifier, limit: 5, windowMs }));
      expect(results.map((result) => result.success)).toEqual([true, true, true, true, true, false]);
      expect(results.map((result) => result.remaining)).toEqual([4, 3, 2, 1, 0, 0]);
      const rejected = results[5];
      expect(rejected?.limit).toBe(5);
      expect(rejected?.failedOpen).toBeUndefined();
      expect(rejected?.reset).toBeGreaterThan(before);
      expect(rejected?.reset).toBeLessThanOrEqual(Date.now() + windowMs);
      // Other identifiers and buckets have their own counters.
      expect((await store.limits.rateLimit({ bucket: "api", identifier: id("key"), limit: 5, windowMs })).success).toBe(
        true,
      );
      expect((await store.limits.rateLimit({ bucket: "signin", identifier, limit: 5, windowMs })).success).toBe(true);
    });

    it("counts a weighted hit as that many requests (an MCP batch of tool calls); one that does not fit takes nothing", async () => {
      const windowMs = 60_000;
      await waitForWindowRoom(windowMs, 2_000);
      const identifier = id("key");
      expect(await store.limits.rateLimit({ bucket: "api", identifier, limit: 5, windowMs, weight: 3 })).toMatchObject({
        success: true,
        remaining: 2,
      });
      expect(await store.limits.rateLimit({ bucket: "api", identifier, limit: 5, windowMs, weight: 3 })).toMatchObject({
        success: false,
        remaining: 2,
      });
      // The refused hit left the window as it was: the 2 that were left are still there.
      expect(await store.limits.rateLimit({ bucket: "api", identifier, limit: 5, windowMs, weight: 2 })).toMatchObject({
        success: true,
        remaining: 0,
      });
      expect(await store.limits.rateLimit({ bucket: "api", identifier, limit: 5, windowMs })).toMatchObject({
        success: false,
        remaining: 0,
      });
      expect(
        await store.limits.rateLimit({ bucket: "api", identifier: id("key"), limit: 5, windowMs, weight: 5 }),
      ).toMatchObject({ success: true, remaining: 0 });
    });

    it("starts counting again in the next window", async () => {
      // Long enough for two calls to land in one window however busy the machine (at 400 ms they did not, at load 16).
      const windowMs = 3_000;
      const call = async (identifier: string) =>
        (await store.limits.rateLimit({ bucket: "api", identifier, limit: 1, windowMs })).success;
      // Two calls in one window (the windows are aligned to the epoch; a boundary between them: again, on a new key) …
      const { identifier, calls } = await inOneWindow(windowMs, async () => {
        const identifier = id("key");
        return { identifier, calls: [await call(identifier), await call(identifier)] };
      });
      expect(calls).toEqual([true, false]);
      // … and one just after the next boundary, waited for until then rather than for a whole window.
      await sleep(windowMs - (Date.now() % windowMs) + 5);
      expect(await call(identifier)).toBe(true);
    });
  });

  describe("slots", () => {
    it("gives at most `limit` slots of a group, lists their holders, and frees one on release", async () => {
      const group = id("sse");
      const take = (holder: string) => store.limits.acquireSlot({ group, holder, limit: 2, ttlMs: 60_000 });
      expect(await take("a")).toEqual({ acquired: true, holders: ["a"] });
      expect(await take("b")).toEqual({ acquired: true, holders: ["a", "b"] });
      expect(await take("c")).toEqual({ acquired: false, holders: ["a", "b"] });
      // A holder asking again keeps its slot (renewed), whatever the count.
      expect((await take("a")).acquired).toBe(true);
      await store.limits.releaseSlot(group, "a");
      await store.limits.releaseSlot(group, "never-held");
      expect(await take("c")).toEqual({ acquired: true, holders: ["b", "c"] });
      // Other groups count on their own.
      expect(
        (await store.limits.acquireSlot({ group: id("sse"), holder: "c", limit: 1, ttlMs: 60_000 })).acquired,
      ).toBe(true);
    });

    it("frees a slot its holder stops renewing (an instance that died); renewing keeps it", async () => {
      const group = id("sse");
      expect((await store.limits.acquireSlot({ group, holder: "dead", limit: 2, ttlMs: 300 })).acquired).toBe(true);
      expect((await store.limits.acquireSlot({ group, holder: "alive", limit: 2, ttlMs: 5_000 })).acquired).toBe(true);
      await store.limits.renewSlot({ group, holder: "alive", ttlMs: 60_000 });
      // A refused slot changes nothing: asked for until the dead holder's has run out.
      const taken = await vi.waitFor(async () => {
        const outcome = await store.limits.acquireSlot({ group, holder: "new", limit: 2, ttlMs: 60_000 });
        expect(outcome.acquired).toBe(true);
        return outcome;
      }, EXPIRY);
      expect(taken).toEqual({ acquired: true, holders: ["alive", "new"] });
      // A renewal after expiry takes the slot again.
      await store.limits.renewSlot({ group, holder: "late", ttlMs: 60_000 });
      expect((await store.limits.acquireSlot({ group, holder: "other", limit: 3, ttlMs: 60_000 })).acquired).toBe(
        false,
      );
      if (prefix) {
        // The group's key expires with its last slot.
        const ttl = await readPttl(`${prefix}slots:${group}`);
        expect(ttl).toBeGreaterThan(50_000);
        expect(ttl).toBeLessThanOrEqual(60_000);
      }
    });
  });

  describe("single-use ids", () => {
    it("claims an id once in its scope, concurrently too, until the record expires", async () => {
      const nonce = id("nonce");
      const claims = await Promise.all(
        Array.from({ length: 5 }, () => store.limits.claimOnce({ scope: "work", id: nonce, ttlMs: 300 })),
      );
      expect(claims.filter(Boolean)).toHaveLength(1);
      expect(await store.limits.claimOnce({ scope: "work", id: nonce, ttlMs: 300 })).toBe(false);
      // Scopes are apart.
      expect(await store.limits.claimOnce({ scope: "other", id: nonce, ttlMs: 300 })).toBe(true);
      if (prefix) {
        const ttl = await readPttl(`${prefix}once:work:${nonce}`);
        expect(ttl).toBeGreaterThan(0);
        expect(ttl).toBeLessThanOrEqual(300);
      }
      // A refused claim changes nothing: asked again until the first one's lifetime has run out.
      await expect.poll(() => store.limits.claimOnce({ scope: "work", id: nonce, ttlMs: 300 }), EXPIRY).toBe(true);
    });
  });

  describe("back-off", () => {
    const policy = { free: 2, baseMs: 1_000, maxMs: 5_000, ttlMs: 60_000 };

    it("counts failures atomically; waits start past the free ones, double, and stop at the maximum", async () => {
      const subject = id("backoff");
      expect(await store.limits.getBackoff(subject)).toBeNull();
      const now = 1_000_000;
      const states = [];
      for (let i = 0; i < 6; i++) states.push(await store.limits.recordBackoffFailure(subject, now, policy));
      expect(states).toEqual([
        { failures: 1, until: 0 },
        { failures: 2, until: 0 },
        { failures: 3, until: now + 1_000 },
        { failures: 4, until: now + 2_000 },
        { failures: 5, until: now + 4_000 },
        { failures: 6, until: now + 5_000 },
      ]);
      expect(await store.limits.getBackoff(subject)).toEqual({ failures: 6, until: now + 5_000 });
      // Concurrent failures all count.
      const other = id("backoff");
      await Promise.all(Array.from({ length: 10 }, () => store.limits.recordBackoffFailure(other, now, policy)));
      expect(await store.limits.getBackoff(other)).toMatchObject({ failures: 10 });
    });

    it("clears on success, and is forgotten after its TTL", async () => {
      const subject = id("backoff");
      await store.limits.recordBackoffFailure(subject, Date.now(), policy);
      await store.limits.clearBackoff(subject);
      expect(await store.limits.getBackoff(subject)).toBeNull();
      await store.limits.recordBackoffFailure(subject, Date.now(), { ...policy, ttlMs: 150 });
      expect(await store.limits.getBackoff(subject)).not.toBeNull();
      await expect.poll(() => store.limits.getBackoff(subject), EXPIRY).toBeNull();
    });
  });

  describe("mailbox", () => {
    it("refuses messages for a mailbox that is not open", async () => {
      expect(await store.mailbox.pushMailbox(id("mbx"), "lost", 60_000)).toBe(false);
    });

    it("drains messages in push order and empties the mailbox", async () => {
      const mailbox = id("mbx");
      await store.mailbox.openMailbox(mailbox, 60_000);
      const messages = ['{"jsonrpc":"2.0","id":1}', "123", "null", "ünïcødé ✓", '{"id":2}'];
      for (const message of messages) expect(await store.mailbox.pushMailbox(mailbox, message, 60_000)).toBe(true);
      expect(await store.mailbox.drainMailbox(mailbox)).toEqual(messages);
      expect(await store.mailbox.drainMailbox(mailbox)).toEqual([]);
      await store.mailbox.pushMailbox(mailbox, "later", 60_000);
      expect(await store.mailbox.drainMailbox(mailbox)).toEqual(["later"]);
      await store.mailbox.closeMailbox(mailbox);
      expect(await store.mailbox.pushMailbox(mailbox, "after close", 60_000)).toBe(false);
    });

    it("forgets a mailbox and its messages after the TTL", async () => {
      const mailbox = id("mbx");
      await store.mailbox.openMailbox(mailbox, 200);
      await store.mailbox.pushMailbox(mailbox, "stale", 200);
      await sleep(400);
      expect(await store.mailbox.drainMailbox(mailbox)).toEqual([]);
      expect(await store.mailbox.pushMailbox(mailbox, "late", 200)).toBe(false);
    });
  });

  describe("webhooks", () => {
    const attempt = (n: number, jobId?: string) => ({
      at: new Date(Date.UTC(2026, 10, 24, 9, 0, n)).toISOString(),
      eventId: "msg_test",
      type: jobId ? "job.succeeded" : "webhook.test",
      ...(jobId && { jobId }),
      url: "https://example.com/hook",
      attempt: n,
      status: n % 2 === 0 ? 200 : null,
      latencyMs: n,
      ok: n % 2 === 0,
      ...(n % 2 === 1 && { error: "no answer", retrying: true }),
    });

    it("an account starts with nothing; secrets are replaced whole (a rotation keeps the previous one), the default URL apart", async () => {
      const userId = id("usr");
      expect(await store.webhooks.getAccount(userId)).toEqual({});
      await store.webhooks.setDefaultUrl(userId, "https://example.com/a");
      await store.webhooks.setSecrets(userId, { secret: "whsec_one", secretCreatedAt: 1_000 });
      expect(await store.webhooks.getAccount(userId)).toEqual({
        secret: "whsec_one",
        secretCreatedAt: 1_000,
        defaultUrl: "https://example.com/a",
      });
      await store.webhooks.setSecrets(userId, {
        secret: "whsec_two",
        secretCreatedAt: 2_000,
        previousSecret: "whsec_one",
        previousUntil: 9_000,
      });
      expect(await store.webhooks.getAccount(userId)).toEqual({
        secret: "whsec_two",
        secretCreatedAt: 2_000,
        previousSecret: "whsec_one",
        previousUntil: 9_000,
        defaultUrl: "https://example.com/a",
      });
      await store.webhooks.setSecrets(userId, { secret: "whsec_three", secretCreatedAt: 3_000 });
      await store.webhooks.setDefaultUrl(userId, null);
      expect(await store.webhooks.getAccount(userId)).toEqual({ secret: "whsec_three", secretCreatedAt: 3_000 });
    });

    it("keeps the last 20 attempts per account and per job, newest first", async () => {
      const userId = id("usr");
      const jobId = id("job");
      expect(await store.webhooks.listAttempts(userId)).toEqual([]);
      for (let n = 1; n <= 25; n++) await store.webhooks.recordAttempt(userId, attempt(n, n > 20 ? undefined : jobId));
      const all = await store.webhooks.listAttempts(userId);
      expect(all.map((item) => item.attempt)).toEqual(Array.from({ length: 20 }, (_, i) => 25 - i));
      expect(all[0]).toEqual(attempt(25));
      const ofJob = await store.webhooks.listJobAttempts(jobId);
      expect(ofJob.map((item) => item.attempt)).toEqual(Array.from({ length: 20 }, (_, i) => 20 - i));
      expect(ofJob[0]).toEqual(attempt(20, jobId));
      expect(await store.webhooks.listJobAttempts(id("job"))).toEqual([]);
    });

    it("a receiver's failures: free ones, then pauses doubling to their cap, disabled after long failure; cleared whole", async () => {
      const userId = id("usr");
      const receiver = "https://hooks.example.com";
      const policy = { free: 2, pauseMs: 1_000, maxPauseMs: 3_000, disableAfterMs: 100_000, keepMs: 60_000, jitter: 1 };
      const fail = (now: number, error = "The receiver answered HTTP 500") =>
        store.webhooks.recordEndpointFailure(userId, { receiver, url: `${receiver}/a?n=${now}`, error, now, policy });
      expect(await store.webhooks.getEndpoint(userId, receiver)).toBeNull();
      expect(await store.webhooks.listEndpoints(userId)).toEqual([]);
      const t = 1_800_000_000_000;
      expect(await fail(t)).toEqual({
        receiver,
        url: `${receiver}/a?n=${t}`,
        failures: 1,
        failingSince: t,
        lastFailureAt: t,
        pausedUntil: 0,
        lastError: "The receiver answered HTTP 500",
      });
      expect((await fail(t + 10)).pausedUntil).toBe(0);
      expect((await fail(t + 20)).pausedUntil).toBe(t + 20 + 1_000);
      expect((await fail(t + 30)).pausedUntil).toBe(t + 30 + 2_000);
      const capped = await fail(t + 40, "x".repeat(400));
      expect(capped).toMatchObject({ failures: 5, failingSince: t, pausedUntil: t + 40 + 3_000 });
      expect(capped.lastError).toHaveLength(300);
      expect(capped.disabledAt).toBeUndefined();
      expect(await store.webhooks.getEndpoint(userId, receiver)).toEqual(capped);

      const other = "https://other.example.com:8443";
      await store.webhooks.recordEndpointFailure(userId, {
        receiver: other,
        url: `${other}/b`,
        error: "e",
        now: t + 50,
        policy,
      });
      expect((await store.webhooks.listEndpoints(userId)).map((state) => state.receiver)).toEqual([other, receiver]);
      // Failing since t for the whole disable time: disabled, and listed first.
      const disabled = await fail(t + 100_000);
      expect(disabled).toMatchObject({ failures: 6, disabledAt: t + 100_000 });
      expect(
        await store.webhooks.recordEndpointFailure(userId, {
          receiver: other,
          url: `${other}/b`,
          error: "e",
          now: t + 100_010,
          policy,
        }),
      ).toMatchObject({
        failures: 2,
        failingSince: t + 50,
      });
      expect((await store.webhooks.listEndpoints(userId)).map((state) => [state.receiver, state.disabledAt])).toEqual([
        [receiver, t + 100_000],
        [other, undefined],
      ]);
      // Another account's receivers are its own.
      expect(await store.webhooks.getEndpoint(id("usr"), receiver)).toBeNull();

      await store.webhooks.clearEndpoint(userId, receiver);
      expect(await store.webhooks.getEndpoint(userId, receiver)).toBeNull();
      expect((await store.webhooks.listEndpoints(userId)).map((state) => state.receiver)).toEqual([other]);
      // After a clear the count starts again.
      expect(await fail(t + 200_000)).toMatchObject({ failures: 1, failingSince: t + 200_000, pausedUntil: 0 });
    });
  });

  describe("store marker", () => {
    it("is created once (the first writer wins), read back, and overwritten to record a loss", async () => {
      expect(await store.meta.readMarker()).toBeNull();
      const first = { initializedAt: "2026-01-01T00:00:00.000Z" };
      expect(await store.meta.createMarker(first)).toEqual(first);
      expect(await store.meta.createMarker({ initializedAt: "2026-02-02T00:00:00.000Z" })).toEqual(first);
      expect(await store.meta.readMarker()).toEqual(first);
      const lost = { initializedAt: "2026-03-03T00:00:00.000Z", dataLostAt: "2026-03-03T00:00:00.000Z" };
      await store.meta.writeMarker(lost);
      expect(await store.meta.readMarker()).toEqual(lost);
      expect(await store.meta.createMarker({ initializedAt: "2026-04-04T00:00:00.000Z" })).toEqual(lost);
    });
  });

  it.runIf(adapter.name.includes("REST"))(
    "resolves a key in one HTTP round trip once its script is loaded",
    async () => {
      const user = await newUser();
      const { record } = newKey(user.id);
      await store.keys.createApiKey(record, 50);
      await store.keys.resolveApiKey(record.hash, new Date(), 60_000); // loads the script (EVALSHA → NOSCRIPT → EVAL)
      const before = Object.values(bridge?.requests ?? {}).reduce((sum, count) => sum + count, 0);
      expect(await store.keys.resolveApiKey(record.hash, new Date(), 60_000)).not.toBeNull();
      const after = Object.values(bridge?.requests ?? {}).reduce((sum, count) => sum + count, 0);
      expect(after - before).toBe(1);
      // The client's defaults were exercised: auto-pipelining and base64-encoded results.
      expect(bridge?.requests["/pipeline"]).toBeGreaterThan(0);
      expect(bridge?.base64Requests).toBe(after);
    },
  );

  describe("jobs", () => {
    const newJob = (userId: string, pages: number, extra: Partial<NewJob> = {}): NewJob => {
      const createdAt = Date.now();
      return {
        id: `job_${randomBytes(16).toString("base64url")}`,
        userId,
        requestId: id("req"),
        createdAt,
        deadline: createdAt + 3_600_000,
        expiresAt: createdAt + 7_200_000,
        fileType: "pdf",
        inputSource: "base64",
        bytes: 10,
        sourceChunks: 1,
        pageCount: pages,
        selection: `1-${pages}`,
        pagesTotal: pages,
        creditsReserved: pages,
        format: "text",
        language: "auto",
        ...extra,
      };
    };
    const create = (job: NewJob, maxQueuedPages = 1_000) =>
      store.jobs.createJob(job, {
        entry: draft("ocr", { requestId: job.id }),
        day: today(),
        maxQueuedPages,
        ttlMs: 3_600_000,
      });
    const end = (jobId: string, end: "finish" | "cancel" | "fail", error?: string) =>
      store.jobs.endJob(jobId, {
        end,
        error,
        now: Date.now(),
        resultTtlMs: 3_600_000,
        entry: draft("refund", { requestId: jobId }),
        day: today(),
      });
    const funded = async (credits: number) => {
      const userId = id("usr");
      await store.credits.grantCredits({ userId, credits, entry: draft("grant") });
      return userId;
    };

    it("createJob reserves every page in one ledger entry, or writes nothing (short, over the queue cap, a duplicate)", async () => {
      const userId = await funded(10);
      expect(await create(newJob(userId, 12))).toEqual({ ok: false, reason: "insufficient_credits", balance: 10 });
      const job = newJob(userId, 4);
      expect(await create(job)).toEqual({ ok: true, balance: 6 });
      expect(await create(job)).toEqual({ ok: false, reason: "duplicate" });
      expect(await create(newJob(userId, 3), 6)).toEqual({ ok: false, reason: "queue_full", queued: 4 });
      expect(await store.credits.getBalance(userId)).toBe(6);
      const { entries } = await store.credits.listLedger(userId, { limit: 10 });
      expect(entries.map((entry) => [entry.reason, entry.delta, entry.requestId])).toEqual([
        ["ocr", -4, job.id],
        ["grant", 10, undefined],
      ]);
      expect(await store.jobs.getJob(job.id)).toMatchObject({
        status: "queued",
        pagesTotal: 4,
        pagesDone: 0,
        creditsReserved: 4,
        creditsUsed: 0,
      });
    });

    it("storeAndEnd: a job read in its request stores its pages, is charged for them and ends in one step", async () => {
      const userId = await funded(10);
      const job = newJob(userId, 3, { sourceChunks: 0 });
      await create(job);
      const input = {
        end: "finish" as const,
        now: Date.now(),
        resultTtlMs: 3_600_000,
        entry: draft("refund", { requestId: job.id }),
        day: today(),
      };
      const pages = [
        { page: 1, payload: "one" },
        { page: 2, payload: "two" },
      ];
      expect(await store.jobs.storeAndEnd(job.id, { userId, sourceChunks: 0 }, pages, input)).toEqual({
        outcome: { stored: 2, duplicates: 0, inactive: false, last: false },
        ended: { status: "succeeded", refunded: 1 },
      });
      expect(await store.credits.getBalance(userId)).toBe(8);
      expect(await store.jobs.getPages(job.id, [1, 2])).toEqual(["one", "two"]);
      expect(await store.jobs.getJob(job.id)).toMatchObject({
        status: "succeeded",
        creditsUsed: 2,
        creditsRefunded: 1,
      });
      // Ended: a second one stores nothing and charges nothing.
      expect(
        await store.jobs.storeAndEnd(job.id, { userId, sourceChunks: 0 }, [{ page: 3, payload: "three" }], input),
      ).toEqual({ outcome: { stored: 0, duplicates: 0, inactive: true, last: false }, ended: null });
      expect(await store.credits.getBalance(userId)).toBe(8);
    });

    it("pages: stored once and charged once, failures recorded, the last one said; the end refunds the rest", async () => {
      const userId = await funded(10);
      const job = newJob(userId, 4);
      await create(job);
      expect(await store.jobs.startJob(job.id, Date.now())).toBe(true);
      expect(await store.jobs.startJob(job.id, Date.now())).toBe(false);
      expect(
        await store.jobs.storePages(
          job.id,
          [
            { page: 1, payload: "one" },
            { page: 2, payload: "two" },
          ],
          Date.now(),
        ),
      ).toEqual({
        stored: 2,
        duplicates: 0,
        inactive: false,
        last: false,
      });
      // Read twice (a retry after a crash): charged once.
      expect(await store.jobs.storePages(job.id, [{ page: 2, payload: "again" }], Date.now())).toEqual({
        stored: 0,
        duplicates: 1,
        inactive: false,
        last: false,
      });
      expect(await store.jobs.failPage(job.id, 3, '{"code":"payload_too_large","message":"big"}', Date.now())).toEqual({
        stored: 1,
        duplicates: 0,
        inactive: false,
        last: false,
      });
      expect(await store.jobs.failPage(job.id, 3, "{}", Date.now())).toMatchObject({ stored: 0, duplicates: 1 });
      expect(await store.jobs.getPages(job.id, [2, 4, 1])).toEqual(["two", null, "one"]);
      expect(await store.jobs.listDonePages(job.id)).toEqual([1, 2]);
      expect([...(await store.jobs.getFailedPages(job.id))]).toEqual([
        [3, '{"code":"payload_too_large","message":"big"}'],
      ]);
      expect(await store.jobs.getJob(job.id)).toMatchObject({
        status: "running",
        pagesDone: 2,
        pagesFailed: 1,
        creditsUsed: 2,
      });
      // Page 4 is never read: the end gives back it and the failed page 3.
      expect(await end(job.id, "finish")).toEqual({ status: "succeeded", refunded: 2 });
      expect(await end(job.id, "finish")).toBeNull();
      expect(await store.credits.getBalance(userId)).toBe(8);
      expect(await store.jobs.storePages(job.id, [{ page: 4, payload: "late" }], Date.now())).toMatchObject({
        stored: 0,
        inactive: true,
      });
      expect(await store.jobs.getJob(job.id)).toMatchObject({
        status: "succeeded",
        creditsUsed: 2,
        creditsRefunded: 2,
      });
      const { entries } = await store.credits.listLedger(userId, { limit: 10 });
      expect(entries.filter((entry) => entry.requestId === job.id).map((entry) => entry.delta)).toEqual([2, -4]);
    });

    it("the last page is said; cancel refunds what is left and nothing is stored after it", async () => {
      const userId = await funded(10);
      const whole = newJob(userId, 2);
      await create(whole);
      expect(await store.jobs.storePages(whole.id, [{ page: 1, payload: "a" }], Date.now())).toMatchObject({
        last: false,
      });
      expect(await store.jobs.failPage(whole.id, 2, "{}", Date.now())).toMatchObject({ last: true });
      const cancelled = newJob(userId, 3);
      await create(cancelled);
      await store.jobs.storePages(cancelled.id, [{ page: 1, payload: "a" }], Date.now());
      expect(await end(cancelled.id, "cancel", '{"code":"cancelled","message":"x"}')).toEqual({
        status: "cancelled",
        refunded: 2,
      });
      expect(await store.jobs.storePages(cancelled.id, [{ page: 2, payload: "b" }], Date.now())).toMatchObject({
        stored: 0,
        inactive: true,
      });
      expect(await store.jobs.getJob(cancelled.id)).toMatchObject({
        status: "cancelled",
        error: '{"code":"cancelled","message":"x"}',
      });
      // A job that delivered nothing ends failed, everything refunded.
      const nothing = newJob(userId, 1);
      await create(nothing);
      expect(await end(nothing.id, "finish")).toEqual({ status: "failed", refunded: 1 });
    });

    it("a job whose reservation the sweeper took stores no more pages (nothing is read for free)", async () => {
      const userId = await funded(5);
      const job = newJob(userId, 2);
      await create(job);
      await store.credits.releaseCredits({
        userId,
        requestId: job.id,
        pages: 100,
        entry: draft("expired", { requestId: job.id }),
        day: today(),
      });
      expect(await store.jobs.storePages(job.id, [{ page: 1, payload: "a" }], Date.now())).toMatchObject({
        stored: 0,
        inactive: true,
      });
      expect(await end(job.id, "fail")).toEqual({ status: "failed", refunded: 0 });
      expect(await store.credits.getBalance(userId)).toBe(5);
    });

    const put = (
      jobId: string,
      bytes: Uint8Array,
      userId: string,
      extra: { pendingTtlMs?: number; maxAccountBytes?: number } = {},
    ) =>
      store.jobs.putSource(jobId, bytes, {
        chunkBytes: 4_096,
        pendingTtlMs: 60_000,
        userId,
        maxAccountBytes: 1e9,
        ...extra,
      });

    it("sources: bytes back exactly, in chunks; gone once dropped", async () => {
      const job = newJob(id("usr"), 1);
      const bytes = new Uint8Array(randomBytes(10_000));
      // Every byte value, a 0x00 first (the raw marker) included.
      bytes[0] = 0;
      const stored = await put(job.id, bytes, job.userId);
      expect(stored).toEqual({ ok: true, chunks: 3 });
      expect(Buffer.from((await store.jobs.getSource(job.id, 3))!).equals(Buffer.from(bytes))).toBe(true);
      await store.jobs.deleteSource(job.id, 3, { userId: job.userId, bytes: bytes.byteLength });
      expect(await store.jobs.getSource(job.id, 3)).toBeNull();
    });

    it("sources: an account's stored files are capped; a refused, failed or cancelled job's file frees its share, a succeeded one's is kept (issue 30 point 3)", async () => {
      const userId = await funded(10);
      const cap = { maxAccountBytes: 25_000 };
      const files = [
        newJob(userId, 1, { bytes: 10_000, sourceChunks: 3 }),
        newJob(userId, 1, { bytes: 10_000, sourceChunks: 3 }),
      ];
      for (const job of files)
        expect(await put(job.id, new Uint8Array(10_000), userId, cap)).toEqual({ ok: true, chunks: 3 });
      const third = newJob(userId, 1, { bytes: 10_000, sourceChunks: 3 });
      const refused = await put(third.id, new Uint8Array(10_000), userId, cap);
      expect(refused).toMatchObject({ ok: false, used: 20_000 });
      expect(refused.ok === false && refused.releasedAt).toBeGreaterThan(Date.now());
      expect(await store.jobs.getSource(third.id, 3)).toBeNull();
      // Another account is not counted.
      expect(await put(newJob(id("usr"), 1).id, new Uint8Array(20_000), id("usr"), cap)).toMatchObject({ ok: true });
      // The first job succeeds: its file is kept with its results, still counted.
      await create(files[0]!);
      await store.jobs.storePages(files[0]!.id, [{ page: 1, payload: "a" }], Date.now());
      expect(await end(files[0]!.id, "finish")).toMatchObject({ status: "succeeded" });
      expect(await put(third.id, new Uint8Array(10_000), userId, cap)).toMatchObject({ ok: false, used: 20_000 });
      // The second is cancelled: its file goes, and so does its share.
      await create(files[1]!);
      expect(await end(files[1]!.id, "cancel")).toMatchObject({ status: "cancelled" });
      expect(await store.jobs.getSource(files[1]!.id, 3)).toBeNull();
      expect(await put(third.id, new Uint8Array(10_000), userId, cap)).toEqual({ ok: true, chunks: 3 });
      // A job refused after its file was stored gives its share back.
      await store.jobs.deleteSource(third.id, 3, { userId, bytes: 10_000 });
      expect(await put(newJob(userId, 1).id, new Uint8Array(15_000), userId, cap)).toMatchObject({ ok: true });
    });

    it("sources: a file lives its short pending lifetime until createJob gives it the job's", async () => {
      const userId = await funded(5);
      const kept = newJob(userId, 1, { bytes: 5_000, sourceChunks: 2 });
      const orphan = newJob(userId, 1, { bytes: 5_000, sourceChunks: 2 });
      // Long enough for the REST round trips before createJob; the wait after is longer still.
      expect(await put(kept.id, new Uint8Array(5_000), userId, { pendingTtlMs: 1_500 })).toEqual({
        ok: true,
        chunks: 2,
      });
      expect(
        await put(orphan.id, new Uint8Array(5_000), userId, { pendingTtlMs: 1_500, maxAccountBytes: 10_000 }),
      ).toEqual({ ok: true, chunks: 2 });
      expect(await create(kept)).toMatchObject({ ok: true });
      // The orphan goes at its pending lifetime; the kept file, put before it, would have gone first without the job's.
      await expect.poll(() => store.jobs.getSource(orphan.id, 2), EXPIRY).toBeNull();
      expect(await store.jobs.getSource(kept.id, 2)).not.toBeNull();
      // The orphan's share went with it: 5 000 of 10 000 are used.
      expect(await put(newJob(userId, 1).id, new Uint8Array(5_000), userId, { maxAccountBytes: 10_000 })).toMatchObject(
        { ok: true },
      );
    });

    it("an account's jobs, newest first, in pages; another account's are not listed", async () => {
      const userId = await funded(20);
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) {
        const job = newJob(userId, 1, { createdAt: Date.now() + i });
        await create(job);
        ids.push(job.id);
      }
      const first = await store.jobs.listJobs(userId, { limit: 2 });
      expect(first.jobs.map((job) => job.id)).toEqual([ids[2], ids[1]]);
      const second = await store.jobs.listJobs(userId, { limit: 2, cursor: first.nextCursor });
      expect(second.jobs.map((job) => job.id)).toEqual([ids[0]]);
      expect(second.nextCursor).toBeNull();
      expect((await store.jobs.listJobs(id("usr"), { limit: 5 })).jobs).toEqual([]);
    });
  });
});
