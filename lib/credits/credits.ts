import { randomBytes } from "node:crypto";
import { z } from "zod";
import { getStore, type LedgerDraft, type LedgerPage, type LedgerReason } from "@/lib/store";

export type { LedgerEntry, LedgerPage, LedgerReason } from "@/lib/store";

/** How long an unsettled reservation can still be settled or refunded (well past the request deadline). */
const RESERVATION_TTL_MS = 60 * 60 * 1000;
const DAY_MS = 24 * 60 * 60 * 1000;

const pagesSchema = z.number().int().min(1).max(100_000);
const refundPagesSchema = z.number().int().min(0).max(100_000);
const grantSchema = z.number().int().min(1).max(1_000_000_000);

const newLedgerId = () => `led_${randomBytes(12).toString("base64url")}`;
const dayOf = (date: Date) => date.toISOString().slice(0, 10);

function draft(reason: LedgerReason, refs: { requestId?: string; keyId?: string } = {}): LedgerDraft {
  const entry: LedgerDraft = { id: newLedgerId(), at: new Date().toISOString(), reason };
  if (refs.requestId) entry.requestId = refs.requestId;
  if (refs.keyId) entry.keyId = refs.keyId;
  return entry;
}

export type ReserveResult = { ok: true; balance: number } | { ok: false; balance: number };

/**
 * Take `pages` credits before any OCR work, atomically (concurrent requests never overdraw), with an `ocr`
 * ledger entry. `{ ok: false }` (nothing charged) when the balance is below `pages` — answer 402.
 * Throws `unavailable` when the store is down: no OCR is done for free.
 */
export async function reserveCredits({
  userId,
  pages,
  requestId,
  keyId,
}: {
  userId: string;
  pages: number;
  requestId: string;
  keyId?: string;
}): Promise<ReserveResult> {
  const result = await getStore().reserveCredits({
    userId,
    requestId,
    pages: pagesSchema.parse(pages),
    entry: draft("ocr", { requestId, keyId }),
    day: dayOf(new Date()),
    reservationTtlMs: RESERVATION_TTL_MS,
  });
  return result.ok ? { ok: true, balance: result.balance } : { ok: false, balance: result.balance };
}

/**
 * After the work: give back `reserved − used` as a `refund` entry (nothing when equal) and close the reservation.
 * Safe to call twice: only what is still reserved for `requestId` can come back.
 */
export async function settleCredits({
  userId,
  requestId,
  keyId,
  reserved,
  used,
}: {
  userId: string;
  requestId: string;
  keyId?: string;
  reserved: number;
  used: number;
}): Promise<{ refunded: number; balance: number }> {
  const unused = refundPagesSchema.parse(Math.max(0, reserved - used));
  return getStore().releaseCredits({
    userId,
    requestId,
    pages: unused,
    entry: draft("refund", { requestId, keyId }),
    day: dayOf(new Date()),
  });
}

/** The request failed: give back what it reserved (at most `pages`), as a `refund` entry. */
export async function refundCredits({
  userId,
  requestId,
  keyId,
  pages,
}: {
  userId: string;
  requestId: string;
  keyId?: string;
  pages: number;
}): Promise<{ refunded: number; balance: number }> {
  return getStore().releaseCredits({
    userId,
    requestId,
    pages: refundPagesSchema.parse(pages),
    entry: draft("refund", { requestId, keyId }),
    day: dayOf(new Date()),
  });
}

/** Add credits (operators, the admin CLI) with a `grant` ledger entry. */
export async function grantCredits({ userId, credits }: { userId: string; credits: number }): Promise<{ balance: number }> {
  return getStore().grantCredits({ userId, credits: grantSchema.parse(credits), entry: draft("grant") });
}

export async function getBalance(userId: string): Promise<number> {
  return getStore().getBalance(userId);
}

/** Ledger entries newest first; pass `nextCursor` back for older ones. `limit` is clamped to 1–100 (default 20). */
export async function listLedger(
  userId: string,
  { limit = 20, cursor }: { limit?: number; cursor?: string | null } = {},
): Promise<LedgerPage> {
  const safeLimit = Math.min(100, Math.max(1, Math.trunc(limit) || 20));
  const safeCursor = cursor && /^\d+$/.test(cursor) ? cursor : null;
  return getStore().listLedger(userId, { limit: safeLimit, cursor: safeCursor });
}

export interface DailyUsage {
  /** `YYYY-MM-DD` (UTC). */
  day: string;
  /** Pages charged that day, net of refunds. */
  pages: number;
}

/** Pages used per day for the last `days` days (UTC), oldest first, today last. */
export async function getDailyUsage(userId: string, { days = 30, now = new Date() }: { days?: number; now?: Date } = {}): Promise<DailyUsage[]> {
  const dates = Array.from({ length: days }, (_, index) => dayOf(new Date(now.getTime() - (days - 1 - index) * DAY_MS)));
  const pages = await getStore().getDailyUsage(userId, dates);
  return dates.map((day, index) => ({ day, pages: pages[index] ?? 0 }));
}
