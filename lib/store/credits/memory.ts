import { ExpiringMap } from "../memory-support";
import {
  TOMBSTONE_TTL_MS,
  ledgerEntrySchema,
  parseReservationMember,
  reservationMember,
  type CreditStore,
  type LedgerDraft,
  type LedgerEntry,
} from "./port";

/**
 * Balances and ledgers in memory, shared by the credit store and the account store (a new user's signup credits),
 * as `credits:{userId}` and `ledger:{userId}` are in Redis.
 */
export class MemoryBalances {
  private readonly balances = new Map<string, number>();
  private readonly ledgers = new Map<string, LedgerEntry[]>();
  private readonly usage = new Map<string, Map<string, number>>();
  /** Credits still reserved while open, `closed` after release (a tombstone: see the Lua scripts), by `userId:requestId`. */
  readonly reservations = new ExpiringMap<number | "closed">();
  /** Open reservations: member → deadline. */
  readonly openReservations = new Map<string, number>();

  get(userId: string): number {
    return this.balances.get(userId) ?? 0;
  }

  /** Add `delta` (never below zero: callers check) and append the entry for it; returns the new balance. */
  change(userId: string, delta: number, draft: LedgerDraft, pages?: number): number {
    const balanceAfter = this.get(userId) + delta;
    this.balances.set(userId, balanceAfter);
    const ledger = this.ledgers.get(userId) ?? [];
    ledger.push(ledgerEntrySchema.parse({ balanceAfter, delta, ...(pages !== undefined && { pages }), ...draft }));
    this.ledgers.set(userId, ledger);
    return balanceAfter;
  }

  ledger(userId: string): readonly LedgerEntry[] {
    return this.ledgers.get(userId) ?? [];
  }

  addUsage(userId: string, day: string, pages: number): void {
    const days = this.usage.get(userId) ?? new Map<string, number>();
    days.set(day, (days.get(day) ?? 0) + pages);
    this.usage.set(userId, days);
  }

  usageOn(userId: string, day: string): number {
    return this.usage.get(userId)?.get(day) ?? 0;
  }
}

/** The memory key of a reservation (`reservation:{userId}:{requestId}` in Redis). */
export const reservationKey = (userId: string, requestId: string) => `${userId}:${requestId}`;

/** Credits for one process (the development default), following the same rules as the Lua scripts. */
export function createMemoryCreditStore(balances: MemoryBalances): CreditStore {
  const { reservations, openReservations } = balances;
  const addUsage = (userId: string, day: string, pages: number) => balances.addUsage(userId, day, pages);

  return {
    async getBalance(userId) {
      return balances.get(userId);
    },

    async releaseCredits({ userId, requestId, pages, entry, day }) {
      const id = reservationKey(userId, requestId);
      const reserved = reservations.get(id);
      const refund = Math.min(pages, typeof reserved === "number" ? reserved : 0);
      reservations.set(id, "closed", TOMBSTONE_TTL_MS);
      openReservations.delete(reservationMember(userId, requestId));
      if (refund <= 0) return { refunded: 0, balance: balances.get(userId) };
      const after = balances.change(userId, refund, entry, refund);
      addUsage(userId, day, -refund);
      return { refunded: refund, balance: after };
    },

    async listOverdueReservations(before, limit) {
      return [...openReservations]
        .filter(([, deadline]) => deadline <= before)
        .sort((a, b) => a[1] - b[1])
        .slice(0, limit)
        .flatMap(([member, deadline]) => {
          const parsed = parseReservationMember(member);
          return parsed ? [{ ...parsed, deadline }] : [];
        });
    },

    async countOverdueReservations(before) {
      let count = 0;
      for (const deadline of openReservations.values()) if (deadline <= before) count++;
      return count;
    },

    async grantCredits({ userId, credits, entry }) {
      return { balance: balances.change(userId, credits, entry) };
    },

    async listLedger(userId, { limit, cursor }) {
      const ledger = balances.ledger(userId);
      const parsed = cursor ? Number.parseInt(cursor, 10) : -1;
      const before = !Number.isFinite(parsed) || parsed < 0 || parsed > ledger.length ? ledger.length : parsed;
      const first = Math.max(0, before - limit);
      return {
        entries: ledger
          .slice(first, before)
          .reverse()
          .map((item) => ({ ...item })),
        nextCursor: first > 0 ? String(first) : null,
      };
    },

    async getDailyUsage(userId, days) {
      return days.map((day) => Math.max(0, balances.usageOn(userId, day)));
    },
  };
}
