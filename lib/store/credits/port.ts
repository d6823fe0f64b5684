import { z } from "zod";
import { outputFormats } from "@/lib/vocabulary";

/** `expired`: a reservation its request never settled (the instance died), refunded by the sweeper. */
const ledgerReasonSchema = z.enum(["signup", "ocr", "refund", "grant", "expired"]);
export type LedgerReason = z.infer<typeof ledgerReasonSchema>;

/** The output format an OCR request asked for (the same as `options.format`), recorded on its entries. */
const ledgerFormatSchema = z.enum(outputFormats);
export type LedgerFormat = z.infer<typeof ledgerFormatSchema>;

export const ledgerEntrySchema = z.object({
  id: z.string(),
  at: z.iso.datetime(),
  delta: z.number().int(),
  balanceAfter: z.number().int().min(0),
  reason: ledgerReasonSchema,
  requestId: z.string().optional(),
  keyId: z.string().optional(),
  pages: z.number().int().optional(),
  /** `ocr` entries (and their refunds): the request's output format. Absent on older entries. */
  format: ledgerFormatSchema.optional(),
});
export type LedgerEntry = z.infer<typeof ledgerEntrySchema>;

/** A ledger entry before the store knows its amounts: the store fills in `delta`, `pages` and `balanceAfter`. */
export type LedgerDraft = Pick<LedgerEntry, "id" | "at" | "reason" | "requestId" | "keyId" | "format">;

export interface LedgerPage {
  /** Newest first. */
  entries: LedgerEntry[];
  /** Pass back to get the next (older) page; null when there is none. */
  nextCursor: string | null;
}

/**
 * How long a reservation is kept: far past any request's deadline, so the sweeper always finds what it must refund
 * (it is closed, and leaves the open index, as soon as its request settles or the sweeper refunds it).
 */
export const RESERVATION_TTL_MS = 7 * 24 * 60 * 60 * 1000;
/** How long a closed reservation's tombstone refuses a late reserve of the same request id. */
export const TOMBSTONE_TTL_MS = 24 * 60 * 60 * 1000;

/** A reservation's member in the open-reservation index. Ids never contain `|` (`usr_…`, `req_…`, `req_….2`). */
export function reservationMember(userId: string, requestId: string): string {
  return `${userId}|${requestId}`;
}

export function parseReservationMember(member: string): { userId: string; requestId: string } | null {
  const at = member.indexOf("|");
  return at > 0 ? { userId: member.slice(0, at), requestId: member.slice(at + 1) } : null;
}

/**
 * Balances, reservations, the ledger and daily usage (lib/credits is the caller). Every change of a balance appends
 * its ledger entry in the same atomic step, so the ledger always sums to the balance.
 */
export interface CreditStore {
  getBalance(userId: string): Promise<number>;
  /**
   * Give back up to `pages` of what `requestId` reserved — a job's reservation, taken by the job port's `createJob`
   * (never more than is still reserved), with `entry`'s reason (`expired`, from the sweeper), and close the reservation: it leaves the open index and stays as a
   * tombstone, so a late reserve under the same id is refused. Refunding 0, or a closed or unknown reservation,
   * writes no entry (but the tombstone, so calling it for a reserve whose outcome is unknown is safe).
   */
  releaseCredits(input: {
    userId: string;
    requestId: string;
    pages: number;
    entry: LedgerDraft;
    day: string;
  }): Promise<{ refunded: number; balance: number }>;
  /** Open reservations whose deadline is before `before` (epoch ms), oldest first, at most `limit`. */
  listOverdueReservations(
    before: number,
    limit: number,
  ): Promise<Array<{ userId: string; requestId: string; deadline: number }>>;
  /** How many open reservations have a deadline before `before` (epoch ms). */
  countOverdueReservations(before: number): Promise<number>;
  /** Add credits with a ledger entry (reason `grant` or `signup`). */
  grantCredits(input: { userId: string; credits: number; entry: LedgerDraft }): Promise<{ balance: number }>;
  listLedger(userId: string, options: { limit: number; cursor?: string | null }): Promise<LedgerPage>;
  /** Pages charged (net of refunds) on each of `days` (`YYYY-MM-DD`, UTC), in the same order. */
  getDailyUsage(userId: string, days: string[]): Promise<number[]>;
}
