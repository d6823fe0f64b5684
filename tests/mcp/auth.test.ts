import { afterEach, describe, expect, it } from "vitest";
import * as mcpRoute from "@/app/api/mcp/route";
import { createApiKey, revokeApiKey } from "@/lib/keys";
import { getStore } from "@/lib/store";
import { ENDPOINT, createAccount, expectApiError, withStore } from "../api/support";
import {
  MCP_ENDPOINT,
  connectClient,
  eventually,
  expectKeyRefused,
  expectSignInChallenge,
  keyCarrier,
  messageOf,
  readEvents,
  type Carrier,
  type ClientKind,
  type McpClient,
} from "./support";

/*
 * Keys on /api/mcp: the three carriers (x-api-key, Bearer, and — here only — the api_key query), refusals before
 * any stream is opened, and sessions bound to the key that opened them.
 */

withStore("memory");

const ping = { jsonrpc: "2.0", id: 1, method: "ping" };
const CARRIERS: Carrier[] = ["x-api-key", "bearer", "query"];

function withCarrier(key: string, carrier: Carrier, query = ""): { url: string; headers: Record<string, string> } {
  const { url, headers } = keyCarrier(key, carrier);
  for (const [name, value] of new URLSearchParams(query.replace(/^\?/, ""))) url.searchParams.set(name, value);
  return { url: url.toString(), headers };
}

function get(url: string, headers: Record<string, string> = {}): Promise<Response> {
  return mcpRoute.GET(new Request(url, { headers: { accept: "text/event-stream", ...headers } }));
}

function post(url: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return mcpRoute.POST(
    new Request(url, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json", ...headers },
      body: JSON.stringify(body),
    }),
  );
}

/** Open a stream with `x-api-key` and return its session query (`?sessionId=…`) and a way to close it. */
async function openSession(key: string) {
  const response = await get(MCP_ENDPOINT, { "x-api-key": key });
  expect(response.status).toBe(200);
  const events = readEvents(response);
  const endpoint = (await events.next())!.data!;
  return { events, query: new URL(endpoint, MCP_ENDPOINT).search };
}

describe("key carriers", () => {
  it.each(CARRIERS)("%s: accepted on POST, on GET and on the session POST", async (carrier) => {
    const account = await createAccount(0);
    const plain = withCarrier(account.key, carrier);
    expect((await post(plain.url, ping, plain.headers)).status).toBe(200);

    const stream = await get(plain.url, plain.headers);
    expect(stream.status).toBe(200);
    const events = readEvents(stream);
    const endpoint = new URL((await events.next())!.data!, MCP_ENDPOINT);
    // A key that came in the query goes back in the endpoint (the client may have no other carrier); a header key never does.
    expect(endpoint.searchParams.get("api_key")).toBe(carrier === "query" ? account.key : null);

    const session = withCarrier(account.key, carrier, endpoint.search);
    expect((await post(session.url, ping, session.headers)).status).toBe(202);
    expect(messageOf(await events.next())).toEqual({ jsonrpc: "2.0", id: 1, result: {} });
    await events.cancel();
  });

  it("the first carrier present is the one used: a wrong x-api-key is not rescued by a good Bearer or query key", async () => {
    const account = await createAccount(0);
    const url = `${MCP_ENDPOINT}?api_key=${account.key}`;
    const headers = { "x-api-key": "ocr_wrong", authorization: `Bearer ${account.key}` };
    await expectKeyRefused(await post(url, ping, headers), /Invalid or revoked/);
    await expectKeyRefused(await get(url, headers), /Invalid or revoked/);
  });

  const clients: McpClient[] = [];
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((client) => client.close().catch(() => undefined)));
  });

  it.each([
    ["v1 streamable", "bearer"],
    ["v1 sse", "query"],
    ["v1 sse", "bearer"],
    ["v2 streamable", "query"],
    ["v2 sse", "x-api-key"],
  ] as [ClientKind, Carrier][])("%s with the key as %s", async (kind, carrier) => {
    const account = await createAccount(0);
    const client = await connectClient({ kind, key: account.key, carrier, posts: mcpRoute });
    clients.push(client);
    expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual([
      "extract_text",
      "get_extraction",
      "show_extraction",
      "read_viewer_page",
    ]);
  });
});

describe("refusals", () => {
  it("no credentials → 401 with the sign-in challenge and the message, on POST, on GET (no stream) and on the session POST", async () => {
    const account = await createAccount(0);
    const { events, query } = await openSession(account.key);
    await expectSignInChallenge(
      await post(MCP_ENDPOINT, ping),
      /Missing credentials: sign in .* or send an API key as x-api-key/,
    );
    await expectSignInChallenge(await get(MCP_ENDPOINT), /Missing credentials/);
    await expectSignInChallenge(await post(`${MCP_ENDPOINT}${query}`, ping), /Missing credentials/);
    await expectSignInChallenge(
      await post(MCP_ENDPOINT, ping, { authorization: "Basic dXNlcjpwYXNz" }),
      /Unsupported Authorization scheme/,
    );
    await events.cancel();
  });

  it("a revoked key → 403 as x-api-key or api_key, 401 invalid_token as Bearer; on POST, GET and a stream's session POST", async () => {
    const account = await createAccount(0);
    const { events, query } = await openSession(account.key);
    expect((await post(`${MCP_ENDPOINT}${query}`, ping, { "x-api-key": account.key })).status).toBe(202);
    expect(await revokeApiKey(getStore(), { userId: account.userId, keyId: account.keyId })).toBe(true);

    for (const carrier of CARRIERS) {
      const refused = (response: Response) =>
        carrier === "bearer"
          ? expectSignInChallenge(response, /Invalid or revoked/, "invalid_token")
          : expectKeyRefused(response, /Invalid or revoked/);
      const plain = withCarrier(account.key, carrier);
      await refused(await post(plain.url, ping, plain.headers));
      await refused(await get(plain.url, plain.headers));
      const session = withCarrier(account.key, carrier, query);
      await refused(await post(session.url, ping, session.headers));
    }
    await events.cancel();
  });

  it("a session cannot be used with another account's key, nor with another key of the same account → 404", async () => {
    const owner = await createAccount(0);
    const other = await createAccount(0);
    const { key: secondKey } = await createApiKey(getStore(), { userId: owner.userId, name: "second" });
    const { events, query } = await openSession(owner.key);

    await expectApiError(await post(`${MCP_ENDPOINT}${query}`, ping, { "x-api-key": other.key }), "not_found");
    await expectApiError(await post(`${MCP_ENDPOINT}${query}`, ping, { "x-api-key": secondKey }), "not_found");
    // The owner's key still works, and nothing the others sent reached the stream.
    expect((await post(`${MCP_ENDPOINT}${query}`, { ...ping, id: 42 }, { "x-api-key": owner.key })).status).toBe(202);
    expect(messageOf(await events.next())).toEqual({ jsonrpc: "2.0", id: 42, result: {} });
    await events.cancel();
  });

  it.each([
    ["an unknown session", "?sessionId=AAAAAAAAAAAAAAAAAAAAAA.zzzzzzzzz"],
    ["a malformed session id", "?sessionId=../../etc"],
    ["an empty session id", "?sessionId="],
    ["a session whose stream has ended", "?sessionId=AAAAAAAAAAAAAAAAAAAAAA.1"],
  ])("%s → 404 not_found", async (_label, query) => {
    const account = await createAccount(0);
    await expectApiError(await post(`${MCP_ENDPOINT}${query}`, ping, { "x-api-key": account.key }), "not_found");
  });

  it("a closed stream's session → 404", async () => {
    const account = await createAccount(0);
    const { events, query } = await openSession(account.key);
    await events.cancel();
    await eventually(
      async () => (await post(`${MCP_ENDPOINT}${query}`, ping, { "x-api-key": account.key })).status === 404,
    );
  });

  it("the api_key query is not a carrier for REST (only /api/mcp takes it)", async () => {
    const account = await createAccount(0);
    const { POST } = await import("@/app/api/ocr/process/route");
    const response = await POST(
      new Request(`${ENDPOINT}?api_key=${account.key}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: "{}",
      }),
    );
    await expectApiError(response, "unauthorized");
    // REST keeps its documented 401 and its Bearer challenge: only /api/mcp answers 403.
    expect(response.headers.get("www-authenticate")).toMatch(/^Bearer/);
  });
});
