import type { ApiKeyRecord, ApiKeyStore } from "./port";

const isoOrNull = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/** API keys for one process (the development default), following the same rules as the redis adapter. */
export function createMemoryApiKeyStore(): ApiKeyStore {
  const activeKeys = new Map<string, Map<string, ApiKeyRecord>>();
  const revokedKeys = new Map<string, Map<string, ApiKeyRecord>>();
  /** The hash index: the record and its last use, as `apikey:{sha256}` in Redis. */
  const keyIndex = new Map<string, { record: ApiKeyRecord; lastUsedMs: number | null }>();

  return {
    async createApiKey(record, maxActive) {
      const keys = activeKeys.get(record.userId) ?? new Map<string, ApiKeyRecord>();
      if (keys.size >= maxActive) return false;
      keys.set(record.id, { ...record });
      activeKeys.set(record.userId, keys);
      keyIndex.set(record.hash, { record: { ...record }, lastUsedMs: null });
      return true;
    },

    async listApiKeys(userId) {
      const active = [...(activeKeys.get(userId)?.values() ?? [])].map((record) => ({
        ...record,
        lastUsedAt: isoOrNull(keyIndex.get(record.hash)?.lastUsedMs ?? null),
      }));
      const revoked = [...(revokedKeys.get(userId)?.values() ?? [])].map((record) => ({ ...record }));
      return [...active, ...revoked];
    },

    async resolveApiKey(hash, now, touchIntervalMs) {
      const indexed = keyIndex.get(hash);
      if (!indexed) return null;
      const { record, lastUsedMs } = indexed;
      if (now.getTime() - (lastUsedMs ?? 0) >= touchIntervalMs) indexed.lastUsedMs = now.getTime();
      return {
        keyId: record.id,
        userId: record.userId,
        name: record.name,
        start: record.start,
        lastUsedAt: isoOrNull(lastUsedMs),
      };
    },

    async isApiKeyActive(userId, keyId) {
      return activeKeys.get(userId)?.has(keyId) ?? false;
    },

    async revokeApiKey(userId, keyId, revokedAt) {
      const record = activeKeys.get(userId)?.get(keyId);
      if (!record) return false;
      activeKeys.get(userId)?.delete(keyId);
      const lastUsedAt = isoOrNull(keyIndex.get(record.hash)?.lastUsedMs ?? null);
      const revoked = revokedKeys.get(userId) ?? new Map<string, ApiKeyRecord>();
      revoked.set(keyId, { ...record, lastUsedAt, revokedAt });
      revokedKeys.set(userId, revoked);
      keyIndex.delete(record.hash);
      return true;
    },
  };
}
