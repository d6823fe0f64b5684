import { ExpiringMap } from "../memory-support";
import type { BackoffState, LimitStore } from "./port";

/** Limits for one process, with the same algorithms as the redis adapter. */
export function createMemoryLimitStore(): LimitStore {
  const rateWindows = new ExpiringMap<number>();
  const backoffs = new ExpiringMap<BackoffState>();
  const claimed = new ExpiringMap<true>();
  /** group → holder → expiry (epoch ms), as the `slots:{group}` sorted sets. */
  const slots = new Map<string, Map<string, number>>();
  /** The group's live holders, soonest to expire first (expired ones dropped, as the script does). */
  const liveHolders = (group: string, now: number): Map<string, number> => {
    const holders = slots.get(group) ?? new Map<string, number>();
    for (const [holder, expiry] of holders) if (expiry <= now) holders.delete(holder);
    if (holders.size === 0) slots.delete(group);
    return holders;
  };
  const sortedHolders = (holders: Map<string, number>) =>
    [...holders].sort((a, b) => a[1] - b[1]).map(([holder]) => holder);
  return {
    async rateLimit({ bucket, identifier, limit, windowMs, weight = 1 }) {
      // Same algorithm as @upstash/ratelimit's fixedWindow, which the redis adapter uses.
      const window = Math.floor(Date.now() / windowMs);
      const id = `${bucket}:${identifier}:${window}`;
      const used = rateWindows.get(id) ?? 0;
      const reset = (window + 1) * windowMs;
      // A hit that does not fit is not counted (see the port).
      if (used + weight > limit) return { success: false, limit, remaining: Math.max(0, limit - used), reset };
      rateWindows.set(id, used + weight, windowMs);
      return { success: true, limit, remaining: limit - used - weight, reset };
    },

    async getBackoff(subject) {
      const state = backoffs.get(subject);
      return state ? { ...state } : null;
    },

    async recordBackoffFailure(subject, now, policy) {
      // Same rule as the redis adapter's recordBackoffFailure script.
      const failures = (backoffs.get(subject)?.failures ?? 0) + 1;
      const over = failures - policy.free;
      const until = over > 0 ? now + Math.min(policy.maxMs, policy.baseMs * 2 ** Math.min(over - 1, 40)) : 0;
      backoffs.set(subject, { failures, until }, policy.ttlMs);
      return { failures, until };
    },

    async clearBackoff(subject) {
      backoffs.delete(subject);
    },

    async acquireSlot({ group, holder, limit, ttlMs }) {
      const now = Date.now();
      const holders = liveHolders(group, now);
      const acquired = holders.has(holder) || holders.size < limit;
      if (acquired) {
        holders.set(holder, now + ttlMs);
        slots.set(group, holders);
      }
      return { acquired, holders: sortedHolders(holders) };
    },

    async renewSlot({ group, holder, ttlMs }) {
      const holders = liveHolders(group, Date.now());
      holders.set(holder, Date.now() + ttlMs);
      slots.set(group, holders);
    },

    async releaseSlot(group, holder) {
      const holders = slots.get(group);
      holders?.delete(holder);
      if (holders?.size === 0) slots.delete(group);
    },

    async claimOnce({ scope, id, ttlMs }) {
      const name = `${scope}:${id}`;
      if (claimed.get(name)) return false;
      claimed.set(name, true, ttlMs);
      return true;
    },
  };
}
