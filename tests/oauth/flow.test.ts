import {
  Client,
  SSEClientTransport,
  StreamableHTTPClientTransport,
  UnauthorizedError,
} from "@modelcontextprotocol/client";
import { http, HttpResponse } from "msw";
import { describe, expect, it } from "vitest";
import { characterErrorRate } from "@/bench/metrics";
import { answerAuthorization } from "@/lib/oauth";
import { listConnectedApps, revokeConnectedApp } from "@/lib/oauth";
import { getEnv } from "@/lib/env";
import { configuredAllowList } from "@/lib/input";
import { getStore } from "@/lib/store";
import { base64Of, createAccount, groundTruth, withRemoteFiles, withStore } from "../api/support";
import { expectExtracted } from "../mcp/support";
import { MCP_URL, MemoryProvider, ORIGIN, REDIRECT_URL, postForm, serviceFetch, type Wire } from "./support";

/*
 * The official SDK client's OAuth flow (its OAuthClientProvider) against the route handlers in process, on the real
 * Redis store: discovery from the 401, registration (RFC 7591) or a Client ID Metadata Document, PKCE, the consent
 * answered as the signed-in user (the page itself is driven in Chromium in tests/browser/oauth.test.ts), the token,
 * tools/list and an extract_text charged to that account; refresh with rotation; revocation.
 */

const remote = withRemoteFiles();
withStore("redis");

const clientInfo = { name: "oauth-flow-tests", version: "1.0.0" };

/** Sign in as `userId` and allow the authorization the SDK asked for; the callback URL the browser would reach. */
async function consent(provider: MemoryProvider, userId: string): Promise<URL> {
  const url = provider.authorizationUrls.at(-1);
  if (!url) throw new Error("the client did not start an authorization");
  expect(`${url.origin}${url.pathname}`).toBe(`${ORIGIN}/oauth/authorize`);
  const answer = await answerAuthorization(getStore(), url.searchParams, {
    userId,
    origin: ORIGIN,
    allowed: true,
    allowHosts: configuredAllowList(getEnv()),
  });
  if (answer.kind !== "redirect") throw new Error(`consent refused: ${JSON.stringify(answer)}`);
  return new URL(answer.location);
}

/** Connect as the SDK does: the first attempt ends in UnauthorizedError once the browser was sent to sign in. */
async function signIn(
  provider: MemoryProvider,
  userId: string,
  wire: Wire,
  options: ConstructorParameters<typeof Client>[1] = {},
) {
  const fetch = serviceFetch(wire);
  const first = new StreamableHTTPClientTransport(new URL(MCP_URL), { authProvider: provider, fetch });
  await expect(new Client(clientInfo, options).connect(first)).rejects.toBeInstanceOf(UnauthorizedError);
  const callback = await consent(provider, userId);
  expect(callback.origin + callback.pathname).toBe(REDIRECT_URL);
  expect(callback.searchParams.get("state")).toBe("state-123");
  expect(callback.searchParams.get("iss")).toBe(ORIGIN);
  await first.finishAuth(callback.searchParams);
  const client = new Client(clientInfo, options);
  await client.connect(new StreamableHTTPClientTransport(new URL(MCP_URL), { authProvider: provider, fetch }));
  return client;
}

describe("the SDK v2 client signs in with OAuth", () => {
  it("dynamic registration: discovery from the 401, PKCE, token; tools/list and extract_text charge the account", async () => {
    const account = await createAccount(10);
    const provider = new MemoryProvider();
    const wire: Wire = [];
    const client = await signIn(provider, account.userId, wire);
    try {
      expect(wire.slice(0, 4)).toEqual([
        "POST /api/mcp 401",
        "GET /.well-known/oauth-protected-resource/api/mcp 200",
        "GET /.well-known/oauth-authorization-server 200",
        "POST /oauth/register 201",
      ]);
      // The browser is sent to /oauth/authorize here; after the consent, the code is redeemed once.
      expect(wire.filter((line) => line.startsWith("POST /oauth/token"))).toEqual(["POST /oauth/token 200"]);
      const authorizeUrl = provider.authorizationUrls[0]!;
      expect(authorizeUrl.searchParams.get("code_challenge_method")).toBe("S256");
      expect(authorizeUrl.searchParams.get("resource")).toBe(MCP_URL);
      expect(provider.saved?.access_token).toMatch(/^oat_/);
      expect(provider.saved?.refresh_token).toMatch(/^ort_/);
      expect(provider.saved?.scope).toBe("documents:read jobs:manage");

      expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual([
        "extract_text",
        "get_extraction",
        "show_extraction",
        "read_viewer_page",
      ]);
      const body = expectExtracted(
        await client.callTool({
          name: "extract_text",
          arguments: { image_source: { type: "base64", data: base64Of("paragraph.png") } },
        }),
      );
      expect(characterErrorRate(body.extractedText, groundTruth("paragraph.png"))).toBeLessThan(0.05);
      expect(body.userId).toBe(account.userId);
      expect(await account.balance()).toBe(9);

      const [app] = await listConnectedApps(getStore(), account.userId);
      expect(app).toMatchObject({ name: "OAuth test app", host: null, scopes: ["documents:read", "jobs:manage"] });
      expect(app!.lastUsedAt).not.toBeNull();
    } finally {
      await client.close();
    }
  });

  it("refresh: a refused access token is refreshed (rotated); the old refresh token replayed ends the app's access", async () => {
    const account = await createAccount(0);
    const provider = new MemoryProvider();
    const wire: Wire = [];
    const client = await signIn(provider, account.userId, wire);
    try {
      const first = provider.saved!;
      // The app's access token stops working (revoked on its own): the SDK refreshes and retries.
      expect((await postForm("/oauth/revoke", { token: first.access_token })).status).toBe(200);
      wire.length = 0;
      expect((await client.listTools()).tools).toHaveLength(4);
      expect(wire[0]).toBe("POST /api/mcp 401");
      expect(wire.filter((line) => line.startsWith("POST /oauth/token"))).toEqual(["POST /oauth/token 200"]);
      expect(wire.at(-1)).toBe("POST /api/mcp 200");
      const second = provider.saved!;
      expect(second.access_token).not.toBe(first.access_token);
      expect(second.refresh_token).not.toBe(first.refresh_token);

      // Someone replays the first refresh token: refused, and the grant ends (OAuth 2.1 §4.3.1).
      const replay = await postForm("/oauth/token", {
        grant_type: "refresh_token",
        refresh_token: first.refresh_token!,
        client_id: provider.clientInfo!.client_id,
      });
      expect(replay.status).toBe(400);
      expect(await replay.json()).toMatchObject({ error: "invalid_grant" });
      expect(await listConnectedApps(getStore(), account.userId)).toEqual([]);
      const refused = await serviceFetch()(MCP_URL, {
        method: "POST",
        headers: { authorization: `Bearer ${second.access_token}`, "content-type": "application/json" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }),
      });
      expect(refused.status).toBe(401);
      expect(refused.headers.get("www-authenticate")).toContain('error="invalid_token"');
    } finally {
      await client.close();
    }
  });

  it("revoking the connected app ends its access at once, on Streamable HTTP and on an open SSE stream", async () => {
    const account = await createAccount(0);
    const provider = new MemoryProvider();
    const client = await signIn(provider, account.userId, []);
    const sse = new Client(clientInfo);
    await sse.connect(new SSEClientTransport(new URL(MCP_URL), { authProvider: provider, fetch: serviceFetch() }));
    try {
      expect((await sse.listTools()).tools).toHaveLength(4);
      const [app] = await listConnectedApps(getStore(), account.userId);
      expect(await revokeConnectedApp(getStore(), { userId: account.userId, grantId: app!.id })).toBe(true);
      const direct = await serviceFetch()(MCP_URL, {
        method: "POST",
        headers: { authorization: `Bearer ${provider.saved!.access_token}`, "content-type": "application/json" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
      });
      expect(direct.status).toBe(401);
      // The refresh token died with the grant: the SDK's refresh is refused, and the app has to sign in again.
      await expect(client.listTools()).rejects.toMatchObject({ code: "invalid_grant" });
      // The SSE session's posts are refused as well (and its stream closes at its next keep-alive check).
      await expect(sse.listTools()).rejects.toThrow();
    } finally {
      await sse.close();
      await client.close();
    }
  });

  it("the 2026-07-28 revision (stateless discovery, no session) signs in the same way; the token serves a 2024-11-05 SSE client too", async () => {
    const account = await createAccount(3);
    const provider = new MemoryProvider();
    const wire: Wire = [];
    const client = await signIn(provider, account.userId, wire, { versionNegotiation: { mode: "auto" } });
    const sse = new Client(clientInfo);
    try {
      // 2026-07-28: tasks are an extension there, so the answer's capabilities are the tools and the viewer's resource.
      expect(Object.keys(client.getServerCapabilities() as object)).toEqual(["resources", "tools"]);
      const body = expectExtracted(
        await client.callTool({
          name: "extract_text",
          arguments: { image_source: { type: "base64", data: base64Of("paragraph.png") } },
        }),
      );
      expect(body.userId).toBe(account.userId);
      expect(await account.balance()).toBe(2);
      expect(wire.some((line) => line.startsWith("GET /api/mcp"))).toBe(false);

      await sse.connect(new SSEClientTransport(new URL(MCP_URL), { authProvider: provider, fetch: serviceFetch() }));
      expect((await sse.listTools()).tools).toHaveLength(4);
    } finally {
      await sse.close();
      await client.close();
    }
  });

  it("a Client ID Metadata Document instead of a registration: fetched once through the SSRF guard, no /oauth/register", async () => {
    const account = await createAccount(0);
    const documentUrl = "https://files.example/oauth/client.json";
    let fetched = 0;
    remote.use(
      http.get(documentUrl, () => {
        fetched += 1;
        return HttpResponse.json({
          client_id: documentUrl,
          client_name: "Example Agent",
          redirect_uris: [REDIRECT_URL],
          token_endpoint_auth_method: "none",
        });
      }),
    );
    const provider = new MemoryProvider({ clientMetadataUrl: documentUrl });
    const wire: Wire = [];
    const client = await signIn(provider, account.userId, wire);
    try {
      expect(wire.some((line) => line.startsWith("POST /oauth/register"))).toBe(false);
      expect(provider.authorizationUrls[0]!.searchParams.get("client_id")).toBe(documentUrl);
      expect((await client.listTools()).tools).toHaveLength(4);
      expect(fetched).toBe(1);
      expect(await listConnectedApps(getStore(), account.userId)).toEqual([
        expect.objectContaining({ name: "Example Agent", host: "files.example" }),
      ]);
    } finally {
      await client.close();
    }
  });
});
