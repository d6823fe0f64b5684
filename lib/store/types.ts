import { z } from "zod";

/**
 * The records the store keeps, parsed with zod whenever they come back from Redis (a trust boundary: data
 * written by another version of the service, or by hand).
 */

export const userRecordSchema = z.object({
  id: z.string().startsWith("usr_"),
  email: z.string(),
  /** `scrypt$N$r$p$salt$hash` (see lib/accounts/password.ts). */
  passwordHash: z.string(),
  createdAt: z.iso.datetime(),
});
export type UserRecord = z.infer<typeof userRecordSchema>;

export const sessionRecordSchema = z.object({
  userId: z.string(),
  createdAt: z.iso.datetime(),
  expiresAt: z.iso.datetime(),
});
export type SessionRecord = z.infer<typeof sessionRecordSchema>;

/** An API key as stored: never the key itself, only its SHA-256 and a short visible start. */
export const apiKeyRecordSchema = z.object({
  id: z.string().startsWith("key_"),
  userId: z.string(),
  name: z.string(),
  /** The first characters of the key (`ocr_AbCdEfGh`), to recognise it in a list. */
  start: z.string(),
  /** SHA-256 of the full key, hex. */
  hash: z.string().regex(/^[0-9a-f]{64}$/),
  createdAt: z.iso.datetime(),
  lastUsedAt: z.iso.datetime().nullable(),
  /** When it was revoked (null: active). A revoked key stays listed, and never resolves again. */
  revokedAt: z.iso.datetime().nullable(),
});
export type ApiKeyRecord = z.infer<typeof apiKeyRecordSchema>;

/** What one key lookup returns: enough to authenticate a request. */
export const resolvedApiKeySchema = z.object({
  keyId: z.string(),
  userId: z.string(),
  name: z.string(),
  start: z.string(),
  /** Last use before this one (null: never used). */
  lastUsedAt: z.iso.datetime().nullable(),
});
type ResolvedApiKey = z.infer<typeof resolvedApiKeySchema>;

/** `expired`: a reservation its request never settled (the instance died), refunded by the sweeper. */
const ledgerReasonSchema = z.enum(["signup", "ocr", "refund", "grant", "expired"]);
export type LedgerReason = z.infer<typeof ledgerReasonSchema>;

/** The output format an OCR request asked for (the same three as `options.format`), recorded on its entries. */
const ledgerFormatSchema = z.enum(["text", "json", "markdown"]);
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

export interface RateLimitResult {
  success: boolean;
  limit: number;
  remaining: number;
  /** Epoch milliseconds when the current window ends. */
  reset: number;
  /** True when the store could not be asked and the request was let through (rate limits fail open). */
  failedOpen?: boolean;
}

/** Consecutive failures of one subject (a sign-in e-mail from one address) and until when it must wait. */
export interface BackoffState {
  failures: number;
  /** Epoch ms before which the next attempt is refused (0: not blocked). */
  until: number;
}

/** How failures turn into waits: `free` failures cost nothing, then `baseMs` doubling per failure up to `maxMs`. */
export interface BackoffPolicy {
  free: number;
  baseMs: number;
  maxMs: number;
  /** The record is forgotten this long after the last failure. */
  ttlMs: number;
}

export type StoreKind = "memory" | "redis-tcp" | "redis-rest";

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
 * Everything the service keeps, in domain terms. Implemented by the redis adapter (Upstash REST or TCP) and the
 * memory adapter; `tests/store/contract.test.ts` runs the same cases against each. Only lib/accounts, lib/keys,
 * lib/credits (and the MCP relay, for the mailbox) call it.
 *
 * Failures to reach Redis surface as `ApiError("unavailable")` — except `rateLimit`, which fails open.
 */
export interface Store {
  readonly kind: StoreKind;
  /** Throws `unavailable` when the store cannot be reached (health check). */
  ping(): Promise<void>;
  /** Release connections (CLI, tests). */
  close(): Promise<void>;

  // Users
  /**
   * Create a user, its e-mail index and (when `signupCredits` > 0) its starting balance with a `signup` ledger
   * entry, atomically. Returns false, writing nothing, when the e-mail is taken.
   */
  createUser(input: { user: UserRecord; signupCredits: number; signupEntry: LedgerDraft }): Promise<boolean>;
  getUser(userId: string): Promise<UserRecord | null>;
  getUserIdByEmail(email: string): Promise<string | null>;

  // Sessions (keyed by a hash of the session id; the id itself only lives in the cookie)
  createSession(sessionKey: string, session: SessionRecord, ttlMs: number): Promise<void>;
  getSession(sessionKey: string): Promise<SessionRecord | null>;
  deleteSession(sessionKey: string): Promise<void>;

  // API keys
  /**
   * Store a new key. Returns false, writing nothing, when the user already has `maxActive` active keys (revoked
   * ones do not count).
   */
  createApiKey(record: ApiKeyRecord, maxActive: number): Promise<boolean>;
  /**
   * Every key of a user: the active ones (`revokedAt` null), then the revoked ones (`revokedAt` set, `lastUsedAt` as
   * it was when revoked), each group in no particular order.
   */
  listApiKeys(userId: string): Promise<ApiKeyRecord[]>;
  /**
   * The key whose SHA-256 is `hash`, or null (unknown or revoked). One round trip; it also records the use
   * when the previous one is older than `touchIntervalMs`.
   */
  resolveApiKey(hash: string, now: Date, touchIntervalMs: number): Promise<ResolvedApiKey | null>;
  /**
   * Revoke an active key of this user: its hash index is deleted at once (it never resolves again) and the record is
   * kept, with `revokedAt` and its last use, among the user's revoked keys. False when there is no such active key.
   */
  revokeApiKey(userId: string, keyId: string, revokedAt: string): Promise<boolean>;

  // Credits
  getBalance(userId: string): Promise<number>;
  /**
   * Take `pages` credits if the balance allows (never below zero), append an `ocr` ledger entry, count the pages
   * for `day`'s usage, remember the reservation under `requestId` and index it by `deadline` among the open ones
   * (the sweeper refunds it if nobody settles it). `{ ok: false }` writes nothing. A request id that already has
   * (or had) a reservation is refused with `duplicate: true` and nothing written: a reserve whose reply was lost and
   * that arrives after its reconciling release, or a second reserve under one id, never charges.
   */
  reserveCredits(input: {
    userId: string;
    requestId: string;
    pages: number;
    entry: LedgerDraft;
    day: string;
    /** Epoch ms: the request's deadline, after which an unsettled reservation is the sweeper's. */
    deadline: number;
  }): Promise<{ ok: boolean; balance: number; duplicate?: boolean }>;
  /**
   * Give back up to `pages` of what `requestId` reserved (never more than is still reserved), with `entry`'s reason
   * (`refund`, or `expired` from the sweeper), and close the reservation: it leaves the open index and stays as a
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
  listOverdueReservations(before: number, limit: number): Promise<Array<{ userId: string; requestId: string; deadline: number }>>;
  /** How many open reservations have a deadline before `before` (epoch ms). */
  countOverdueReservations(before: number): Promise<number>;
  /** Add credits with a ledger entry (reason `grant` or `signup`). */
  grantCredits(input: { userId: string; credits: number; entry: LedgerDraft }): Promise<{ balance: number }>;
  listLedger(userId: string, options: { limit: number; cursor?: string | null }): Promise<LedgerPage>;
  /** Pages charged (net of refunds) on each of `days` (`YYYY-MM-DD`, UTC), in the same order. */
  getDailyUsage(userId: string, days: string[]): Promise<number[]>;

  // Idempotency (scope = account + Idempotency-Key)
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
  /** The record under `scope`, if any (tests, diagnostics). */
  getIdempotency(scope: string): Promise<IdempotencyRecord | null>;
  /** Milliseconds left on `scope`'s record; null when there is none. */
  getIdempotencyTtl(scope: string): Promise<number | null>;

  // Rate limits (fixed window)
  /** Count `weight` (default 1) hits against `identifier`'s fixed window of `limit` per `windowMs`; fails open. */
  rateLimit(input: { bucket: string; identifier: string; limit: number; windowMs: number; weight?: number }): Promise<RateLimitResult>;

  // Back-off (sign-in failures per e-mail and client address)
  /** The back-off record of `subject`, or null when it has none. */
  getBackoff(subject: string): Promise<BackoffState | null>;
  /** Count one more failure of `subject` at `now` and return its new state (atomic: concurrent failures all count). */
  recordBackoffFailure(subject: string, now: number, policy: BackoffPolicy): Promise<BackoffState>;
  /** Forget `subject`'s failures (a success). */
  clearBackoff(subject: string): Promise<void>;

  // Mailboxes (MCP legacy SSE relay: the POST instance pushes, the instance holding the stream drains)
  /** Create or extend a mailbox for `ttlMs`. */
  openMailbox(id: string, ttlMs: number): Promise<void>;
  /** Whether the mailbox is open (not expired, not closed). */
  hasMailbox(id: string): Promise<boolean>;
  /** Append a message; false (nothing stored) when the mailbox is not open. */
  pushMailbox(id: string, message: string, ttlMs: number): Promise<boolean>;
  /** Take every waiting message, oldest first. */
  drainMailbox(id: string): Promise<string[]>;
  closeMailbox(id: string): Promise<void>;
}

/** Upper bound of messages a mailbox holds; older ones are dropped (a stream that nobody drains). */
export const MAILBOX_MAX_MESSAGES = 1_000;
