import { afterEach, describe, expect, it } from "vitest";
import { createApiKey, revokeApiKey } from "@/lib/keys";
import { createMcpRoute, type McpRoute, type SseTiming, type StreamCaps } from "@/lib/mcp";
import { getEnv } from "@/lib/env";
import { handleRevocation, oauthUrls, serviceOrigin } from "@/lib/oauth";
import { ACCESS_TOKEN_PREFIX, hashSecret, newGrantId, newSecret } from "@/lib/oauth/values";
import { getStore } from "@/lib/store";
import { createAccount, expectApiError, withStore } from "../api/support";
import { MCP_ENDPOINT, eventually, expectKeyRefused, messageOf, readEvents, rpcRequest } from "./support";

/*
 * Caps on open SSE streams: per account across instances (in the store; 429) and per instance (in memory; 503), both
 * with Retry-After; a stream gives its slots back however it ends; a stream whose key is revoked closes. Two route
 * instances stand for two serverless instances sharing the store.
 */

function route(streams: Partial<StreamCaps>, sse: Partial<SseTiming> = {}): McpRoute {
  return createMcpRoute({ streams, sse: { pingMs: 60_000, ...sse } });
}

function get(handlers: McpRoute, key: string): Promise<Response> {
  return handlers.GET(new Request(MCP_ENDPOINT, { headers: { accept: "text/event-stream", "x-api-key": key } }));
}

/** Streams the tests left open, closed after each. */
const opened: Array<ReturnType<typeof readEvents>> = [];

/** Open a stream and read its `endpoint` event. */
async function open(handlers: McpRoute, key: string) {
  const response = await get(handlers, key);
  expect(response.status).toBe(200);
  const events = readEvents(response);
  opened.push(events);
  const first = await events.next();
  expect(first?.event).toBe("endpoint");
  const query = new URL(first!.data!, MCP_ENDPOINT).search;
  return { events, query };
}

/** `Retry-After` in whole seconds within [1, max]. */
function expectRetryAfter(response: Response, max: number): void {
  const seconds = Number(response.headers.get("retry-after"));
  expect(Number.isInteger(seconds)).toBe(true);
  expect(seconds).toBeGreaterThanOrEqual(1);
  expect(seconds).toBeLessThanOrEqual(max);
}

describe("caps on open SSE streams (redis store)", () => {
  withStore("redis");
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((events) => events.cancel()));
  });

  it("per account, across instances: past the cap 429 with Retry-After; a stream that ends frees its slot", async () => {
    const account = await createAccount(0);
    const a = route({ perAccount: 2 });
    const b = route({ perAccount: 2 });
    const first = await open(a, account.key);
    await open(b, account.key);
    // A third, on either instance: the account's count is shared.
    for (const handlers of [a, b]) {
      const refused = await get(handlers, account.key);
      await expectApiError(refused, "rate_limited", /This account has 2 MCP SSE streams open, the most allowed/);
      expectRetryAfter(refused, 295);
    }
    // Another account is not affected.
    await (await open(a, (await createAccount(0)).key)).events.cancel();
    // The client closes its first stream: the slot comes back.
    await first.events.cancel();
    await eventually(async () => {
      const response = await get(b, account.key);
      await response.body?.cancel();
      return response.status === 200;
    });
  });

  it("per instance: past the cap 503 overloaded with Retry-After; another instance takes the stream", async () => {
    const a = route({ perInstance: 2 });
    const b = route({ perInstance: 2 });
    const one = await open(a, (await createAccount(0)).key);
    await open(a, (await createAccount(0)).key);
    const key = (await createAccount(0)).key;
    const refused = await get(a, key);
    await expectApiError(refused, "overloaded", /holds 2 open MCP SSE streams/);
    expectRetryAfter(refused, 30);
    const elsewhere = await open(b, key);
    await elsewhere.events.cancel();
    await one.events.cancel();
    await eventually(async () => {
      const response = await get(a, key);
      await response.body?.cancel();
      return response.status === 200;
    });
  });

  it("a stream that closes itself at the end of its life frees its slots", async () => {
    const account = await createAccount(0);
    const handlers = route({ perAccount: 1, perInstance: 1 }, { lifetimeMs: 1_500, drainMs: 500 });
    const first = await open(handlers, account.key);
    await expectApiError(await get(handlers, account.key), "overloaded");
    expect(await first.events.next()).toBeNull(); // the server ended it
    await eventually(async () => {
      const response = await get(handlers, account.key);
      await response.body?.cancel();
      return response.status === 200;
    });
  });

  // Issue 39: revoking an access token leaves its grant (a connected app) in place; the stream checked only the grant.
  it("a stream opened with an OAuth access token closes at its next refresh once that token is revoked", async () => {
    const account = await createAccount(0);
    const store = getStore();
    const resource = oauthUrls(serviceOrigin(getEnv(), new Request(MCP_ENDPOINT))).resource;
    const scopes = ["documents:read", "jobs:manage"];
    const grant = await store.oauth.upsertGrant({
      id: newGrantId(),
      userId: account.userId,
      clientId: "ocl_streamtest",
      clientName: "stream test",
      scopes,
      resource,
      createdAt: new Date().toISOString(),
      lastUsedAt: null,
    });
    const token = newSecret(ACCESS_TOKEN_PREFIX);
    const record = { grantId: grant.id, userId: account.userId, clientId: "ocl_streamtest", scopes, resource };
    await store.oauth.saveAccessToken(hashSecret(token), { ...record, expiresAt: Date.now() + 3_600_000 }, 3_600_000);

    const handlers = route({}, { refreshMs: 100 });
    const response = await handlers.GET(
      new Request(MCP_ENDPOINT, { headers: { accept: "text/event-stream", authorization: `Bearer ${token}` } }),
    );
    expect(response.status).toBe(200);
    const events = readEvents(response);
    opened.push(events);
    const endpoint = await events.next();
    expect(endpoint?.event).toBe("endpoint");
    const query = new URL(endpoint!.data!, MCP_ENDPOINT).search;
    // Refreshes go by while the token stands: the stream stays open and carries its session's answers.
    await new Promise((resolve) => setTimeout(resolve, 500));
    const ping = rpcRequest(
      { jsonrpc: "2.0", id: 1, method: "ping" },
      { query, headers: { authorization: `Bearer ${token}` } },
    );
    expect((await handlers.POST(ping)).status).toBe(202);
    expect(messageOf(await events.next())).toEqual({ jsonrpc: "2.0", id: 1, result: {} });

    const revoked = await handleRevocation(
      store,
      new Request("http://localhost:3000/oauth/revoke", {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ token }).toString(),
      }),
    );
    expect(revoked.status).toBe(200);
    expect(await store.oauth.isGrantActive(account.userId, grant.id)).toBe(true);
    expect((await events.next(5_000))?.comment).toMatch(/^closed: /);
    expect(await events.next()).toBeNull();
  });

  it("a stream whose key is revoked closes at its next refresh, and frees its slot", async () => {
    const account = await createAccount(0);
    const handlers = route({ perAccount: 1 }, { refreshMs: 100 });
    const { events, query } = await open(handlers, account.key);
    expect(await revokeApiKey(getStore(), { userId: account.userId, keyId: account.keyId })).toBe(true);
    // The stream says why on the wire, then ends (without the revocation it would stay open for its 295 s).
    expect(await events.next()).toEqual({ comment: "closed: the API key of this session was revoked" });
    expect(await events.next()).toBeNull();
    // Its session is gone with it, and the revoked key is refused.
    await expectKeyRefused(
      await handlers.POST(rpcRequest({ jsonrpc: "2.0", id: 1, method: "ping" }, { key: account.key, query })),
    );
    // The account's slot is free again: its other key opens a stream.
    const { key } = await createApiKey(getStore(), { userId: account.userId, name: "second" });
    await eventually(async () => {
      const response = await get(handlers, key);
      await response.body?.cancel();
      return response.status === 200;
    });
  });
});
