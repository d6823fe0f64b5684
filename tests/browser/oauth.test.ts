import fs from "node:fs";
import { createServer, type Server } from "node:http";
import os from "node:os";
import path from "node:path";
import { Client, StreamableHTTPClientTransport, UnauthorizedError } from "@modelcontextprotocol/client";
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { characterErrorRate } from "@/bench/metrics";
import { getAccountByEmail } from "@/lib/accounts";
import { getBalance } from "@/lib/credits";
import { listConnectedApps } from "@/lib/oauth";
import { getStore } from "@/lib/store";
import { freePort } from "../../tooling";
import { base64Of, groundTruth } from "../api/support";
import { ARTIFACTS, TEST_PASSWORD, launchChromium } from "../support/browser";
import { startDevServer, warmRoutes, type DevServer } from "../support/dev-server";
import { TEST_REDIS_URL, withRedisStoreEnv } from "../support/redis";
import { expectExtracted } from "../mcp/support";
import { MemoryProvider } from "../oauth/support";

/*
 * OAuth sign-in as people do it: an MCP client sends them to the browser, they sign up or sign in, allow the app on
 * the consent page, and the app reads documents with their credits; they revoke it on the settings page. Headless
 * Chromium on the development server with Redis; the official SDK v2 client (its OAuthClientProvider) and mcp-remote
 * (the stdio bridge Claude Desktop runs; its browser opener is a stub that hands the URL to this test's Chromium).
 */

const { prefix } = withRedisStoreEnv("browser-oauth");
const FREE_CREDITS = 7;
/** Request timeout of the clients: a development server on a busy machine, compiling as it goes. */
const SLOW = { timeout: 300_000 };

let server: DevServer | undefined;
let baseUrl = "";
let browser: Browser | undefined;

/** A local "app" callback: records the query the browser brings back and says so on its page. */
async function startCallback(): Promise<{
  url: string;
  next: () => Promise<URLSearchParams>;
  close: () => Promise<void>;
}> {
  const port = await freePort();
  const waiting: Array<(params: URLSearchParams) => void> = [];
  const http: Server = createServer((req, res) => {
    const params = new URL(req.url ?? "/", "http://127.0.0.1").searchParams;
    res.writeHead(200, { "content-type": "text/plain" }).end("You can close this window.");
    waiting.shift()?.(params);
  });
  await new Promise<void>((resolve) => http.listen(port, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${port}/oauth/callback`,
    next: () => new Promise((resolve) => waiting.push(resolve)),
    close: () => new Promise((resolve) => http.close(() => resolve())),
  };
}

async function newPage(): Promise<Page> {
  if (!browser) throw new Error("browser not started");
  const page = await (await browser.newContext({ viewport: { width: 1100, height: 900 } })).newPage();
  // A development server compiles each page on its first request, on a machine shared with other test runs.
  page.setDefaultTimeout(180_000);
  return page;
}

/** From the app's authorization URL: sign up on the way (the sign-in page keeps where it came from), then allow. */
async function signUpAndAllow(page: Page, authorizationUrl: string, email: string): Promise<void> {
  await page.goto(authorizationUrl);
  await page.waitForURL(/\/signin\?next=/);
  await page.getByRole("link", { name: "Create an account" }).click();
  // The sign-up form replaces the sign-in form (same fields): fill it only once it is there.
  await page.waitForURL(/\/signin\?mode=signup&next=/);
  await page.getByLabel("E-mail").fill(email);
  await page.getByLabel("Password").fill(TEST_PASSWORD);
  await page.getByRole("button", { name: "Create account" }).click();
  // Back to the authorization page — or the form's error, said at once rather than as a timeout.
  const outcome = await Promise.race([
    page.waitForURL(/\/oauth\/authorize\?/).then(() => null),
    page
      .locator("#auth-error")
      .waitFor()
      .then(() => page.locator("#auth-error").textContent()),
  ]);
  if (outcome !== null) {
    await page.screenshot({ path: path.join(ARTIFACTS, "oauth-signup-error.png") });
    throw new Error(`sign-up refused: ${outcome}`);
  }
  expect(await page.locator("h1").textContent()).toContain("wants to use your account");
  await page.screenshot({ path: path.join(ARTIFACTS, "oauth-consent.png") });
  await page.getByRole("button", { name: "Allow" }).click();
}

describe("OAuth sign-in in headless Chromium", () => {
  beforeAll(async () => {
    await Promise.all([
      startDevServer(
        {
          REDIS_URL: TEST_REDIS_URL,
          REDIS_PREFIX: prefix,
          FREE_CREDITS: String(FREE_CREDITS),
          // Two sign-ups from this machine's address, besides any other test's on the same Redis prefix: none.
          SIGNUP_PER_ADDRESS_PER_HOUR: "10",
          OCR_ENGINE_PROCESSES: "1",
          LOG_REQUESTS: "false",
          // On every address, as `npm start` listens by default (issue 39, point 4): the page Next renders after the
          // sign-in action's redirect is fetched by Next from 0.0.0.0, and must still name the browser's origin.
        },
        "/signin",
        ["--hostname", "0.0.0.0"],
      ).then((started) => {
        server = started;
        baseUrl = started.baseUrl;
      }),
      launchChromium().then((launched) => {
        browser = launched;
      }),
    ]);
    // Compiled before the clients' timeouts start: each is a first request on a development server.
    await warmRoutes(baseUrl, [
      ["GET", "/oauth/authorize"],
      ["GET", "/signin"],
      ["POST", "/api/mcp"],
      ["GET", "/.well-known/oauth-protected-resource/api/mcp"],
      ["GET", "/.well-known/oauth-authorization-server"],
      ["POST", "/oauth/register"],
      ["POST", "/oauth/token"],
      ["GET", "/settings"],
    ]);
  }, 600_000);

  afterAll(async () => {
    await browser?.close();
    await server?.stop();
  });

  it("the SDK v2 client: 401 → discovery → registration → sign-up and consent → token; extract_text charges the account; revoke on the settings page ends access", async () => {
    const callback = await startCallback();
    const page = await newPage();
    try {
      const provider = new MemoryProvider({ redirectUrl: callback.url });
      const mcpUrl = new URL(`${baseUrl}/api/mcp`);
      const first = new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider });
      await expect(new Client({ name: "browser-oauth", version: "1" }).connect(first, SLOW)).rejects.toBeInstanceOf(
        UnauthorizedError,
      );
      const authorizationUrl = provider.authorizationUrls[0]!;
      expect(authorizationUrl.origin).toBe(baseUrl);

      const email = `oauth-${Date.now()}@example.com`;
      const returned = callback.next();
      await signUpAndAllow(page, authorizationUrl.toString(), email);
      const params = await returned;
      expect(params.get("iss")).toBe(baseUrl);
      expect(params.get("state")).toBe("state-123");
      await first.finishAuth(params);

      const client = new Client({ name: "browser-oauth", version: "1" });
      await client.connect(new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider }), SLOW);
      const account = await getAccountByEmail(getStore(), email);
      if (!account) throw new Error("the account was not created");
      expect((await client.listTools(undefined, SLOW)).tools.map((tool) => tool.name)).toEqual([
        "extract_text",
        "get_extraction",
        "show_extraction",
        "read_viewer_page",
      ]);
      const body = expectExtracted(
        await client.callTool(
          { name: "extract_text", arguments: { image_source: { type: "base64", data: base64Of("paragraph.png") } } },
          SLOW,
        ),
      );
      expect(body.userId).toBe(account.id);
      expect(characterErrorRate(body.extractedText, groundTruth("paragraph.png"))).toBeLessThan(0.05);
      expect(await getBalance(getStore(), account.id)).toBe(FREE_CREDITS - 1);

      // Settings → Connected apps: the app, what it may do, when it was last used; revoke it.
      await page.goto(`${baseUrl}/settings`);
      const row = page.locator("tr[data-app-id]");
      await row.waitFor();
      expect(await row.count()).toBe(1);
      expect(await row.textContent()).toContain("OAuth test app");
      expect(await row.textContent()).toContain("documents:read jobs:manage");
      await page.screenshot({ path: path.join(ARTIFACTS, "oauth-connected-apps.png"), fullPage: true });
      await row.getByText("Revoke", { exact: true }).click();
      await row.getByRole("button", { name: "Revoke access" }).click();
      await expect.poll(() => page.locator("tr[data-app-id]").count()).toBe(0);
      expect(await listConnectedApps(getStore(), account.id)).toEqual([]);
      await expect(client.listTools(undefined, SLOW)).rejects.toThrow();
      await client.close();
    } finally {
      await page.context().close();
      await callback.close();
    }
  }, 600_000);

  it("mcp-remote: its sign-in in the browser, then a stdio client lists the tools and reads an image", async () => {
    const scratch = fs.mkdtempSync(path.join(os.tmpdir(), "ocr-mcp-remote-oauth-"));
    const bin = path.join(scratch, "bin");
    const opened = path.join(scratch, "opened");
    fs.mkdirSync(bin);
    // The "browser": every opener mcp-remote may use records the URL for this test's Chromium.
    for (const name of ["xdg-open", "gio", "x-www-browser", "sensible-browser", "www-browser", "browser"]) {
      fs.writeFileSync(
        path.join(bin, name),
        `#!/bin/sh\nfor a in "$@"; do case "$a" in http*) echo "$a" >> "${opened}";; esac; done\n`,
        { mode: 0o755 },
      );
    }
    const page = await newPage();
    const callbackPort = await freePort();
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [
        path.resolve(import.meta.dirname, "../../node_modules/mcp-remote/dist/proxy.js"),
        `${baseUrl}/api/mcp`,
        String(callbackPort),
      ],
      env: {
        PATH: `${bin}:${process.env.PATH ?? ""}`,
        HOME: scratch,
        MCP_REMOTE_CONFIG_DIR: path.join(scratch, ".mcp-auth"),
        BROWSER: path.join(bin, "browser"),
      },
      stderr: "pipe",
    });
    let stderr = "";
    transport.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
    const client = new ClientV1({ name: "mcp-remote-oauth", version: "1" });
    try {
      const connecting = client.connect(transport, { timeout: 600_000 });
      await expect
        .poll(() => fs.existsSync(opened) && fs.readFileSync(opened, "utf8").trim(), { timeout: 180_000 })
        .toBeTruthy();
      const authorizationUrl = fs.readFileSync(opened, "utf8").trim().split("\n")[0]!;
      expect(authorizationUrl.startsWith(`${baseUrl}/oauth/authorize?`)).toBe(true);
      const email = `mcp-remote-${Date.now()}@example.com`;
      await signUpAndAllow(page, authorizationUrl, email);
      await page.waitForURL(new RegExp(`^http://(localhost|127\\.0\\.0\\.1):${callbackPort}/oauth/callback`));
      await connecting;

      const account = await getAccountByEmail(getStore(), email);
      if (!account) throw new Error("the account was not created");
      expect((await client.listTools(undefined, SLOW)).tools.map((tool) => tool.name)).toEqual([
        "extract_text",
        "get_extraction",
        "show_extraction",
        "read_viewer_page",
      ]);
      const body = expectExtracted(
        await client.callTool(
          { name: "extract_text", arguments: { image_source: { type: "base64", data: base64Of("paragraph.png") } } },
          undefined,
          SLOW,
        ),
      );
      expect(body.userId).toBe(account.id);
      expect(await getBalance(getStore(), account.id)).toBe(FREE_CREDITS - 1);
      expect(stderr).toMatch(/Connected to remote server using StreamableHTTPClientTransport/);
      expect(await listConnectedApps(getStore(), account.id)).toEqual([
        expect.objectContaining({ scopes: ["documents:read", "jobs:manage"] }),
      ]);
    } finally {
      await client.close().catch(() => undefined);
      await page.context().close();
      fs.rmSync(scratch, { recursive: true, force: true });
    }
  }, 600_000);

  it("the consent page cannot be framed, and the sign-in page's return path is this site's authorization page only", async () => {
    const response = await fetch(`${baseUrl}/oauth/authorize?client_id=ocl_unknown`);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
    expect(response.headers.get("x-frame-options")).toBe("DENY");
    expect(await response.text()).toContain("Unknown app");

    const page = await newPage();
    try {
      for (const next of [
        "https://evil.example/",
        "//evil.example/x",
        "/\\evil.example",
        "/settings/../oauth/authorize",
      ]) {
        await page.goto(`${baseUrl}/signin?next=${encodeURIComponent(next)}`);
        expect(await page.locator('input[name="next"]').count()).toBe(0);
      }
    } finally {
      await page.context().close();
    }
  });
});
