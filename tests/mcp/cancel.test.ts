import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js";
import { SSEClientTransport as SseV1 } from "@modelcontextprotocol/sdk/client/sse.js";
import { StreamableHTTPClientTransport as StreamableV1 } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { JobRunner, listJobViews, resetWorkQueue } from "@/lib/jobs";
import { createMcpRoute } from "@/lib/mcp";
import { longScan } from "@/scripts/make-fixtures";
import { createAccount, expectLedgerConsistent, setEnv, sleep, withStore } from "../api/support";
import { createTestPool } from "../support/ocr";
import { eventually, keyCarrier, routeFetch } from "./support";
import { getStore } from "@/lib/store";
import { startTestRunner } from "../support/jobs";

/*
 * Issue 30, point 4 (MCP): the client gives up a call (the SDK's AbortController on callTool sends
 * `notifications/cancelled` — in another POST, which a stateless server serves on its own) while the call waits for
 * its job: the job is cancelled, no more pages are read, and the pages not read are refunded. Over Streamable HTTP
 * and the legacy SSE transport, with the official SDK client, a real Redis, BullMQ and engine processes.
 */

withStore("redis");

const PAGES = 40;
const pool = createTestPool();
let runner: JobRunner;
let scan: Uint8Array;
let restore: () => void;

beforeAll(async () => {
  scan = (await longScan(PAGES)).pdf;
  restore = setEnv({ MAX_PDF_PAGES: "1" });
  runner = startTestRunner("mcp-cancel", pool);
}, 60_000);
afterAll(async () => {
  restore();
  await runner.stop();
  await resetWorkQueue();
  await pool.terminate();
});

const route = createMcpRoute({ jobPollMs: 100, sse: { pingMs: 60_000 } });

describe.each(["streamable", "sse"] as const)("over %s", (transport) => {
  it("notifications/cancelled while the call waits for its job: the job stops, the unread pages are refunded", async () => {
    const account = await createAccount(100);
    const { url, headers } = keyCarrier(account.key);
    const fetch = routeFetch(route);
    const client = new ClientV1({ name: "cancel", version: "1.0.0" });
    await client.connect(
      transport === "sse"
        ? new SseV1(url, { fetch, requestInit: { headers } })
        : new StreamableV1(url, { fetch, requestInit: { headers } }),
    );
    try {
      const controller = new AbortController();
      const call = client
        .callTool(
          {
            name: "extract_text",
            arguments: { image_source: { type: "base64", data: Buffer.from(scan).toString("base64") } },
          },
          undefined,
          { signal: controller.signal, timeout: 60_000 },
        )
        .catch((error: unknown) => error);
      // Some pages read, not all.
      let jobId = "";
      await eventually(async () => {
        const [job] = (await listJobViews(getStore(), account.userId, { limit: 1 })).jobs;
        jobId = job?.jobId ?? "";
        return (job?.pagesDone ?? 0) >= 1;
      });
      controller.abort("the user gave up");
      expect(await call).toBeInstanceOf(Error);

      await eventually(
        async () => (await listJobViews(getStore(), account.userId, { limit: 1 })).jobs[0]!.status === "cancelled",
        10_000,
      );
      const cancelled = (await listJobViews(getStore(), account.userId, { limit: 1 })).jobs[0]!;
      expect(cancelled.jobId).toBe(jobId);
      expect(cancelled.pagesDone).toBeLessThan(PAGES);
      // No page is read after the cancel (the engine work stopped), and every page not read came back.
      await sleep(1_500);
      const later = (await listJobViews(getStore(), account.userId, { limit: 1 })).jobs[0]!;
      expect(later.pagesDone).toBe(cancelled.pagesDone);
      expect(later.creditsRefunded).toBe(PAGES - later.pagesDone);
      expect(await account.balance()).toBe(100 - later.pagesDone);
      await expectLedgerConsistent(account);
      console.info(
        `[cancel over ${transport}] ${later.pagesDone} of ${PAGES} pages read and charged, ${later.creditsRefunded} refunded`,
      );
    } finally {
      await client.close().catch(() => undefined);
    }
  }, 120_000);
});
