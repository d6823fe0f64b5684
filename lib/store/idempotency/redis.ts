import { z } from "zod";
import { call, flatHash, integer, type RedisContext } from "../redis-support";
import { claimIdempotencyScript, completeIdempotencyScript, releaseIdempotencyScript } from "./scripts";
import { idempotencyRecordSchema, type IdempotencyStore } from "./port";

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
        scripts.claim.exec(
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
