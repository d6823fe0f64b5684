import { z } from "zod";

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

/** Idempotency-Key records (lib/credits/idempotency.ts is the caller); `scope` = account + hashed key. */
export interface IdempotencyStore {
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
}
