import {
  MAILBOX_MAX_MESSAGES,
  RESERVATION_TTL_MS,
  TOMBSTONE_TTL_MS,
  parseReservationMember,
  reservationMember,
  ledgerEntrySchema,
  type ApiKeyRecord,
  type BackoffState,
  type IdempotencyRecord,
  type LedgerDraft,
  type LedgerEntry,
  type SessionRecord,
  type Store,
  type UserRecord,
} from "./types";

interface Expiring<T> {
  value: T;
  /** Epoch ms; Infinity for no expiry. */
  expiresAt: number;
}

/** A map whose entries vanish after their TTL (checked when read, swept when written). */
class ExpiringMap<T> {
  private readonly entries = new Map<string, Expiring<T>>();
  private writes = 0;

  get(key: string): T | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    if (entry.expiresAt <= Date.now()) {
      this.entries.delete(key);
      return undefined;
    }
    return entry.value;
  }

  ttl(key: string): number | null {
    const entry = this.entries.get(key);
    if (!entry || entry.expiresAt <= Date.now()) return null;
    return Number.isFinite(entry.expiresAt) ? entry.expiresAt - Date.now() : null;
  }

  set(key: string, value: T, ttlMs?: number): void {
    this.entries.set(key, { value, expiresAt: ttlMs === undefined ? Infinity : Date.now() + ttlMs });
    if (++this.writes % 1_000 === 0) this.sweep();
  }

  expire(key: string, ttlMs: number): void {
    const entry = this.entries.get(key);
    if (entry) entry.expiresAt = Date.now() + ttlMs;
  }

  delete(key: string): void {
    this.entries.delete(key);
  }

  private sweep(): void {
    const now = Date.now();
    for (const [key, entry] of this.entries) if (entry.expiresAt <= now) this.entries.delete(key);
  }
}

/**
 * The embedded store: the same contract as the redis adapter, for one process. The default when no Redis is
 * configured, so `npm run dev` works on a fresh machine; everything is lost when the process exits.
 * Every method finishes its changes before its first `await`, so each one is atomic like its Lua counterpart.
 */
export function createMemoryStore(): Store {
  const users = new Map<string, UserRecord>();
  const emails = new Map<string, string>();
  const sessions = new ExpiringMap<SessionRecord>();
  const activeKeys = new Map<string, Map<string, ApiKeyRecord>>();
  const revokedKeys = new Map<string, Map<string, ApiKeyRecord>>();
  const keyIndex = new Map<string, { record: ApiKeyRecord; lastUsedMs: number | null }>();
  const balances = new Map<string, number>();
  const ledgers = new Map<string, LedgerEntry[]>();
  const usage = new Map<string, Map<string, number>>();
  /** Pages reserved while open, `closed` after release (a tombstone: see the Lua scripts). */
  const reservations = new ExpiringMap<number | "closed">();
  /** Open reservations: member → deadline. */
  const openReservations = new Map<string, number>();
  const idempotency = new ExpiringMap<IdempotencyRecord>();
  const rateWindows = new ExpiringMap<number>();
  const backoffs = new ExpiringMap<BackoffState>();
  const mailboxOpen = new ExpiringMap<true>();
  const mailboxes = new ExpiringMap<string[]>();

  const appendLedger = (userId: string, entry: LedgerEntry) => {
    const ledger = ledgers.get(userId) ?? [];
    ledger.push(ledgerEntrySchema.parse(entry));
    ledgers.set(userId, ledger);
  };
  const entry = (draft: LedgerDraft, amounts: { balanceAfter: number; delta: number; pages?: number }): LedgerEntry => ({
    ...amounts,
    ...draft,
  });
  const addUsage = (userId: string, day: string, pages: number) => {
    const days = usage.get(userId) ?? new Map<string, number>();
    days.set(day, (days.get(day) ?? 0) + pages);
    usage.set(userId, days);
  };
  const reservationKey = (userId: string, requestId: string) => `${userId}:${requestId}`;

  return {
    kind: "memory",

    async ping() {},
    async close() {},

    async createUser({ user, signupCredits, signupEntry }) {
      if (emails.has(user.email)) return false;
      emails.set(user.email, user.id);
      users.set(user.id, { ...user });
      if (signupCredits > 0) {
        const balance = (balances.get(user.id) ?? 0) + signupCredits;
        balances.set(user.id, balance);
        appendLedger(user.id, entry(signupEntry, { balanceAfter: balance, delta: signupCredits }));
      }
      return true;
    },

    async getUser(userId) {
      const user = users.get(userId);
      return user ? { ...user } : null;
    },

    async getUserIdByEmail(email) {
      return emails.get(email) ?? null;
    },

    async createSession(sessionKey, session, ttlMs) {
      sessions.set(sessionKey, { ...session }, ttlMs);
    },

    async getSession(sessionKey) {
      const session = sessions.get(sessionKey);
      return session ? { ...session } : null;
    },

    async deleteSession(sessionKey) {
      sessions.delete(sessionKey);
    },

    async createApiKey(record, maxActive) {
      const keys = activeKeys.get(record.userId) ?? new Map<string, ApiKeyRecord>();
      if (keys.size >= maxActive) return false;
      keys.set(record.id, { ...record });
      activeKeys.set(record.userId, keys);
      keyIndex.set(record.hash, { record: { ...record }, lastUsedMs: null });
      return true;
    },

    async listApiKeys(userId) {
      const active = [...(activeKeys.get(userId)?.values() ?? [])].map((record) => {
        const lastUsedMs = keyIndex.get(record.hash)?.lastUsedMs ?? null;
        return { ...record, lastUsedAt: lastUsedMs === null ? null : new Date(lastUsedMs).toISOString() };
      });
      const revoked = [...(revokedKeys.get(userId)?.values() ?? [])].map((record) => ({ ...record }));
      return [...active, ...revoked];
    },

    async resolveApiKey(hash, now, touchIntervalMs) {
      const indexed = keyIndex.get(hash);
      if (!indexed) return null;
      const { record, lastUsedMs } = indexed;
      if (now.getTime() - (lastUsedMs ?? 0) >= touchIntervalMs) indexed.lastUsedMs = now.getTime();
      return {
        keyId: record.id,
        userId: record.userId,
        name: record.name,
        start: record.start,
        lastUsedAt: lastUsedMs === null ? null : new Date(lastUsedMs).toISOString(),
      };
    },

    async revokeApiKey(userId, keyId, revokedAt) {
      const record = activeKeys.get(userId)?.get(keyId);
      if (!record) return false;
      activeKeys.get(userId)?.delete(keyId);
      const lastUsedMs = keyIndex.get(record.hash)?.lastUsedMs ?? null;
      const revoked = revokedKeys.get(userId) ?? new Map<string, ApiKeyRecord>();
      revoked.set(keyId, { ...record, lastUsedAt: lastUsedMs === null ? null : new Date(lastUsedMs).toISOString(), revokedAt });
      revokedKeys.set(userId, revoked);
      keyIndex.delete(record.hash);
      return true;
    },

    async getBalance(userId) {
      return balances.get(userId) ?? 0;
    },

    async reserveCredits({ userId, requestId, pages, entry: draft, day, deadline }) {
      const balance = balances.get(userId) ?? 0;
      const id = reservationKey(userId, requestId);
      if (reservations.get(id) !== undefined) return { ok: false, balance, duplicate: true };
      if (balance < pages) return { ok: false, balance };
      const after = balance - pages;
      balances.set(userId, after);
      appendLedger(userId, entry(draft, { balanceAfter: after, delta: -pages, pages }));
      addUsage(userId, day, pages);
      reservations.set(id, pages, RESERVATION_TTL_MS);
      openReservations.set(reservationMember(userId, requestId), deadline);
      return { ok: true, balance: after };
    },

    async releaseCredits({ userId, requestId, pages, entry: draft, day }) {
      const id = reservationKey(userId, requestId);
      const reserved = reservations.get(id);
      const refund = Math.min(pages, typeof reserved === "number" ? reserved : 0);
      reservations.set(id, "closed", TOMBSTONE_TTL_MS);
      openReservations.delete(reservationMember(userId, requestId));
      const balance = balances.get(userId) ?? 0;
      if (refund <= 0) return { refunded: 0, balance };
      const after = balance + refund;
      balances.set(userId, after);
      appendLedger(userId, entry(draft, { balanceAfter: after, delta: refund, pages: refund }));
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

    async grantCredits({ userId, credits, entry: draft }) {
      const after = (balances.get(userId) ?? 0) + credits;
      balances.set(userId, after);
      appendLedger(userId, entry(draft, { balanceAfter: after, delta: credits }));
      return { balance: after };
    },

    async listLedger(userId, { limit, cursor }) {
      const ledger = ledgers.get(userId) ?? [];
      const parsed = cursor ? Number.parseInt(cursor, 10) : -1;
      const before = !Number.isFinite(parsed) || parsed < 0 || parsed > ledger.length ? ledger.length : parsed;
      const first = Math.max(0, before - limit);
      return {
        entries: ledger.slice(first, before).reverse().map((item) => ({ ...item })),
        nextCursor: first > 0 ? String(first) : null,
      };
    },

    async getDailyUsage(userId, days) {
      const byDay = usage.get(userId);
      return days.map((day) => Math.max(0, byDay?.get(day) ?? 0));
    },

    async claimIdempotency(scope, claim, leaseMs) {
      const existing = idempotency.get(scope);
      if (existing) return { claimed: false, record: { ...existing } };
      idempotency.set(scope, { state: "in-progress", ...claim }, leaseMs);
      return { claimed: true };
    },

    async completeIdempotency(scope, token, response, ttlMs) {
      const existing = idempotency.get(scope);
      if (!existing || existing.token !== token) return false;
      idempotency.set(scope, { ...existing, state: "done", response }, ttlMs);
      return true;
    },

    async releaseIdempotency(scope, token) {
      const existing = idempotency.get(scope);
      if (!existing || existing.token !== token || existing.state !== "in-progress") return false;
      idempotency.delete(scope);
      return true;
    },

    async getIdempotency(scope) {
      const existing = idempotency.get(scope);
      return existing ? { ...existing } : null;
    },

    async getIdempotencyTtl(scope) {
      return idempotency.ttl(scope);
    },

    async rateLimit({ bucket, identifier, limit, windowMs, weight = 1 }) {
      // Same algorithm as @upstash/ratelimit's fixedWindow, which the redis adapter uses.
      const window = Math.floor(Date.now() / windowMs);
      const id = `${bucket}:${identifier}:${window}`;
      const count = (rateWindows.get(id) ?? 0) + weight;
      rateWindows.set(id, count, windowMs);
      return { success: count <= limit, limit, remaining: Math.max(0, limit - count), reset: (window + 1) * windowMs };
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

    async openMailbox(id, ttlMs) {
      mailboxOpen.set(id, true, ttlMs);
      mailboxes.expire(id, ttlMs);
    },

    async hasMailbox(id) {
      return mailboxOpen.get(id) === true;
    },

    async pushMailbox(id, message, ttlMs) {
      if (!mailboxOpen.get(id)) return false;
      const messages = [...(mailboxes.get(id) ?? []), message].slice(-MAILBOX_MAX_MESSAGES);
      mailboxes.set(id, messages, ttlMs);
      return true;
    },

    async drainMailbox(id) {
      const messages = mailboxes.get(id) ?? [];
      mailboxes.delete(id);
      return messages;
    },

    async closeMailbox(id) {
      mailboxOpen.delete(id);
      mailboxes.delete(id);
    },
  };
}
