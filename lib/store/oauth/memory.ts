import { ExpiringMap } from "../memory-support";
import type {
  GrantRef,
  OAuthClientRecord,
  OAuthCodeRecord,
  OAuthGrantRecord,
  OAuthStore,
  OAuthTokenRecord,
  SingleUse,
} from "./port";

/** The OAuth records for one process (the development default), following the same rules as the redis adapter. */
export function createMemoryOAuthStore(): OAuthStore {
  const clients = new ExpiringMap<OAuthClientRecord>();
  const codes = new ExpiringMap<OAuthCodeRecord>();
  const usedCodes = new ExpiringMap<GrantRef | null>();
  /** userId → grantId → grant (lastUsedAt kept in `lastUse`). */
  const grants = new Map<string, Map<string, OAuthGrantRecord>>();
  const grantOf = new Map<string, Map<string, string>>();
  const lastUse = new Map<string, number>();
  const tokens = new ExpiringMap<OAuthTokenRecord>();
  const refreshTokens = new ExpiringMap<OAuthTokenRecord>();
  const usedRefreshTokens = new ExpiringMap<GrantRef>();

  const grantsOf = (userId: string) => {
    let map = grants.get(userId);
    if (!map) grants.set(userId, (map = new Map()));
    return map;
  };
  const indexOf = (userId: string) => {
    let map = grantOf.get(userId);
    if (!map) grantOf.set(userId, (map = new Map()));
    return map;
  };
  function findSingleUse<T>(records: ExpiringMap<T>, used: ExpiringMap<GrantRef | null>, hash: string): SingleUse<T> {
    const record = records.get(hash);
    if (record !== undefined) return { record: structuredClone(record) };
    const grant = used.get(hash);
    if (grant !== undefined) return { reused: grant && { ...grant } };
    return null;
  }

  return {
    async saveClient(client, ttlMs) {
      clients.set(client.clientId, structuredClone(client), ttlMs ?? undefined);
    },
    async getClient(clientId) {
      const client = clients.get(clientId);
      return client ? structuredClone(client) : null;
    },
    async keepClient(clientId) {
      const client = clients.get(clientId);
      if (client) clients.set(clientId, client);
    },

    async saveCode(hash, code, ttlMs) {
      codes.set(hash, structuredClone(code), ttlMs);
    },
    async findCode(hash) {
      return findSingleUse(codes, usedCodes, hash);
    },
    async consumeCode(hash, usedTtlMs) {
      if (codes.get(hash) === undefined) return false;
      codes.delete(hash);
      usedCodes.set(hash, null, usedTtlMs);
      return true;
    },
    async markCodeRedeemed(hash, grant) {
      // Keeps the marker's TTL, as Redis `SET … XX KEEPTTL` does.
      const remaining = usedCodes.remainingMs(hash);
      if (remaining !== undefined)
        usedCodes.set(hash, { ...grant }, Number.isFinite(remaining) ? remaining : undefined);
    },

    async upsertGrant(grant) {
      const byId = grantsOf(grant.userId);
      const index = indexOf(grant.userId);
      const existingId = index.get(grant.clientId);
      const existing = existingId === undefined ? undefined : byId.get(existingId);
      if (existing) {
        const updated = {
          ...existing,
          scopes: [...grant.scopes],
          resource: grant.resource,
          clientName: grant.clientName,
        };
        byId.set(existing.id, updated);
        return withLastUse(updated);
      }
      byId.set(grant.id, { ...structuredClone(grant), lastUsedAt: null });
      index.set(grant.clientId, grant.id);
      return withLastUse(byId.get(grant.id)!);
    },
    async listGrants(userId) {
      return [...(grants.get(userId)?.values() ?? [])].map(withLastUse);
    },
    async isGrantActive(userId, grantId) {
      return grants.get(userId)?.has(grantId) ?? false;
    },
    async revokeGrant(userId, grantId) {
      const grant = grants.get(userId)?.get(grantId);
      if (!grant) return false;
      grants.get(userId)?.delete(grantId);
      lastUse.delete(grantId);
      if (grantOf.get(userId)?.get(grant.clientId) === grantId) grantOf.get(userId)?.delete(grant.clientId);
      return true;
    },

    async saveAccessToken(hash, token, ttlMs) {
      tokens.set(hash, structuredClone(token), ttlMs);
    },
    async resolveAccessToken(hash, now, touchIntervalMs) {
      const token = tokens.get(hash);
      if (!token || token.expiresAt <= now) return null;
      if (!grants.get(token.userId)?.has(token.grantId)) return null;
      if (now - (lastUse.get(token.grantId) ?? 0) >= touchIntervalMs) lastUse.set(token.grantId, now);
      return structuredClone(token);
    },
    async deleteAccessToken(hash) {
      tokens.delete(hash);
    },

    async saveRefreshToken(hash, token, ttlMs) {
      refreshTokens.set(hash, structuredClone(token), ttlMs);
    },
    async findRefreshToken(hash) {
      return findSingleUse(refreshTokens, usedRefreshTokens, hash);
    },
    async consumeRefreshToken(hash, usedTtlMs) {
      const token = refreshTokens.get(hash);
      if (token === undefined) return false;
      refreshTokens.delete(hash);
      usedRefreshTokens.set(hash, { userId: token.userId, grantId: token.grantId }, usedTtlMs);
      return true;
    },
  };

  function withLastUse(grant: OAuthGrantRecord): OAuthGrantRecord {
    const ms = lastUse.get(grant.id);
    return { ...structuredClone(grant), lastUsedAt: ms === undefined ? null : new Date(ms).toISOString() };
  }
}
