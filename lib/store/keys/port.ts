import { z } from "zod";

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

/** API keys (lib/keys is the caller): created, listed, resolved on every authenticated request, revoked. */
export interface ApiKeyStore {
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
  /** Whether `keyId` is an active (not revoked) key of `userId`: one cheap read, for holders of long-lived streams. */
  isApiKeyActive(userId: string, keyId: string): Promise<boolean>;
  /**
   * Revoke an active key of this user: its hash index is deleted at once (it never resolves again) and the record is
   * kept, with `revokedAt` and its last use, among the user's revoked keys. False when there is no such active key.
   */
  revokeApiKey(userId: string, keyId: string, revokedAt: string): Promise<boolean>;
}
