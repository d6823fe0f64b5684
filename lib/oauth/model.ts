import OAuth2Server from "@node-oauth/oauth2-server";
import type { AllowList } from "@/lib/input";
import type { OAuthClientRecord, Store } from "@/lib/store";
import { ACCESS_TOKEN_TTL_S, ALL_SCOPES, CODE_TTL_S, REFRESH_TOKEN_TTL_S, type Scope } from "./config";
import { findClient } from "./clients";
import {
  ACCESS_TOKEN_PREFIX,
  CODE_PREFIX,
  REFRESH_TOKEN_PREFIX,
  hashSecret,
  isSecret,
  newGrantId,
  newSecret,
} from "./values";

type Model = OAuth2Server.AuthorizationCodeModel & OAuth2Server.RefreshTokenModel;

/** How long a used code or refresh token is remembered, so that a replay is recognised (and ends its grant). */
const USED_CODE_MEMORY_MS = 3_600_000;

/** The library's view of a client (`grants` and `redirectUris` are what it checks). */
function libraryClient(client: OAuthClientRecord): OAuth2Server.Client {
  return {
    id: client.clientId,
    name: client.name,
    kind: client.kind,
    redirectUris: client.redirectUris,
    grants: ["authorization_code", "refresh_token"],
  };
}

/** The scopes granted for a request: the known ones asked for (unknown ones are ignored), or all when none is known. */
export function grantedScopes(requested: readonly string[] | undefined): Scope[] {
  const known = ALL_SCOPES.filter((scope) => requested?.includes(scope));
  return known.length > 0 ? known : [...ALL_SCOPES];
}

/**
 * End a grant whose code or refresh token was replayed (OAuth 2.1 §4.1.3 and §4.3.1): whoever holds the copy loses
 * the tokens it produced, and so does the app, which signs in again.
 */
async function endReplayedGrant(store: Store, reused: { userId: string; grantId: string } | null): Promise<void> {
  if (reused) await store.oauth.revokeGrant(reused.userId, reused.grantId);
}

/**
 * @node-oauth/oauth2-server's model over `store` (docs/decisions.md#oauth-library): the library checks the grants
 * (code expiry, the client, the redirect URI, the PKCE verifier, the refresh token's client and scope) and this model
 * stores and looks up what it hands out, under the SHA-256 of each value. `allowHosts`: the configuration's
 * `URL_ALLOW_HOSTS`, parsed (`configuredAllowList(env)`), which a client's metadata document is fetched past;
 * `address`: the requester's client address, which such a fetch counts against (`findClient`).
 */
export const oauthModel = (store: Store, allowHosts: AllowList, address?: string): Model => ({
  async getClient(clientId) {
    const client = await findClient(store, clientId, allowHosts, address).catch(() => null);
    return client ? libraryClient(client) : null;
  },

  async validateScope(_user, _client, scope) {
    return grantedScopes(scope);
  },

  async validateRedirectUri(redirectUri, client) {
    // Exact comparison, string for string (OAuth 2.1 §4.1.1).
    const uris = Array.isArray(client.redirectUris) ? client.redirectUris : [client.redirectUris];
    return uris.includes(redirectUri);
  },

  async generateAuthorizationCode() {
    return newSecret(CODE_PREFIX);
  },
  async generateAccessToken() {
    return newSecret(ACCESS_TOKEN_PREFIX);
  },
  async generateRefreshToken() {
    return newSecret(REFRESH_TOKEN_PREFIX);
  },

  async saveAuthorizationCode(code, client, user) {
    // PKCE S256 is required; the authorization request was refused earlier without it (authorize.ts).
    if (!code.codeChallenge || code.codeChallengeMethod !== "S256")
      throw new OAuth2Server.InvalidRequestError("PKCE with S256 is required");
    await store.oauth.saveCode(
      hashSecret(code.authorizationCode),
      {
        clientId: client.id,
        userId: String(user.id),
        redirectUri: code.redirectUri,
        codeChallenge: code.codeChallenge,
        scopes: code.scope ?? [],
        resource: String(user.resource),
        expiresAt: code.expiresAt.getTime(),
      },
      CODE_TTL_S * 1000,
    );
    return { ...code, client, user };
  },

  async getAuthorizationCode(authorizationCode) {
    if (!isSecret(authorizationCode, CODE_PREFIX)) return null;
    const found = await store.oauth.findCode(hashSecret(authorizationCode));
    if (found === null) return null;
    if ("reused" in found) {
      await endReplayedGrant(store, found.reused);
      return null;
    }
    const code = found.record;
    return {
      authorizationCode,
      expiresAt: new Date(code.expiresAt),
      redirectUri: code.redirectUri,
      scope: code.scopes,
      client: { id: code.clientId, grants: ["authorization_code"] },
      user: { id: code.userId, resource: code.resource },
      codeChallenge: code.codeChallenge,
      codeChallengeMethod: "S256",
    };
  },

  async revokeAuthorizationCode(code) {
    return store.oauth.consumeCode(hashSecret(code.authorizationCode), USED_CODE_MEMORY_MS);
  },

  async saveToken(token, client, user) {
    const oauth = store.oauth;
    const userId = String(user.id);
    const resource = String(user.resource);
    const scopes = token.scope ?? [];
    let grantId: string;
    if (typeof token.authorizationCode === "string") {
      const known = await findClient(store, client.id, allowHosts, address);
      const grant = await oauth.upsertGrant({
        id: newGrantId(),
        userId,
        clientId: client.id,
        clientName: known?.name ?? client.id,
        scopes,
        resource,
        createdAt: new Date().toISOString(),
        lastUsedAt: null,
      });
      grantId = grant.id;
      await oauth.markCodeRedeemed(hashSecret(token.authorizationCode), { userId, grantId });
      // A registration is kept once someone authorized it.
      if (known?.kind === "registered") await oauth.keepClient(client.id);
    } else {
      grantId = String(user.grantId);
      if (!(await oauth.isGrantActive(userId, grantId)))
        throw new OAuth2Server.InvalidGrantError("Invalid grant: the app's access was revoked");
    }
    const now = Date.now();
    const record = { grantId, userId, clientId: client.id, scopes, resource };
    const accessExpires = now + ACCESS_TOKEN_TTL_S * 1000;
    const refreshExpires = now + REFRESH_TOKEN_TTL_S * 1000;
    await oauth.saveAccessToken(
      hashSecret(token.accessToken),
      { ...record, expiresAt: accessExpires },
      ACCESS_TOKEN_TTL_S * 1000,
    );
    if (token.refreshToken) {
      await oauth.saveRefreshToken(
        hashSecret(token.refreshToken),
        { ...record, expiresAt: refreshExpires },
        REFRESH_TOKEN_TTL_S * 1000,
      );
    }
    return {
      accessToken: token.accessToken,
      accessTokenExpiresAt: new Date(accessExpires),
      refreshToken: token.refreshToken,
      refreshTokenExpiresAt: token.refreshToken ? new Date(refreshExpires) : undefined,
      scope: scopes,
      client,
      user: { id: userId, grantId, resource },
    };
  },

  async getAccessToken(accessToken) {
    if (!isSecret(accessToken, ACCESS_TOKEN_PREFIX)) return null;
    const token = await store.oauth.resolveAccessToken(hashSecret(accessToken), Date.now(), 60_000);
    if (!token) return null;
    return {
      accessToken,
      accessTokenExpiresAt: new Date(token.expiresAt),
      scope: token.scopes,
      client: { id: token.clientId, grants: [] },
      user: { id: token.userId, grantId: token.grantId, resource: token.resource },
    };
  },

  async getRefreshToken(refreshToken) {
    if (!isSecret(refreshToken, REFRESH_TOKEN_PREFIX)) return null;
    const oauth = store.oauth;
    const found = await oauth.findRefreshToken(hashSecret(refreshToken));
    if (found === null) return null;
    if ("reused" in found) {
      await endReplayedGrant(store, found.reused);
      return null;
    }
    const token = found.record;
    if (!(await oauth.isGrantActive(token.userId, token.grantId))) return null;
    return {
      refreshToken,
      refreshTokenExpiresAt: new Date(token.expiresAt),
      scope: token.scopes,
      client: { id: token.clientId, grants: ["refresh_token"] },
      user: { id: token.userId, grantId: token.grantId, resource: token.resource },
    };
  },

  async revokeToken(token) {
    return store.oauth.consumeRefreshToken(hashSecret(token.refreshToken), REFRESH_TOKEN_TTL_S * 1000);
  },
});

/**
 * The library's server over `oauthModel(store)`: code grant with PKCE (S256 only) and rotating refresh tokens, public
 * clients. Built for each token request (the library keeps no state of its own between requests).
 */
export const oauthServer = (store: Store, allowHosts: AllowList, address?: string): OAuth2Server =>
  new OAuth2Server({
    model: oauthModel(store, allowHosts, address),
    accessTokenLifetime: ACCESS_TOKEN_TTL_S,
    refreshTokenLifetime: REFRESH_TOKEN_TTL_S,
    authorizationCodeLifetime: CODE_TTL_S,
    allowEmptyState: true,
    allowBearerTokensInQueryString: false,
    alwaysIssueNewRefreshToken: true,
    requireClientAuthentication: { authorization_code: false, refresh_token: false },
  });
