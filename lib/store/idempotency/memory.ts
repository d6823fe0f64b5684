import { ExpiringMap } from "../memory-support";
import type { IdempotencyRecord, IdempotencyStore } from "./port";

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
