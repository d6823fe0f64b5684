import { randomBytes } from "node:crypto";
import { z } from "zod";
import type { Env } from "@/lib/env";
import { ApiError, isApiError } from "@/lib/api/errors";
import type { LedgerDraft, LedgerEntry, LedgerFormat, LedgerPage, LedgerReason, Store } from "@/lib/store";

export type { LedgerEntry, LedgerFormat, LedgerPage, LedgerReason } from "@/lib/store";

const DAY_MS = 24 * 60 * 60 * 1000;

const pagesSchema = z.number().int().min(1).max(100_000);
const refundPagesSchema = z.number().int().min(0).max(100_000);
const grantSchema = z.number().int().min(1).max(1_000_000_000);

const newLedgerId = () => `led_${randomBytes(12).toString("base64url")}`;
const dayOf = (date: Date) => date.toISOString().slice(0, 10);

/** What an entry refers to: the request, the key that made it, and the output format it asked for. */
interface LedgerRefs {
  requestId?: string;
  keyId?: string;
  format?: LedgerFormat;
}

function draft(reason: LedgerReason, refs: LedgerRefs = {}): LedgerDraft {
  const entry: LedgerDraft = { id: newLedgerId(), at: new Date().toISOString(), reason };
  if (refs.requestId) entry.requestId = refs.requestId;
  if (refs.keyId) entry.keyId = refs.keyId;
  if (refs.format) entry.format = refs.format;
  return entry;
}

type ReserveResult = { ok: true; balance: number } | { ok: false; balance: number };

/**
 * A reservation's deadline (epoch ms; an unsettled reservation is refunded by the sweeper after it): the request's,
 * or else `REQUEST_DEADLINE_MS` of the configuration `env` from now.
 */
type ReserveDeadline =
  | { deadline: number; env?: Pick<Env, "REQUEST_DEADLINE_MS"> }
  | { deadline?: undefined; env: Pick<Env, "REQUEST_DEADLINE_MS"> };

/**
 * Take `pages` credits before any OCR work, atomically (concurrent requests never overdraw), with an `ocr`
 * ledger entry. `{ ok: false }` (nothing charged) when the balance is below `pages` — answer 402.
 * Throws `unavailable` when the store is down: no OCR is done for free.
 *
 * A reserve whose reply is lost (a client-side timeout while Redis still runs the script, a dropped connection) is
 * reconciled at once by request id: the reservation, if the script did run, is released — refunded and closed, so
 * that a reserve arriving even later is refused — and then `unavailable` is thrown. The service never both charges
 * and refuses. If that release fails too, the reservation (if any) is in the open index with its deadline, and the
 * sweeper refunds it (`sweepExpiredReservations`).
 */
export async function reserveCredits(
  store: Store,
  {
    userId,
    pages,
    requestId,
    keyId,
    format,
    ...when
  }: {
    userId: string;
    pages: number;
    requestId: string;
    keyId?: string;
    /** The output format the request asked for, recorded on its ledger entries. */
    format?: LedgerFormat;
  } & ReserveDeadline,
): Promise<ReserveResult> {
  const deadline = when.deadline !== undefined ? when.deadline : Date.now() + when.env.REQUEST_DEADLINE_MS;
  const { credits } = store;
  const count = pagesSchema.parse(pages);
  let result: Awaited<ReturnType<typeof credits.reserveCredits>>;
  try {
    result = await credits.reserveCredits({
      userId,
      requestId,
      pages: count,
      entry: draft("ocr", { requestId, keyId, format }),
      day: dayOf(new Date()),
      deadline,
    });
  } catch (error) {
    await credits
      .releaseCredits({
        userId,
        requestId,
        pages: count,
        entry: draft("refund", { requestId, keyId, format }),
        day: dayOf(new Date()),
      })
      .then(
        ({ refunded }) => {
          if (refunded > 0)
            console.error(`[${requestId}] a reserve's reply was lost after it ran: ${refunded} credits refunded`);
        },
        () =>
          console.error(
            `[${requestId}] reserve failed and could not be reconciled now; the reservation sweep will refund it`,
          ),
      );
    throw error;
  }
  if (result.duplicate) {
    // Request ids are unique per request: this is a bug, not a client error. Nothing was charged.
    throw new ApiError("internal_error", "This request was already charged", {
      cause: new Error(`duplicate reservation ${requestId}`),
    });
  }
  return result.ok ? { ok: true, balance: result.balance } : { ok: false, balance: result.balance };
}

/**
 * After the work: give back `reserved − used` as a `refund` entry (nothing when equal) and close the reservation.
 * Safe to call twice: only what is still reserved for `requestId` can come back.
 */
export async function settleCredits(
  store: Store,
  {
    userId,
    requestId,
    keyId,
    format,
    reserved,
    used,
  }: {
    userId: string;
    requestId: string;
    keyId?: string;
    format?: LedgerFormat;
    reserved: number;
    used: number;
  },
): Promise<{ refunded: number; balance: number }> {
  const unused = refundPagesSchema.parse(Math.max(0, reserved - used));
  return store.credits.releaseCredits({
    userId,
    requestId,
    pages: unused,
    entry: draft("refund", { requestId, keyId, format }),
    day: dayOf(new Date()),
  });
}

/** The request failed: give back what it reserved (at most `pages`), as a `refund` entry. */
export async function refundCredits(
  store: Store,
  {
    userId,
    requestId,
    keyId,
    format,
    pages,
  }: {
    userId: string;
    requestId: string;
    keyId?: string;
    format?: LedgerFormat;
    pages: number;
  },
): Promise<{ refunded: number; balance: number }> {
  return store.credits.releaseCredits({
    userId,
    requestId,
    pages: refundPagesSchema.parse(pages),
    entry: draft("refund", { requestId, keyId, format }),
    day: dayOf(new Date()),
  });
}

/** How long after its deadline an unsettled reservation is left to its own request before the sweeper takes it. */
const SWEEP_GRACE_MS = 30_000;

interface SweepResult {
  /** Overdue reservations found. */
  found: number;
  /** Of those, the ones that still held credits (each an `expired` ledger entry). */
  refunded: number;
  credits: number;
}

/**
 * Refund the reservations whose request never settled them — their instance crashed or was killed — once their
 * deadline plus `graceMs` has passed: each gets a ledger entry `expired` with its request id. Safe to run from any
 * number of instances at once: each reservation is refunded exactly once (the release is atomic and closes it).
 */
export async function sweepExpiredReservations(
  store: Store,
  { now = Date.now(), graceMs = SWEEP_GRACE_MS, limit = 200 }: { now?: number; graceMs?: number; limit?: number } = {},
): Promise<SweepResult> {
  const { credits: ledger } = store;
  const overdue = await ledger.listOverdueReservations(now - graceMs, limit);
  let refunded = 0;
  let credits = 0;
  for (const { userId, requestId } of overdue) {
    const released = await ledger.releaseCredits({
      userId,
      requestId,
      pages: 100_000,
      entry: draft("expired", { requestId }),
      day: dayOf(new Date()),
    });
    if (released.refunded > 0) {
      refunded++;
      credits += released.refunded;
    }
  }
  return { found: overdue.length, refunded, credits };
}

/** Open reservations whose deadline has passed (for `/api/health`): nonzero for long means nothing sweeps. */
export async function countOverdueReservations(store: Store, now = Date.now()): Promise<number> {
  return store.credits.countOverdueReservations(now);
}

const SWEEP_EVERY_MS = 30_000;
const SWEEP_KEY = Symbol.for("ocr-service.reservation-sweep");
type SweepHolder = { [SWEEP_KEY]?: number };

/**
 * Sweep at most once per 30 s per instance, never failing or delaying the caller: every keyed request calls this,
 * so as long as anyone uses the service, a crashed instance's reservations come back within a minute of their
 * deadline (the cron route covers quiet times).
 */
export function maybeSweepReservations(
  store: Store,
  schedule: (task: () => Promise<void>) => void = (task) => void task(),
): void {
  const holder = globalThis as SweepHolder;
  const now = Date.now();
  if (now - (holder[SWEEP_KEY] ?? 0) < SWEEP_EVERY_MS) return;
  holder[SWEEP_KEY] = now;
  schedule(async () => {
    try {
      const result = await sweepExpiredReservations(store, { now });
      if (result.refunded > 0)
        console.info(`[credits] sweep refunded ${result.credits} credits of ${result.refunded} expired reservations`);
    } catch (error) {
      console.warn(
        `[credits] reservation sweep failed (${isApiError(error) ? error.code : error instanceof Error ? error.name : "error"})`,
      );
    }
  });
}

/** Add credits (operators, the admin CLI) with a `grant` ledger entry. */
export async function grantCredits(
  store: Store,
  { userId, credits }: { userId: string; credits: number },
): Promise<{ balance: number }> {
  return store.credits.grantCredits({ userId, credits: grantSchema.parse(credits), entry: draft("grant") });
}

export async function getBalance(store: Store, userId: string): Promise<number> {
  return store.credits.getBalance(userId);
}

/** The store's own page size when the ledger is read through (a filter, the CSV export). */
const LEDGER_SCAN_PAGE = 100;
/** Most entries one filtered page looks through before it answers with what it found (and a cursor to go on). */
export const LEDGER_FILTER_SCAN_LIMIT = 1_000;

const safeCursorOf = (cursor: string | null | undefined) => (cursor && /^\d+$/.test(cursor) ? cursor : null);

/**
 * Ledger entries newest first; pass `nextCursor` back for older ones. `limit` is clamped to 1–100 (default 20).
 *
 * With `keyId`, only that key's entries: the ledger is read in pages of 100 until `limit` of them are found, or
 * {@link LEDGER_FILTER_SCAN_LIMIT} entries were looked at — then the page may hold fewer than `limit`, and
 * `nextCursor` goes on from where the search stopped (so a key with few entries in a long ledger costs a bounded
 * amount of work per page).
 */
export async function listLedger(
  store: Store,
  userId: string,
  { limit = 20, cursor, keyId }: { limit?: number; cursor?: string | null; keyId?: string | null } = {},
): Promise<LedgerPage> {
  const safeLimit = Math.min(100, Math.max(1, Math.trunc(limit) || 20));
  const { credits } = store;
  if (!keyId) return credits.listLedger(userId, { limit: safeLimit, cursor: safeCursorOf(cursor) });

  const entries: LedgerEntry[] = [];
  let next = safeCursorOf(cursor);
  let scanned = 0;
  for (;;) {
    const page = await credits.listLedger(userId, { limit: LEDGER_SCAN_PAGE, cursor: next });
    // The page holds list indexes first … first + length − 1, newest first.
    const first = page.nextCursor ? Number(page.nextCursor) : 0;
    for (const [offset, entry] of page.entries.entries()) {
      if (entry.keyId !== keyId) continue;
      entries.push(entry);
      if (entries.length === safeLimit) {
        const index = first + page.entries.length - 1 - offset;
        return { entries, nextCursor: index > 0 ? String(index) : null };
      }
    }
    scanned += page.entries.length;
    next = page.nextCursor;
    if (!next || scanned >= LEDGER_FILTER_SCAN_LIMIT) return { entries, nextCursor: next };
  }
}

/** Every ledger entry of `userId`, newest first (only `keyId`'s when given), read from the store 100 at a time. */
export async function* iterateLedger(
  store: Store,
  userId: string,
  { keyId }: { keyId?: string | null } = {},
): AsyncGenerator<LedgerEntry> {
  const { credits } = store;
  let cursor: string | null = null;
  do {
    const page: LedgerPage = await credits.listLedger(userId, { limit: LEDGER_SCAN_PAGE, cursor });
    for (const entry of page.entries) if (!keyId || entry.keyId === keyId) yield entry;
    cursor = page.nextCursor;
  } while (cursor);
}

export interface DailyUsage {
  /** `YYYY-MM-DD` (UTC). */
  day: string;
  /** Pages charged that day, net of refunds. */
  pages: number;
}

/** Pages used per day for the last `days` days (UTC), oldest first, today last. */
export async function getDailyUsage(
  store: Store,
  userId: string,
  { days = 30, now = new Date() }: { days?: number; now?: Date } = {},
): Promise<DailyUsage[]> {
  const dates = Array.from({ length: days }, (_, index) =>
    dayOf(new Date(now.getTime() - (days - 1 - index) * DAY_MS)),
  );
  const pages = await store.credits.getDailyUsage(userId, dates);
  return dates.map((day, index) => ({ day, pages: pages[index] ?? 0 }));
}
