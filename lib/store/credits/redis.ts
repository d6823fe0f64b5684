import { z } from "zod";
import { call, integer, integerPair, type RedisContext } from "../redis-support";
import { grantCreditsScript, ledgerPageScript, releaseCreditsScript } from "./scripts";
import {
  TOMBSTONE_TTL_MS,
  ledgerEntrySchema,
  parseReservationMember,
  reservationMember,
  type CreditStore,
  type LedgerDraft,
} from "./port";

/** A ledger draft as the scripts take it: its fixed fields as JSON, the script prepends the amounts. */
export const fixedFields = (draft: LedgerDraft) => JSON.stringify(draft);

/** Credits on Redis: every balance change and its ledger entry are one Lua script (scripts.ts). */
export function createRedisCreditStore({ redis, key }: RedisContext): CreditStore {
  const scripts = {
    releaseCredits: redis.createScript<unknown>(releaseCreditsScript),
    grantCredits: redis.createScript<unknown>(grantCreditsScript),
    ledgerPage: redis.createScript<unknown>(ledgerPageScript),
  };
  const reservationKeys = (userId: string, requestId: string) => [
    key.credits(userId),
    key.ledger(userId),
    key.usage(userId),
    key.reservation(userId, requestId),
    key.openReservations(),
  ];

  return {
    async getBalance(userId) {
      const reply = await call("getBalance", () => redis.get(key.credits(userId)));
      return reply === null ? 0 : integer.parse(reply);
    },

    async releaseCredits({ userId, requestId, pages, entry, day }) {
      const reply = await call("releaseCredits", () =>
        scripts.releaseCredits.exec(reservationKeys(userId, requestId), [
          String(pages),
          fixedFields(entry),
          day,
          String(TOMBSTONE_TTL_MS),
          reservationMember(userId, requestId),
        ]),
      );
      const [refunded, balance] = integerPair.parse(reply);
      return { refunded, balance };
    },

    async listOverdueReservations(before, limit) {
      const reply = await call("listOverdueReservations", () =>
        redis.zrange(key.openReservations(), "-inf", before, {
          byScore: true,
          offset: 0,
          count: limit,
          withScores: true,
        }),
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
      return integer.parse(
        await call("countOverdueReservations", () => redis.zcount(key.openReservations(), "-inf", before)),
      );
    },

    async grantCredits({ userId, credits, entry }) {
      const reply = await call("grantCredits", () =>
        scripts.grantCredits.exec([key.credits(userId), key.ledger(userId)], [String(credits), fixedFields(entry)]),
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
  };
}
