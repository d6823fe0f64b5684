import { AsyncLocalStorage } from "node:async_hooks";
import type { ApiKeyIdentity } from "./api-keys";

/*
 * The credential the current request acts with, for what it reaches without the credential in its arguments: the
 * domain functions take an account's id (`getJobView(store, env, userId, …)`), and an app's token must not reach what
 * the account's API keys made (issue 39: the text of a job, lib/jobs `readJobResult`). Set by lib/http `withApiKey`
 * around the handler; outside a request (the settings page under a session, the CLI, workers) there is none.
 */

const storage = new AsyncLocalStorage<Pick<ApiKeyIdentity, "keyId" | "scopes">>();

/** Run `fn` acting as `identity` (an API key, or an app's access token: `scopes` set, `keyId` its grant's id). */
export function actAs<T>(identity: Pick<ApiKeyIdentity, "keyId" | "scopes">, fn: () => T): T {
  return storage.run({ keyId: identity.keyId, scopes: identity.scopes }, fn);
}

/**
 * The connected app the current request acts for — its grant's id, which its jobs record as their `keyId` — or null
 * when it acts with an API key, a session, or outside any request.
 */
export function actingApp(): string | null {
  const identity = storage.getStore();
  return identity?.scopes === undefined ? null : identity.keyId;
}
