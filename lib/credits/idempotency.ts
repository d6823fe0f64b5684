import { createHash, randomBytes } from "node:crypto";
import { z } from "zod";
import { ApiError } from "@/lib/api/errors";
import { JOB_ACCOUNT_BYTES_FACTOR, getEnv } from "@/lib/env";
import { actingApp } from "@/lib/keys";
import type { Store } from "@/lib/store";

/** A replayed request gets the stored response for 24 h (docs/api.md#idempotency-key). */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;
/**
 * How long an in-progress claim blocks retries. Longer than any request (deadline 55 s, function limit below
 * 300 s), shorter than 24 h: a claim whose function was killed mid-request must not block retries for a day.
 */
const IDEMPOTENCY_LEASE_MS = 5 * 60 * 1000;

/** `Idempotency-Key` header values: 1–255 visible ASCII characters. */
const idempotencyKeySchema = z
  .string()
  .regex(/^[\x21-\x7e]{1,255}$/, "Idempotency-Key must be 1–255 visible ASCII characters");

const storedResponseSchema = z.object({
  status: z.number().int(),
  headers: z.record(z.string(), z.string()),
  body: z.string(),
});
export type StoredResponse = z.infer<typeof storedResponseSchema>;

type IdempotencyClaim =
  /** Go ahead; finish with `completeIdempotencyKey` or, on failure, `releaseIdempotencyKey` with this token. */
  | { status: "claimed"; token: string }
  /** The same request is still running: answer 409 `conflict`. */
  | { status: "in-progress" }
  /** The key was used with a different request: answer 422 `idempotency_mismatch`. */
  | { status: "mismatch" }
  /** Done before: replay this response, charge nothing. */
  | { status: "replay"; response: StoredResponse };

/**
 * Scope per account, hashed so any header value makes a short, safe Redis key. A connected app (an OAuth access
 * token, lib/keys `actingApp`) has a scope of its own within the account: a stored answer of the account's API keys
 * — the text of their jobs — is not an app's to replay with the same key and body (issue 39, point 15).
 */
function scopeOf(userId: string, key: string): string {
  const app = actingApp();
  const hash = createHash("sha256").update(key).digest("hex");
  return app === null
    ? `${userId}:${hash}`
    : `${userId}:app:${createHash("sha256").update(app).digest("hex").slice(0, 16)}:${hash}`;
}

/** SHA-256 over the parts that make a request "the same" (e.g. method, path and raw body). */
export function fingerprintRequest(parts: Array<string | Uint8Array>): string {
  const hash = createHash("sha256");
  for (const part of parts) {
    const bytes = typeof part === "string" ? Buffer.from(part, "utf8") : part;
    hash.update(String(bytes.length)).update(":").update(bytes);
  }
  return hash.digest("hex");
}

/**
 * Claim an `Idempotency-Key` for this account. The first caller gets `claimed`; a concurrent retry sees
 * `in-progress`; after completion, retries with the same fingerprint get `replay`. Throws `invalid_request` for
 * a malformed key and `unavailable` when the store is down.
 */
export async function claimIdempotencyKey(
  store: Store,
  { userId, key, fingerprint }: { userId: string; key: string; fingerprint: string },
): Promise<IdempotencyClaim> {
  const parsedKey = idempotencyKeySchema.safeParse(key);
  if (!parsedKey.success)
    throw new ApiError("invalid_request", parsedKey.error.issues[0]?.message ?? "Invalid Idempotency-Key");
  const token = randomBytes(16).toString("base64url");
  const result = await store.idempotency.claimIdempotency(
    scopeOf(userId, parsedKey.data),
    { fingerprint, token, createdAt: new Date().toISOString() },
    IDEMPOTENCY_LEASE_MS,
  );
  if (result.claimed) return { status: "claimed", token };
  const { record } = result;
  if (record.fingerprint !== fingerprint) return { status: "mismatch" };
  if (record.state === "in-progress" || record.response === undefined) return { status: "in-progress" };
  return { status: "replay", response: storedResponseSchema.parse(JSON.parse(record.response)) };
}

/**
 * Store the response of a claimed request for replays (24 h). False when the claim had expired meanwhile. Its bytes
 * count against the account's cap on what it keeps (job files, renderings, kept answers: `maxAccountBytes`, default
 * the configuration's): past the cap, what is kept instead is a short `410 gone` saying the request was done and its
 * answer not kept, so a retry is still not run (nor charged) twice.
 */
export async function completeIdempotencyKey(
  store: Store,
  {
    userId,
    key,
    token,
    response,
    maxAccountBytes = JOB_ACCOUNT_BYTES_FACTOR * getEnv().MAX_JOB_URL_BYTES,
  }: { userId: string; key: string; token: string; response: StoredResponse; maxAccountBytes?: number },
): Promise<boolean> {
  const scope = scopeOf(userId, key);
  let stored = JSON.stringify(storedResponseSchema.parse(response));
  const counted = await store.jobs.keepBytes(userId, {
    name: `i:${scope.slice(userId.length + 1)}`,
    bytes: Buffer.byteLength(stored),
    ttlMs: IDEMPOTENCY_TTL_MS,
    maxAccountBytes,
  });
  if (!counted.ok) stored = JSON.stringify(notKept(response, Buffer.byteLength(stored), maxAccountBytes));
  return store.idempotency.completeIdempotency(scope, token, stored, IDEMPOTENCY_TTL_MS);
}

/** What a replay answers when the request's answer was past the account's cap on what it keeps. */
function notKept(response: StoredResponse, bytes: number, maxAccountBytes: number): StoredResponse {
  const mb = (n: number) => `${(n / 1_000_000).toFixed(1)} MB`;
  return {
    status: 410,
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      success: false,
      error: {
        code: "gone",
        message:
          `The request with this Idempotency-Key was done (answered ${response.status}), but its answer (${mb(bytes)}) ` +
          `was not kept for replays: this account already keeps as much as it may (${mb(maxAccountBytes)} of job ` +
          "files, results and answers, docs/api.md#limits). Nothing was charged now; send it with a new key to run " +
          "it again.",
      },
      requestId: "",
    }),
  };
}

/** Give up a claim (the request failed in a way worth retrying) so the next retry runs again. */
export async function releaseIdempotencyKey(
  store: Store,
  { userId, key, token }: { userId: string; key: string; token: string },
): Promise<boolean> {
  return store.idempotency.releaseIdempotency(scopeOf(userId, key), token);
}
