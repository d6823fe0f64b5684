import { createHash, randomBytes } from "node:crypto";
import type { Store } from "@/lib/store";

/*
 * Small records that MCP calls leave for later calls, kept in the store with an expiry: the job a keyed `tools/call`
 * started (so that its retry finds it), and the job a running call reads (held while it runs, so that its client's
 * `notifications/cancelled` finds it: ./running-calls.ts). They ride on the idempotency port's claim/complete (a record that, once written,
 * is neither overwritten nor extended, and expires by itself) under scopes of their own: `mcp:<kind>:<account>:<hash>`,
 * which no `Idempotency-Key` scope can be (those are `<account>:<hash>`). docs/decisions.md, "MCP: a keyed call's job".
 */

/** A claim that is never completed blocks its scope this long (a write is claim then complete, at once). */
const WRITE_LEASE_MS = 60_000;
const WRITTEN = "kept";

function scopeOf(kind: string, userId: string, name: string): string {
  return `mcp:${kind}:${userId}:${createHash("sha256").update(name).digest("hex")}`;
}

/** Keep `value` under (`kind`, `userId`, `name`) for `ttlMs`. False when a record is already there (it is kept). */
export async function keepRecord(
  store: Store,
  kind: string,
  userId: string,
  name: string,
  value: string,
  ttlMs: number,
): Promise<boolean> {
  const idempotency = store.idempotency;
  const scope = scopeOf(kind, userId, name);
  const token = randomBytes(12).toString("base64url");
  const claim = await idempotency.claimIdempotency(
    scope,
    { fingerprint: WRITTEN, token, createdAt: new Date().toISOString() },
    WRITE_LEASE_MS,
  );
  if (!claim.claimed) return false;
  return idempotency.completeIdempotency(scope, token, value, ttlMs);
}

/** The record kept under (`kind`, `userId`, `name`), or null (never kept, or expired). */
export async function readRecord(store: Store, kind: string, userId: string, name: string): Promise<string | null> {
  const record = await peekRecord(store, kind, userId, name);
  return record?.state === "done" && record.fingerprint === WRITTEN ? (record.response ?? null) : null;
}

/**
 * What the idempotency store holds under (`kind`, `userId`, `name`), or null for nothing: a read is a claim that finds
 * the record, and one that finds nothing is given back at once.
 */
async function peekRecord(store: Store, kind: string, userId: string, name: string) {
  const idempotency = store.idempotency;
  const scope = scopeOf(kind, userId, name);
  const token = randomBytes(12).toString("base64url");
  const claim = await idempotency.claimIdempotency(
    scope,
    { fingerprint: "read", token, createdAt: new Date().toISOString() },
    WRITE_LEASE_MS,
  );
  if (!claim.claimed) return claim.record;
  await idempotency.releaseIdempotency(scope, token).catch(() => undefined);
  return null;
}

/**
 * Hold `value` under (`kind`, `userId`, `name`) while something runs, at most `ttlMs`: a record that `release()`
 * removes (an in-progress claim whose fingerprint is the value). Null when another holds it (that one stays).
 */
export async function holdRecord(
  store: Store,
  kind: string,
  userId: string,
  name: string,
  value: string,
  ttlMs: number,
): Promise<{ release(): Promise<void> } | null> {
  const idempotency = store.idempotency;
  const scope = scopeOf(kind, userId, name);
  const token = randomBytes(12).toString("base64url");
  const claim = await idempotency.claimIdempotency(
    scope,
    { fingerprint: `held:${value}`, token, createdAt: new Date().toISOString() },
    ttlMs,
  );
  if (!claim.claimed) return null;
  return {
    release: async () => {
      await idempotency.releaseIdempotency(scope, token).catch(() => undefined);
    },
  };
}

/** The value held under (`kind`, `userId`, `name`) by {@link holdRecord}, or null. */
export async function readHeld(store: Store, kind: string, userId: string, name: string): Promise<string | null> {
  const record = await peekRecord(store, kind, userId, name);
  if (record === null) return null;
  const { state, fingerprint } = record;
  return state === "in-progress" && fingerprint.startsWith("held:") ? fingerprint.slice("held:".length) : null;
}
