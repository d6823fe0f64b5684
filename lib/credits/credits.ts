import { randomBytes } from "node:crypto";
import { z } from "zod";
import { isApiError } from "@/lib/api/errors";
import { getEnv } from "@/lib/env";
import type { LedgerDraft, LedgerEntry, LedgerFormat, LedgerPage, LedgerReason, Store } from "@/lib/store";

export type { LedgerEntry, LedgerFormat, LedgerPage, LedgerReason } from "@/lib/store";

const DAY_MS = 24 * 60 * 60 * 1000;

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
 * Refund the reservations no one ended — a job (read in its request, or in the background) whose instance crashed or
 * was killed, or whose Redis reply was lost — once their deadline plus `graceMs` has passed: each gets a ledger entry
 * `expired`. A job read in its request (no file stored) is ended here, `failed`, by the job's own end step: its
 * `expired` entry names its request (as its `ocr` entry does), and the account's job list and queued pages no longer
 * count it as waiting — no one else would ever end it. A background job's reservation is released under the job's id
 * (the job is ended, and its webhook announced, by whoever looks at it next). Safe to run from any number of
 * instances at once: each reservation is refunded exactly once (the release and the end are atomic and close it).
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
    const read = await endAbandonedRead(store, requestId);
    if (read !== null) {
      if (read > 0) {
        refunded++;
        credits += read;
      }
      continue;
    }
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

/**
 * End `jobId` if it is a job read in its request (no file stored, no webhook) and still active: `failed`, everything
 * reserved refunded as `expired` under its request's id. The credits refunded, or null when it is not such a job (or
 * it ended meanwhile: the release then finds the reservation closed).
 */
async function endAbandonedRead(store: Store, jobId: string): Promise<number | null> {
  if (!jobId.startsWith("job_")) return null;
  const job = await store.jobs.getJob(jobId);
  if (!job || job.sourceChunks > 0 || job.webhookUrl || (job.status !== "queued" && job.status !== "running"))
    return null;
  const now = new Date();
  const ending = store.jobs.endJob(jobId, {
    end: "fail",
    error: JSON.stringify({
      code: "internal_error",
      message: "The process reading this document in its request stopped before it answered; nothing was charged",
    }),
    now: now.getTime(),
    resultTtlMs: getEnv().JOB_RESULT_TTL * 1000,
    entry: draft("expired", { requestId: job.requestId, keyId: job.keyId, format: job.format }),
    day: dayOf(now),
  });
  // Not ended (a store error, or it ended meanwhile): the release still refunds what is reserved, exactly once.
  const ended = await ending.catch(() => null);
  return ended ? ended.refunded : null;
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
