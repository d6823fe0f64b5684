import { z } from "zod";

/*
 * The OAuth authorization server's records (lib/oauth is the caller). Codes and tokens are stored only under the
 * SHA-256 of their value, never the value itself, like API keys; a client is stored under the SHA-256 of its id
 * (a Client ID Metadata Document's id is a URL).
 */

/** A client: registered dynamically (RFC 7591, id `ocl_…`) or known by its metadata document (id = its https URL). */
export const oauthClientSchema = z.object({
  clientId: z.string().min(1).max(2048),
  kind: z.enum(["registered", "metadata-document"]),
  name: z.string().max(200),
  /** Compared exactly with an authorization request's `redirect_uri`. */
  redirectUris: z.array(z.string().max(2048)).min(1).max(20),
  clientUri: z.string().max(2048).nullable(),
  createdAt: z.iso.datetime(),
});
export type OAuthClientRecord = z.infer<typeof oauthClientSchema>;

/** An authorization code's request, kept until the code is redeemed or expires. */
export const oauthCodeSchema = z.object({
  clientId: z.string(),
  userId: z.string(),
  redirectUri: z.string(),
  /** PKCE S256 challenge (base64url SHA-256 of the verifier). */
  codeChallenge: z.string(),
  scopes: z.array(z.string()),
  /** The RFC 8707 resource the tokens will be bound to. */
  resource: z.string(),
  /** Epoch ms. */
  expiresAt: z.number().int(),
});
export type OAuthCodeRecord = z.infer<typeof oauthCodeSchema>;

/** An account's authorization of one client: a "connected app". Its tokens live only while it does. */
export const oauthGrantSchema = z.object({
  id: z.string().startsWith("grt_"),
  userId: z.string(),
  clientId: z.string(),
  clientName: z.string(),
  scopes: z.array(z.string()),
  resource: z.string(),
  createdAt: z.iso.datetime(),
  /** Last use of one of its access tokens (written at most once a minute); null: never used. */
  lastUsedAt: z.iso.datetime().nullable(),
});
export type OAuthGrantRecord = z.infer<typeof oauthGrantSchema>;

/** An access or refresh token. */
export const oauthTokenSchema = z.object({
  grantId: z.string(),
  userId: z.string(),
  clientId: z.string(),
  scopes: z.array(z.string()),
  resource: z.string(),
  /** Epoch ms. */
  expiresAt: z.number().int(),
});
export type OAuthTokenRecord = z.infer<typeof oauthTokenSchema>;

/** A grant by its account and id. */
export interface GrantRef {
  userId: string;
  grantId: string;
}

/**
 * What a single-use value (a code, a refresh token) looks up to: the record while unused; `{ reused }` after it was
 * used once (within its lifetime), naming the grant it led to (null: not known yet) so the caller can end that grant
 * (OAuth 2.1: a replayed code or refresh token revokes what it produced); null when unknown or expired.
 */
export type SingleUse<T> = { record: T } | { reused: GrantRef | null } | null;

/** The authorization server's store. */
export interface OAuthStore {
  /** Store a client; `ttlMs` null keeps it (a registration in use), else it expires (unused registration, cache). */
  saveClient(client: OAuthClientRecord, ttlMs: number | null): Promise<void>;
  getClient(clientId: string): Promise<OAuthClientRecord | null>;
  /** Keep a client that had a TTL (a registration once it is authorized). */
  keepClient(clientId: string): Promise<void>;

  saveCode(hash: string, code: OAuthCodeRecord, ttlMs: number): Promise<void>;
  findCode(hash: string): Promise<SingleUse<OAuthCodeRecord>>;
  /** Use the code: true once (it is deleted and remembered as used for `usedTtlMs`), false after. Atomic. */
  consumeCode(hash: string, usedTtlMs: number): Promise<boolean>;
  /** Record the grant a used code led to (for `findCode`'s `reused`). */
  markCodeRedeemed(hash: string, grant: GrantRef): Promise<void>;

  /**
   * The account's grant for `grant.clientId`, created with `grant.id` — or, when one exists, that one with its scopes,
   * resource and client name replaced (its id, creation time and tokens kept). Returns the grant as stored.
   */
  upsertGrant(grant: OAuthGrantRecord): Promise<OAuthGrantRecord>;
  listGrants(userId: string): Promise<OAuthGrantRecord[]>;
  isGrantActive(userId: string, grantId: string): Promise<boolean>;
  /** End a grant: none of its tokens works from now on. False when it is not an active grant of this user. */
  revokeGrant(userId: string, grantId: string): Promise<boolean>;

  saveAccessToken(hash: string, token: OAuthTokenRecord, ttlMs: number): Promise<void>;
  /**
   * The access token, or null (unknown, expired, or its grant revoked). Records the grant's use when the previous one
   * is older than `touchIntervalMs`.
   */
  resolveAccessToken(hash: string, now: number, touchIntervalMs: number): Promise<OAuthTokenRecord | null>;
  deleteAccessToken(hash: string): Promise<void>;

  saveRefreshToken(hash: string, token: OAuthTokenRecord, ttlMs: number): Promise<void>;
  /** The refresh token while unused; `reused` once rotated; null if unknown or expired (the caller checks the grant). */
  findRefreshToken(hash: string): Promise<SingleUse<OAuthTokenRecord>>;
  /** Use the refresh token: true once (deleted, remembered as used for `usedTtlMs`), false after. Atomic. */
  consumeRefreshToken(hash: string, usedTtlMs: number): Promise<boolean>;
}
