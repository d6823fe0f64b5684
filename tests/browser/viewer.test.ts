import path from "node:path";
import { Client, StreamableHTTPClientTransport, type Transport } from "@modelcontextprotocol/client";
import { AppBridge } from "@modelcontextprotocol/ext-apps/app-bridge";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { JobRunner, resetWorkQueue } from "@/lib/jobs";
import { createMcpRoute } from "@/lib/mcp";
import { VIEWER_HTML } from "@/lib/mcp/viewer/html";
import { VIEWER_URI } from "@/lib/mcp/viewer/tools";
import { createAccount, withStore } from "../api/support";
import { ARTIFACTS, launchChromium } from "../support/browser";
import { startTestRunner } from "../support/jobs";
import { createTestPool } from "../support/ocr";
import { keyCarrier, routeFetch } from "../mcp/support";
import { viewerDocument } from "../mcp/viewer-support";

/*
 * Issue 42, as a host runs the viewer: a test host built on ext-apps' AppBridge (in Node, with the official MCP client
 * on our MCP route in process) renders the ui:// resource in a sandboxed iframe of headless Chromium, relays the
 * app's postMessage JSON-RPC, and hands it the result of a real `show_extraction` call. The page shows the image with
 * word boxes, a low-confidence word highlighted, the text, the word's details on hover; paging fetches the next page
 * through the app's own tool call. Screenshots at 420 and 800 px (tests/artifacts/viewer-*.png).
 */

withStore("redis");

const pool = createTestPool();
let runner: JobRunner;
let browser: Browser;
let pdf: Uint8Array;

beforeAll(async () => {
  pdf = await viewerDocument();
  runner = startTestRunner("viewer-browser", pool);
  browser = await launchChromium();
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await runner.stop();
  await resetWorkQueue();
  await pool.terminate();
});

const route = createMcpRoute({ toolDeadlineMs: 20_000, jobPollMs: 100, sse: { pingMs: 60_000 } });

/** The host's side of the iframe's postMessage channel, for the AppBridge (which runs here, in Node). */
class IframeTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: Transport["onmessage"];
  constructor(private readonly page: Page) {}
  async start(): Promise<void> {
    await this.page.exposeFunction("__toHost", (message: unknown) => {
      this.onmessage?.(message as Parameters<NonNullable<Transport["onmessage"]>>[0]);
    });
  }
  async send(message: unknown): Promise<void> {
    await this.page.evaluate((m) => (window as unknown as { __toApp(m: unknown): void }).__toApp(m), message);
  }
  async close(): Promise<void> {
    this.onclose?.();
  }
}

const HOST_PAGE = `<!doctype html><html><body style="margin:0;background:#eee;padding:10px">
<iframe id="app" sandbox="allow-scripts" style="border:1px solid #bbb;background:#fff;width:420px;height:300px"></iframe>
<script>
  const frame = document.getElementById("app");
  window.addEventListener("message", (event) => {
    if (event.source === frame.contentWindow) window.__toHost(event.data);
  });
  window.__toApp = (message) => frame.contentWindow.postMessage(message, "*");
</script></body></html>`;

describe("the viewer in a host", () => {
  it("shows the page with word boxes, a word to check highlighted, the text; pages through tool calls; 420 and 800 px", async () => {
    const account = await createAccount(10);
    const { url, headers } = keyCarrier(account.key);
    const client = new Client({ name: "test-host", version: "1.0.0" });
    await client.connect(
      new StreamableHTTPClientTransport(url, { fetch: routeFetch(route), requestInit: { headers } }),
    );
    const page = await browser.newPage({ viewport: { width: 860, height: 1200 } });
    const errors: string[] = [];
    page.on("console", (message) => {
      if (message.type() === "error") errors.push(message.text());
    });
    try {
      // What a host does: the tool names the resource, the host reads it and renders it.
      const { tools } = await client.listTools();
      const tool = tools.find((t) => t.name === "show_extraction")!;
      expect((tool._meta as { ui: { resourceUri: string } }).ui.resourceUri).toBe(VIEWER_URI);
      const resource = await client.readResource({ uri: VIEWER_URI });
      const html = (resource.contents[0] as { text: string }).text;
      expect(html).toBe(VIEWER_HTML);

      await page.setContent(HOST_PAGE);
      const bridge = new AppBridge(
        client,
        { name: "test-host", version: "1.0.0" },
        { serverTools: {}, openLinks: {} },
        { hostContext: { theme: "light", displayMode: "inline", containerDimensions: { maxWidth: 420 } } },
      );
      bridge.onsizechange = ({ height }) => {
        if (height !== undefined)
          void page.evaluate((h) => (document.getElementById("app")!.style.height = `${h + 4}px`), height);
      };
      const initialized = new Promise<void>((resolve) => bridge.addEventListener("initialized", () => resolve()));
      await bridge.connect(new IframeTransport(page));
      await page.evaluate((text) => ((document.getElementById("app") as HTMLIFrameElement).srcdoc = text), html);
      await initialized;

      // The model's call; the host hands its input and result to the view.
      const args = { image_source: { type: "base64", data: Buffer.from(pdf).toString("base64") } };
      const result = await client.callTool({ name: "show_extraction", arguments: args });
      expect(result.isError ?? false).toBe(false);
      await bridge.sendToolInput({ arguments: args });
      await bridge.sendToolResult(result as Parameters<AppBridge["sendToolResult"]>[0]);

      const app = page.frameLocator("#app");
      await expect.poll(() => app.locator("#pageno").textContent(), { timeout: 120_000 }).toBe("Page 1 · 1 of 3");
      await expect.poll(() => app.locator("#boxes rect").count(), { timeout: 120_000 }).toBeGreaterThan(5);
      await expect.poll(() => app.locator("#page").getAttribute("src")).toMatch(/^data:image\/jpeg;base64,/);
      // A word to check: highlighted on the image and in the text.
      expect(await app.locator("#boxes rect.review").count()).toBeGreaterThan(0);
      const flagged = app.locator("#text .word.review").first();
      await flagged.hover();
      await expect.poll(() => app.locator("#info").textContent()).toMatch(/confidence \d+ · at \d+% from the left/);
      await expect.poll(() => app.locator("#boxes rect.on").count()).toBe(1);
      expect(await app.locator("#counts").textContent()).toMatch(/^\d+ words, [1-9]\d* to check on this page$/);
      // No horizontal scrolling at a narrow chat's width.
      const overflow = await app
        .locator("body")
        .evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
      expect(overflow).toBeLessThanOrEqual(0);
      await page.locator("#app").screenshot({ path: path.join(ARTIFACTS, "viewer-420.png") });

      // Copy: the page's text (the sandbox may refuse the clipboard API; the view falls back and says so).
      await app.locator("#copy").click();
      await expect.poll(() => app.locator("#status").textContent()).toBe("Copied the page's text.");

      // The next page comes through the app's own tool call.
      await app.locator("#next").click();
      await expect.poll(() => app.locator("#pageno").textContent(), { timeout: 60_000 }).toBe("Page 2 · 2 of 3");
      await expect.poll(() => app.locator("#boxes rect").count(), { timeout: 60_000 }).toBeGreaterThan(3);
      await expect.poll(() => app.locator("#text").textContent()).toMatch(/two/i);
      expect(await app.locator("#prev").isDisabled()).toBe(false);

      // At 800 px: the text beside the page.
      await page.evaluate(() => (document.getElementById("app")!.style.width = "800px"));
      await app.locator("#prev").click();
      await expect.poll(() => app.locator("#pageno").textContent()).toBe("Page 1 · 1 of 3");
      await expect.poll(() => app.locator("#boxes rect.review").count()).toBeGreaterThan(0);
      await app.locator("#text .word.review").first().hover();
      await expect.poll(() => app.locator("#info").textContent()).toMatch(/check it/);
      await expect.poll(() => app.locator("#boxes rect.review.on").count()).toBe(1);
      await page.locator("#app").screenshot({ path: path.join(ARTIFACTS, "viewer-800.png") });
      const side = await app
        .locator("main")
        .evaluate((main) => getComputedStyle(main).gridTemplateColumns.split(" ").length);
      expect(side).toBe(2);

      // The view's CSP held: nothing it did was refused, nothing fetched.
      expect(errors.filter((text) => /Content Security Policy|Refused/.test(text))).toEqual([]);
    } finally {
      await page.close();
      await client.close();
    }
  });
});
