import { z } from "zod";
import { ExpiringMap } from "./memory-support";
import { call, flatHash, integer, type RedisContext } from "./redis-support";
import { claimIdempotencyScript, completeIdempotencyScript, releaseIdempotencyScript } from "./scripts";

export const idempotencyRecordSchema = z.object({
  state: z.enum(["in-progress", "done"]),
  /** Hash of the request that claimed the key; a retry with another body is a mismatch. */
  fingerprint: z.string(),
  /** Random token of the claim, so only its owner completes or releases it. */
  token: z.string(),
  createdAt: z.iso.datetime(),
  /** The stored response (opaque to the store), present once `done`. */
  response: z.string().optional(),
});
export type IdempotencyRecord = z.infer<typeof idempotencyRecordSchema>;

type IdempotencyClaimResult = { claimed: true } | { claimed: false; record: IdempotencyRecord };

/** Idempotency-Key records (lib/credits/idempotency.ts is the caller); `scope` = account + hashed key. */
export interface IdempotencyStore {
  /** Claim `scope` as in-progress for `leaseMs` unless a record exists; else return that record. */
  claimIdempotency(
    scope: string,
    claim: { fingerprint: string; token: string; createdAt: string },
    leaseMs: number,
  ): Promise<IdempotencyClaimResult>;
  /** Mark the claim `done` with its response, kept for `ttlMs`. False when the claim was lost. */
  completeIdempotency(scope: string, token: string, response: string, ttlMs: number): Promise<boolean>;
  /** Drop an in-progress claim (the request failed and may be retried). False when not ours. */
  releaseIdempotency(scope: string, token: string): Promise<boolean>;
}

const claimReply = z.union([z.tuple([z.literal("claimed")]), z.tuple([z.literal("exists"), flatHash])]);

/** Idempotency on Redis: one `idem:{scope}` hash per key, changed only by Lua scripts (claims race). */
export function createRedisIdempotencyStore({ redis, key }: RedisContext): IdempotencyStore {
  const scripts = {
    claim: redis.createScript<unknown>(claimIdempotencyScript),
    complete: redis.createScript<unknown>(completeIdempotencyScript),
    release: redis.createScript<unknown>(releaseIdempotencyScript),
  };
  return {
    async claimIdempotency(scope, claim, leaseMs) {
      const reply = await call("claimIdempotency", () =>
        scripts.claim.exec([key.idempotency(scope)], [claim.fingerprint, claim.token, claim.createdAt, String(leaseMs)]),
      );
      const parsed = claimReply.parse(reply);
      if (parsed[0] === "claimed") return { claimed: true };
      return { claimed: false, record: idempotencyRecordSchema.parse(parsed[1]) };
    },

    async completeIdempotency(scope, token, response, ttlMs) {
      const reply = await call("completeIdempotency", () =>
        scripts.complete.exec([key.idempotency(scope)], [token, response, String(ttlMs)]),
      );
      return integer.parse(reply) === 1;
    },

    async releaseIdempotency(scope, token) {
      const reply = await call("releaseIdempotency", () => scripts.release.exec([key.idempotency(scope)], [token]));
      return integer.parse(reply) === 1;
    },
  };
}

/** Idempotency for one process, following the same rules as the Lua scripts. */
export function createMemoryIdempotencyStore(): IdempotencyStore {
  const records = new ExpiringMap<IdempotencyRecord>();
  return {
    async claimIdempotency(scope, claim, leaseMs) {
      const existing = records.get(scope);
      if (existing) return { claimed: false, record: { ...existing } };
      records.set(scope, { state: "in-progress", ...claim }, leaseMs);
      return { claimed: true };
    },

    async completeIdempotency(scope, token, response, ttlMs) {
      const existing = records.get(scope);
      if (!existing || existing.token !== token) return false;
      records.set(scope, { ...existing, state: "done", response }, ttlMs);
      return true;
    },

    async releaseIdempotency(scope, token) {
      const existing = records.get(scope);
      if (!existing || existing.token !== token || existing.state !== "in-progress") return false;
      records.delete(scope);
      return true;
    },
  };
}
