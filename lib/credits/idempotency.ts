import { createHash, randomBytes } from "node:crypto";
import { z } from "zod";
import { ApiError } from "@/lib/api/errors";
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

/** Scope per account, hashed so any header value makes a short, safe Redis key. */
const scopeOf = (userId: string, key: string) => `${userId}:${createHash("sha256").update(key).digest("hex")}`;

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

/** Store the response of a claimed request for replays (24 h). False when the claim had expired meanwhile. */
export async function completeIdempotencyKey(
  store: Store,
  { userId, key, token, response }: { userId: string; key: string; token: string; response: StoredResponse },
): Promise<boolean> {
  return store.idempotency.completeIdempotency(
    scopeOf(userId, key),
    token,
    JSON.stringify(storedResponseSchema.parse(response)),
    IDEMPOTENCY_TTL_MS,
  );
}

/** Give up a claim (the request failed in a way worth retrying) so the next retry runs again. */
export async function releaseIdempotencyKey(
  store: Store,
  { userId, key, token }: { userId: string; key: string; token: string },
): Promise<boolean> {
  return store.idempotency.releaseIdempotency(scopeOf(userId, key), token);
}
