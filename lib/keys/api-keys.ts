import "server-only"; // creates and hashes API keys: never in a client bundle (Next fails the build)
import { createHash, randomBytes } from "node:crypto";
import { z } from "zod";
import { ApiError } from "@/lib/api/errors";
import type { ApiKeyRecord, Store } from "@/lib/store";
import { BASE58_PATTERN, encodeBase58 } from "./base58";
import { countKeyFailure, refuseBlockedAddress, type KeySettings } from "./rate-limit";

const API_KEY_PREFIX = "ocr_";
/** Characters of the key kept in clear to recognise it (`ocr_` + 8). */
const API_KEY_START_LENGTH = 12;
export const MAX_ACTIVE_KEYS = 50;
/** `lastUsedAt` is written at most this often per key. */
const LAST_USED_INTERVAL_MS = 60_000;

/** 32 random bytes in base58 are 43 or 44 characters (fewer only with leading zero bytes, astronomically rare). */
const API_KEY_FORMAT = new RegExp(`^${API_KEY_PREFIX}${BASE58_PATTERN}{40,44}$`);

const apiKeyNameSchema = z
  .string()
  .trim()
  .min(1, "Give the key a name, e.g. where it is used.")
  .max(64, "Use at most 64 characters for the name.");

/** A key as the settings page and the CLI may see it: no hash, and of course no key. */
const apiKeyInfoSchema = z.object({
  id: z.string(),
  name: z.string(),
  start: z.string(),
  createdAt: z.string(),
  lastUsedAt: z.string().nullable(),
  /** When it was revoked; null while it is active. */
  revokedAt: z.string().nullable(),
});
export type ApiKeyInfo = z.infer<typeof apiKeyInfoSchema>;

/** The account behind a valid key. */
export interface ApiKeyIdentity {
  userId: string;
  keyId: string;
  name: string;
  start: string;
  /** Previous use (null: first use). */
  lastUsedAt: string | null;
  /**
   * Set only for an OAuth access token on `/api/mcp` (lib/http/with-api-key.ts): the scopes it was granted, and then
   * `keyId` is its grant's id (a connected app). An API key has full access: undefined.
   */
  scopes?: readonly string[];
}

export function generateApiKey(): string {
  return API_KEY_PREFIX + encodeBase58(randomBytes(32));
}

export function hashApiKey(key: string): string {
  return createHash("sha256").update(key).digest("hex");
}

/**
 * Create a key named `name` for `userId`. The full key is in the result and nowhere else: show it once.
 * Throws `invalid_request` (bad name), `conflict` (already {@link MAX_ACTIVE_KEYS} active keys) or `unavailable`.
 */
export async function createApiKey(
  store: Store,
  { userId, name }: { userId: string; name: string },
): Promise<{ key: string; info: ApiKeyInfo }> {
  const parsedName = apiKeyNameSchema.safeParse(name);
  if (!parsedName.success) throw new ApiError("invalid_request", parsedName.error.issues[0]?.message ?? "Invalid name");
  const key = generateApiKey();
  const record: ApiKeyRecord = {
    id: `key_${randomBytes(12).toString("base64url")}`,
    userId,
    name: parsedName.data,
    start: key.slice(0, API_KEY_START_LENGTH),
    hash: hashApiKey(key),
    createdAt: new Date().toISOString(),
    lastUsedAt: null,
    revokedAt: null,
  };
  if (!(await store.keys.createApiKey(record, MAX_ACTIVE_KEYS))) {
    throw new ApiError(
      "conflict",
      `This account already has ${MAX_ACTIVE_KEYS} active API keys, the most allowed. Revoke one to create another.`,
    );
  }
  return { key, info: apiKeyInfoSchema.parse(record) };
}

/**
 * Every key of a user, without hashes: the active ones newest first, then the revoked ones (kept, to show and to
 * name the ledger's entries), most recently revoked first.
 */
export async function listApiKeys(store: Store, userId: string): Promise<ApiKeyInfo[]> {
  const records = await store.keys.listApiKeys(userId);
  const order = (record: ApiKeyRecord) => record.revokedAt ?? record.createdAt;
  return records
    .sort((a, b) => Number(a.revokedAt !== null) - Number(b.revokedAt !== null) || order(b).localeCompare(order(a)))
    .map((record) => apiKeyInfoSchema.parse(record));
}

/** The active keys of a user, newest first. */
export async function listActiveApiKeys(store: Store, userId: string): Promise<ApiKeyInfo[]> {
  return (await listApiKeys(store, userId)).filter((key) => key.revokedAt === null);
}

/**
 * The account a key belongs to, or null for an unknown, revoked or malformed key — one store round trip (which
 * also records the use, at most once a minute). Throws `unavailable` when the store is down: fail closed.
 */
export async function resolveApiKey(store: Store, key: string): Promise<ApiKeyIdentity | null> {
  if (!API_KEY_FORMAT.test(key)) return null;
  const resolved = await store.keys.resolveApiKey(hashApiKey(key), new Date(), LAST_USED_INTERVAL_MS);
  return resolved ? { ...resolved } : null;
}

/**
 * `resolveApiKey` for a request from client `address` (`addressLimitKey`), with failed lookups limited per address:
 * an address that sent more than `keys.keyFailuresPerAddressPerMinute` (30) unknown or revoked keys is refused with `429`
 * (`Retry-After`) for the rest of its minute, before its key is looked up, so it costs no store round trip. A
 * malformed key costs none either and is not counted. Null for a refused key; throws `unavailable` (store down).
 */
export async function resolveApiKeyFrom(
  store: Store,
  keys: Pick<KeySettings, "keyFailuresPerAddressPerMinute">,
  key: string,
  address: string,
): Promise<ApiKeyIdentity | null> {
  refuseBlockedAddress(keys, address);
  if (!API_KEY_FORMAT.test(key)) return null;
  const identity = await resolveApiKey(store, key);
  if (!identity) await countKeyFailure(store, keys, address);
  return identity;
}

/**
 * Whether the key behind `identity` is still active: one cheap store read, for what outlives the request that
 * authenticated it (an MCP SSE stream checks it while open, and closes once the key is revoked).
 */
export async function isApiKeyActive(
  store: Store,
  identity: Pick<ApiKeyIdentity, "userId" | "keyId">,
): Promise<boolean> {
  return store.keys.isApiKeyActive(identity.userId, identity.keyId);
}

/** Revoke one of the user's keys; effective on the next request. False when it is not an active key of theirs. */
export async function revokeApiKey(
  store: Store,
  { userId, keyId }: { userId: string; keyId: string },
): Promise<boolean> {
  return store.keys.revokeApiKey(userId, keyId, new Date().toISOString());
}

/**
 * Revoke the user's active key whose visible start is `start` (the admin CLI). Throws `not_found` when none
 * matches and `conflict` when several do.
 */
export async function revokeApiKeyByStart(
  store: Store,
  { userId, start }: { userId: string; start: string },
): Promise<ApiKeyInfo> {
  const matches = (await listActiveApiKeys(store, userId)).filter(
    (key) => key.start === start || key.start.startsWith(start),
  );
  const [match, ...more] = matches;
  if (!match) throw new ApiError("not_found", `No active key starting with ${start}.`);
  if (more.length > 0)
    throw new ApiError("conflict", `${matches.length} keys start with ${start}; give more characters.`);
  if (!(await revokeApiKey(store, { userId, keyId: match.id })))
    throw new ApiError("not_found", `No active key starting with ${start}.`);
  return match;
}
