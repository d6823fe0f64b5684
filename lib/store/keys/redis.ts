import { z } from "zod";
import { call, flatHash, integer, type RedisContext } from "../redis-support";
import { createApiKeyScript, resolveApiKeyScript, revokeApiKeyScript } from "./scripts";
import { apiKeyRecordSchema, resolvedApiKeySchema, type ApiKeyRecord, type ApiKeyStore } from "./port";

/** A record in the revoked-keys hash: revoked, with the last use the revoke script copied from the hash index. */
const revokedApiKeySchema = apiKeyRecordSchema.extend({
  revokedAt: z.iso.datetime(),
  lastUsedMs: z.number().int().nonnegative().optional(),
});

/**
 * API keys on Redis: records in `keys:{userId}` / `revokedkeys:{userId}`, and `apikey:{sha256}`, the hash index the
 * hot path reads (and where it writes the last use).
 */
export function createRedisApiKeyStore({ redis, key }: RedisContext): ApiKeyStore {
  const scripts = {
    createApiKey: redis.createScript<unknown>(createApiKeyScript),
    resolveApiKey: redis.createScript<unknown>(resolveApiKeyScript),
    revokeApiKey: redis.createScript<unknown>(revokeApiKeyScript),
  };

  return {
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
      const lastUsed = z
        .array(z.union([z.string(), z.number()]).nullable())
        .parse(await call("listApiKeys", () => pipeline.exec()));
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

    async isApiKeyActive(userId, keyId) {
      return integer.parse(await call("isApiKeyActive", () => redis.hexists(key.keys(userId), keyId))) === 1;
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
  };
}
