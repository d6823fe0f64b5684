import { createHash } from "node:crypto";
import { z } from "zod";
import { call, flatHash, integer, type RedisContext } from "../redis-support";
import {
  oauthClientSchema,
  oauthCodeSchema,
  oauthGrantSchema,
  oauthTokenSchema,
  type GrantRef,
  type OAuthGrantRecord,
  type OAuthStore,
  type SingleUse,
} from "./port";
import {
  consumeSingleUseScript,
  revokeGrantScript,
  touchGrantScript,
  updateGrantScript,
  upsertGrantScript,
} from "./scripts";

const nullableString = z.string().nullable();
const clientKeyOf = (clientId: string) => createHash("sha256").update(clientId).digest("hex");
/** A used marker's value: `userId grantId` (ids hold no spaces), or '' before the grant is known. */
const grantMarker = ({ userId, grantId }: GrantRef) => `${userId} ${grantId}`;
function parseGrantMarker(value: string): GrantRef | null {
  const [userId, grantId] = value.split(" ");
  return userId && grantId ? { userId, grantId } : null;
}

/**
 * The OAuth records on Redis: `oauth-client:{sha256 of id}` JSON · `oauth-code:{sha256}` JSON and
 * `oauth-code-used:{sha256}` (→ grant id) · `oauth-grants:{userId}` hash grantId → JSON, `oauth-grant-of:{userId}`
 * hash clientId → grantId, `oauth-grant-used:{userId}` hash grantId → epoch ms · `oauth-token:{sha256}` JSON ·
 * `oauth-refresh:{sha256}` JSON and `oauth-refresh-used:{sha256}` (→ grant id). Every code and token key expires
 * with what it holds.
 */
export function createRedisOAuthStore({ redis, key }: RedisContext): OAuthStore {
  const keys = {
    client: (clientId: string) => key.oauthClient(clientKeyOf(clientId)),
    code: key.oauthCode,
    codeUsed: key.oauthCodeUsed,
    grants: key.oauthGrants,
    grantOf: key.oauthGrantOf,
    grantUsed: key.oauthGrantUsed,
    token: key.oauthToken,
    refresh: key.oauthRefresh,
    refreshUsed: key.oauthRefreshUsed,
  };
  const scripts = {
    consume: redis.createScript<unknown>(consumeSingleUseScript),
    upsertGrant: redis.createScript<unknown>(upsertGrantScript),
    updateGrant: redis.createScript<unknown>(updateGrantScript),
    revokeGrant: redis.createScript<unknown>(revokeGrantScript),
    touchGrant: redis.createScript<unknown>(touchGrantScript),
  };

  async function findSingleUse<T>(
    operation: string,
    recordKey: string,
    usedKey: string,
    schema: z.ZodType<T>,
  ): Promise<SingleUse<T>> {
    const pipeline = redis.pipeline();
    pipeline.get(recordKey);
    pipeline.get(usedKey);
    const [record, used] = z
      .tuple([nullableString, nullableString])
      .parse(await call(operation, () => pipeline.exec()));
    if (record !== null) return { record: schema.parse(JSON.parse(record)) };
    if (used !== null) return { reused: parseGrantMarker(used) };
    return null;
  }

  const setJson = (operation: string, target: string, value: unknown, ttlMs: number) =>
    call(operation, () => redis.set(target, JSON.stringify(value), { px: Math.max(1, Math.ceil(ttlMs)) }));

  return {
    async saveClient(client, ttlMs) {
      const stored = JSON.stringify(oauthClientSchema.parse(client));
      await call("saveClient", () =>
        ttlMs === null
          ? redis.set(keys.client(client.clientId), stored)
          : redis.set(keys.client(client.clientId), stored, { px: ttlMs }),
      );
    },
    async getClient(clientId) {
      const json = nullableString.parse(await call("getClient", () => redis.get(keys.client(clientId))));
      return json === null ? null : oauthClientSchema.parse(JSON.parse(json));
    },
    async keepClient(clientId) {
      await call("keepClient", () => redis.persist(keys.client(clientId)));
    },

    async saveCode(hash, code, ttlMs) {
      await setJson("saveCode", keys.code(hash), oauthCodeSchema.parse(code), ttlMs);
    },
    findCode: (hash) => findSingleUse("findCode", keys.code(hash), keys.codeUsed(hash), oauthCodeSchema),
    async consumeCode(hash, usedTtlMs) {
      const reply = await call("consumeCode", () =>
        scripts.consume.exec([keys.code(hash), keys.codeUsed(hash)], [String(usedTtlMs), ""]),
      );
      return integer.parse(reply) === 1;
    },
    async markCodeRedeemed(hash, grant) {
      await call("markCodeRedeemed", () =>
        redis.set(keys.codeUsed(hash), grantMarker(grant), { xx: true, keepTtl: true }),
      );
    },

    async upsertGrant(grant) {
      const stored = oauthGrantSchema.parse(grant);
      const reply = await call("upsertGrant", () =>
        scripts.upsertGrant.exec(
          [keys.grants(grant.userId), keys.grantOf(grant.userId)],
          [grant.clientId, grant.id, JSON.stringify(stored)],
        ),
      );
      const existing = z.string().parse(reply);
      if (existing === "") return stored;
      const previous = oauthGrantSchema.parse(JSON.parse(existing));
      const updated: OAuthGrantRecord = {
        ...previous,
        scopes: stored.scopes,
        resource: stored.resource,
        clientName: stored.clientName,
      };
      const written = await call("upsertGrant", () =>
        scripts.updateGrant.exec(
          [keys.grants(grant.userId)],
          [previous.id, JSON.stringify({ ...updated, lastUsedAt: null })],
        ),
      );
      // Revoked in between: the new grant is stored instead.
      if (integer.parse(written) === 0) return this.upsertGrant(grant);
      return updated;
    },
    async listGrants(userId) {
      const pipeline = redis.pipeline();
      pipeline.hgetall(keys.grants(userId));
      pipeline.hgetall(keys.grantUsed(userId));
      const [grants, used] = z
        .tuple([flatHash.nullable(), flatHash.nullable()])
        .parse(await call("listGrants", () => pipeline.exec()));
      return Object.values(grants ?? {}).map((json) => {
        const grant = oauthGrantSchema.parse(JSON.parse(json));
        const ms = used?.[grant.id];
        return { ...grant, lastUsedAt: ms ? new Date(Number(ms)).toISOString() : null };
      });
    },
    async isGrantActive(userId, grantId) {
      return integer.parse(await call("isGrantActive", () => redis.hexists(keys.grants(userId), grantId))) === 1;
    },
    async revokeGrant(userId, grantId) {
      const json = nullableString.parse(await call("revokeGrant", () => redis.hget(keys.grants(userId), grantId)));
      if (json === null) return false;
      const { clientId } = oauthGrantSchema.parse(JSON.parse(json));
      const reply = await call("revokeGrant", () =>
        scripts.revokeGrant.exec(
          [keys.grants(userId), keys.grantOf(userId), keys.grantUsed(userId)],
          [grantId, clientId],
        ),
      );
      return integer.parse(reply) === 1;
    },

    async saveAccessToken(hash, token, ttlMs) {
      await setJson("saveAccessToken", keys.token(hash), oauthTokenSchema.parse(token), ttlMs);
    },
    async resolveAccessToken(hash, now, touchIntervalMs) {
      const json = nullableString.parse(await call("resolveAccessToken", () => redis.get(keys.token(hash))));
      if (json === null) return null;
      const token = oauthTokenSchema.parse(JSON.parse(json));
      if (token.expiresAt <= now) return null;
      const active = await call("resolveAccessToken", () =>
        scripts.touchGrant.exec(
          [keys.grants(token.userId), keys.grantUsed(token.userId)],
          [token.grantId, String(now), String(touchIntervalMs)],
        ),
      );
      return integer.parse(active) === 1 ? token : null;
    },
    async deleteAccessToken(hash) {
      await call("deleteAccessToken", () => redis.del(keys.token(hash)));
    },

    async saveRefreshToken(hash, token, ttlMs) {
      await setJson("saveRefreshToken", keys.refresh(hash), oauthTokenSchema.parse(token), ttlMs);
    },
    findRefreshToken: (hash) =>
      findSingleUse("findRefreshToken", keys.refresh(hash), keys.refreshUsed(hash), oauthTokenSchema),
    async consumeRefreshToken(hash, usedTtlMs) {
      const json = nullableString.parse(await call("consumeRefreshToken", () => redis.get(keys.refresh(hash))));
      if (json === null) return false;
      const token = oauthTokenSchema.parse(JSON.parse(json));
      const reply = await call("consumeRefreshToken", () =>
        scripts.consume.exec([keys.refresh(hash), keys.refreshUsed(hash)], [String(usedTtlMs), grantMarker(token)]),
      );
      return integer.parse(reply) === 1;
    },
  };
}
