import {
  Client as ClientV2,
  StreamableHTTPClientTransport as StreamableV2,
  type CallToolResult,
} from "@modelcontextprotocol/client";
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js";
import { SSEClientTransport as SseV1 } from "@modelcontextprotocol/sdk/client/sse.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { listLedger } from "@/lib/credits";
import { resetWorkQueue } from "@/lib/jobs";
import { createApiKey } from "@/lib/keys";
import { createMcpRoute } from "@/lib/mcp";
import { services } from "@/lib/services";
import { getStore } from "@/lib/store";
import { longScan } from "@/scripts/make-fixtures";
import { createAccount, expectLedgerConsistent, sleep, withStore, type TestAccount } from "../api/support";
import { eventually, keyCarrier, routeFetch, rpcRequest, toolResultSchema } from "./support";

/*
 * Issue 30, the last piece of point 4 (MCP): the client gives up an `extract_text` call whose document is read in the
 * call (a synchronous read, not a job). The SDK's AbortController on callTool sends `notifications/cancelled` in
 * another POST — which a stateless server serves on its own, so the running call's request signal never fires — and
 * the call, which named itself in the store while reading, finds the cancel mark within its poll (1 s, the default):
 * the engine process is stopped, no page is read after it, the reserved pages are refunded and nothing is charged.
 * A cancel sent with another key (of the account or another account) never reaches it. Over Streamable HTTP (SDK v2)
 * and the legacy SSE transport (SDK v1), on the Redis store and the embedded memory store; real engine processes.
 */

// Enough pages that a warm engine on a quiet machine cannot read them all within the cancel's poll (8 could: the
// memory-store run, after the Redis one warmed everything, read all 8 before the cancel landed).
const PAGES = 24;
const CREDITS = 30;
let pdf: Uint8Array;

beforeAll(async () => {
  // Small scanned pages (well under a second of OCR each, unloaded): read in the call, long enough to cancel midway.
  pdf = (await longScan(PAGES)).pdf;
  await services().pool.warm();
}, 60_000);
afterAll(async () => {
  await services().pool.terminate();
});

// A budget the three pages fit in (the intake reads them in the call instead of making a job); the default poll.
const route = createMcpRoute({ toolDeadlineMs: 50_000, sse: { pingMs: 60_000 } });
const extractArgs = () => ({ image_source: { type: "base64", data: Buffer.from(pdf).toString("base64") } });

/** Until the read reserved its pages (the intake inspected the document and is reading it). */
async function readStarted(account: TestAccount, credits: number): Promise<void> {
  await eventually(async () => (await account.balance()) === credits - PAGES, 60_000);
}

type Kind = "v2 streamable" | "v1 sse";

async function connect(kind: Kind, key: string) {
  const { url, headers } = keyCarrier(key);
  const fetch = routeFetch(route);
  const info = { name: "cancel-read", version: "1.0.0" };
  if (kind === "v2 streamable") {
    const client = new ClientV2(info);
    await client.connect(new StreamableV2(url, { fetch, requestInit: { headers } }));
    return client;
  }
  const client = new ClientV1(info);
  await client.connect(new SseV1(url, { fetch, requestInit: { headers } }));
  return client;
}

describe.each(["redis", "memory"] as const)("on the %s store", (store) => {
  withStore(store);
  afterAll(async () => {
    await resetWorkQueue();
  });

  describe.each(["v2 streamable", "v1 sse"] as const)("%s", (kind) => {
    it("notifications/cancelled during a synchronous read: the engine stops, the reserved pages come back, nothing is charged", async () => {
      const account = await createAccount(CREDITS);
      const client = await connect(kind, account.key);
      try {
        const pool = services().pool;
        const before = pool.stats();
        const controller = new AbortController();
        const params = { name: "extract_text", arguments: extractArgs() };
        const options = { signal: controller.signal, timeout: 60_000 };
        const call = (
          client instanceof ClientV2 ? client.callTool(params, options) : client.callTool(params, undefined, options)
        ).catch((error: unknown) => error);
        // Reserved, and an engine process reading a page.
        await readStarted(account, CREDITS);
        await eventually(() => pool.stats().busy > 0, 60_000);
        const cancelledAt = Date.now();
        controller.abort("the user gave up");
        expect(await call).toBeInstanceOf(Error);

        // The engine stops (the page being read is stopped, the next ones never start) and the pages come back.
        await eventually(() => pool.stats().busy === 0, 10_000);
        const stoppedMs = Date.now() - cancelledAt;
        await eventually(async () => (await account.balance()) === CREDITS, 10_000);
        const refundedMs = Date.now() - cancelledAt;
        // No page is read after it: not the whole document, and nothing more a while later.
        const after = pool.stats();
        expect(after.completed - before.completed).toBeLessThan(PAGES);
        await sleep(1_500);
        expect(pool.stats().completed).toBe(after.completed);
        expect(pool.stats().busy).toBe(0);
        expect(await account.balance()).toBe(CREDITS);
        const { entries } = await listLedger(getStore(), account.userId);
        expect(entries.slice(0, 2).map((entry) => [entry.reason, entry.delta])).toEqual([
          ["refund", PAGES],
          ["ocr", -PAGES],
        ]);
        await expectLedgerConsistent(account);
        console.info(
          `[cancel a read, ${store}, ${kind}] engine idle ${stoppedMs} ms after the client's cancel (${after.completed - before.completed} of ${PAGES} pages read, ` +
            `${after.stopped.timeout - before.stopped.timeout} process stopped), ${PAGES} credits refunded after ${refundedMs} ms`,
        );
      } finally {
        await client.close().catch(() => undefined);
      }
    }, 120_000);
  });

  it("a cancel naming the call's JSON-RPC id with another key (the account's or another account's) does not reach it", async () => {
    const account = await createAccount(CREDITS);
    const other = await createAccount(CREDITS);
    const sameAccount = await createApiKey(getStore(), { userId: account.userId, name: "another key" });
    const pool = services().pool;
    const stoppedBefore = pool.stats().stopped.timeout;
    // A plain JSON-RPC call with a known id (7), and the same id cancelled with the two other keys while it reads.
    const call = route.POST(
      rpcRequest(
        { jsonrpc: "2.0", id: 7, method: "tools/call", params: { name: "extract_text", arguments: extractArgs() } },
        { key: account.key },
      ),
    );
    await readStarted(account, CREDITS);
    const cancel = { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 7, reason: "not mine" } };
    for (const key of [other.key, sameAccount.key]) {
      expect((await route.POST(rpcRequest(cancel, { key }))).status).toBe(202);
    }
    const response = await call;
    expect(response.status).toBe(200);
    const body = (await response.json()) as { result: CallToolResult };
    const result = toolResultSchema.parse(body.result);
    expect(result.isError ?? false, JSON.stringify(result.content).slice(0, 300)).toBe(false);
    expect(result.content[0]!.text).toMatch(/\f/); // three pages of text
    expect(pool.stats().stopped.timeout).toBe(stoppedBefore);
    expect(await account.balance()).toBe(CREDITS - PAGES);
    expect(await other.balance()).toBe(CREDITS);
    await expectLedgerConsistent(account);
  }, 120_000);

  it("a cancel that comes after the read's last look (it ends between two) is seen before the charge: nothing charged", async () => {
    // Never looked at while it runs (a poll longer than the read): only the look when the read ends can see the mark.
    const slowLooks = createMcpRoute({ toolDeadlineMs: 50_000, sse: { pingMs: 60_000 }, jobPollMs: 600_000 });
    const account = await createAccount(CREDITS);
    const pool = services().pool;
    const before = pool.stats();
    const call = slowLooks.POST(
      rpcRequest(
        { jsonrpc: "2.0", id: 9, method: "tools/call", params: { name: "extract_text", arguments: extractArgs() } },
        { key: account.key },
      ),
    );
    await readStarted(account, CREDITS);
    const cancel = { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 9, reason: "gave up" } };
    expect((await slowLooks.POST(rpcRequest(cancel, { key: account.key }))).status).toBe(202);
    const response = await call;
    const result = toolResultSchema.parse(((await response.json()) as { result: CallToolResult }).result);
    // Read to its end (nothing stopped it), then refunded: the client had gone.
    expect(result.isError).toBe(true);
    expect(result.content[0]!.text).toMatch(/cancelled by its client/);
    expect(pool.stats().completed - before.completed).toBe(PAGES);
    expect(await account.balance()).toBe(CREDITS);
    const { entries } = await listLedger(getStore(), account.userId);
    expect(entries.slice(0, 2).map((entry) => [entry.reason, entry.delta])).toEqual([
      ["refund", PAGES],
      ["ocr", -PAGES],
    ]);
    await expectLedgerConsistent(account);
  }, 120_000);
});
