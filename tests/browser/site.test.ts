import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { createServer as createHttpServer, request as httpRequest, type Server } from "node:http";
import { connect } from "node:net";
import path from "node:path";
import type { Browser, BrowserContextOptions, Page } from "playwright-core";
import { createClient } from "redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { getAccountByEmail } from "@/lib/accounts";
import { getBalance, grantCredits } from "@/lib/credits";
import { errorBodySchema } from "@/lib/api/errors";
import { createApiKey, resolveApiKey } from "@/lib/keys";
import { getStore } from "@/lib/store";
import { freePort } from "../../tooling";
import { ARTIFACTS, createKeyOnPage, launchChromium, signUp, waitForHydration } from "../support/browser";
import { startDevServer, warmRoutes, type DevServer } from "../support/dev-server";
import { inOneWindow, TEST_REDIS_URL, withRedisStoreEnv } from "../support/redis";

const ROOT = path.resolve(import.meta.dirname, "../..");
const FREE_CREDITS = "100";
/** Sign-ups the server allows per client address per hour (the tests below use 4 before the rotation test). */
const SIGNUPS_PER_ADDRESS = 5;
const HEADERS_TIMEOUT_MS = 2_000;

// The server and this test share one Redis prefix, so the test can check from outside the browser that a
// revoked key stops resolving; the prefix is deleted afterwards.
const { prefix } = withRedisStoreEnv("browser");

let server: DevServer | undefined;
let baseUrl = "";
let browser: Browser | undefined;
/** Every API key the browser was shown: none may appear in the server's output. */
const shownKeys: string[] = [];

/** An account with `credits` credits and a key, made directly in the store the server uses (for running examples). */
async function newApiAccount(credits = 100): Promise<{ key: string; balance: () => Promise<number> }> {
  const userId = `usr_docs${randomBytes(6).toString("hex")}`;
  if (credits > 0) await grantCredits(getStore(), { userId, credits });
  const { key } = await createApiKey(getStore(), { userId, name: "docs examples" });
  return { key, balance: () => getBalance(getStore(), userId) };
}

/** The whole site in headless Chromium, on the development server `npm run dev` runs (scripts/serve.mjs). */
describe("the site in headless Chromium", () => {
  beforeAll(async () => {
    await Promise.all([
      startDevServer(
        {
          REDIS_URL: TEST_REDIS_URL,
          REDIS_PREFIX: prefix,
          FREE_CREDITS,
          SIGNUP_PER_ADDRESS_PER_HOUR: String(SIGNUPS_PER_ADDRESS),
          LOG_REQUESTS: "true",
        },
        "/signin",
        ["--headers-timeout-ms", String(HEADERS_TIMEOUT_MS)],
      ).then((started) => {
        server = started;
        baseUrl = started.baseUrl;
      }),
      launchChromium().then((launched) => {
        browser = launched;
      }),
    ]);
    // The pages the tests open, compiled now (a cold build directory takes longer than a page's 20 s on a busy machine).
    await warmRoutes(baseUrl, [
      ["GET", "/"],
      ["GET", "/signin"],
      ["GET", "/settings"],
      ["GET", "/docs"],
      ["POST", "/api/ocr/process"],
    ]);
  }, 300_000);

  afterAll(async () => {
    await browser?.close();
    await server?.stop();
  });

  async function newPage(
    viewport = { width: 1100, height: 900 },
    javaScriptEnabled = true,
    options: BrowserContextOptions = {},
  ): Promise<Page> {
    if (!browser) throw new Error("browser not started");
    const context = await browser.newContext({ viewport, javaScriptEnabled, ...options });
    const page = await context.newPage();
    page.setDefaultTimeout(20_000);
    return page;
  }

  /** How far the page is wider than its viewport (0 or less: no horizontal scrolling). */
  async function overflowOf(page: Page): Promise<number> {
    return page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
  }

  /** Read public/samples/scan.png through the API with `key`, in `format`; the 200 body. */
  async function ocrWith(key: string, format: "text" | "json" | "markdown"): Promise<{ requestId: string }> {
    const image = readFileSync(path.join(ROOT, "public/samples/scan.png")).toString("base64");
    const response = await fetch(`${baseUrl}/api/ocr/process`, {
      method: "POST",
      headers: { "x-api-key": key, "content-type": "application/json" },
      body: JSON.stringify({ image, options: { format } }),
    });
    expect(response.status).toBe(200);
    const body = (await response.json()) as { success: boolean; requestId: string };
    expect(body.success).toBe(true);
    return body;
  }

  it("signs up, shows the free credits and the empty chart, creates a key once with try-it snippets (the curl one copied and run), matches its request in the ledger, filters and exports it, revokes it (still listed), signs out", async () => {
    const page = await newPage({ width: 1280, height: 900 });
    const email = `browser-${Date.now()}@example.com`;

    // Signed out: /settings sends us to sign in.
    await page.goto(`${baseUrl}/settings`);
    await page.waitForURL(`${baseUrl}/signin`);
    await page.getByRole("link", { name: "Create an account" }).click();
    await page.waitForURL(/mode=signup/);

    // Too-short password: the server's message appears inline (the browser's own check is bypassed).
    await page.getByLabel("E-mail").fill(email);
    await page.getByLabel("Password").fill("short");
    await page.locator("form").evaluate((form) => form.setAttribute("novalidate", ""));
    await page.getByRole("button", { name: "Create account" }).click();
    await expect.poll(() => page.locator("#auth-error[role=alert]").textContent()).toContain("at least 8 characters");

    await page.getByLabel("E-mail").fill(email);
    await page.getByLabel("Password").fill("a long enough password");
    await page.getByRole("button", { name: "Create account" }).click();
    await page.waitForURL(`${baseUrl}/settings`);

    // The session cookie: HttpOnly, SameSite=Lax, 30 days (not Secure on http://127.0.0.1).
    const cookies = await page.context().cookies();
    const session = cookies.find((cookie) => cookie.name === "ocr_session");
    expect(session).toMatchObject({ httpOnly: true, sameSite: "Lax", secure: false, path: "/" });
    expect((session?.expires ?? 0) * 1000 - Date.now()).toBeGreaterThan(29 * 24 * 3600 * 1000);

    await expect.poll(() => page.getByTestId("balance").textContent()).toBe(FREE_CREDITS);
    // On Redis there are no test credits (issue 29 point 10; the server refuses them too: tests/credits/test-credits.test.ts).
    expect(await page.getByRole("button", { name: /test credits/ }).count()).toBe(0);
    await expect.poll(() => page.locator(".ledger-table tbody tr").first().textContent()).toMatch(/\+100.*signup/);
    await expect.poll(() => page.getByText("No API keys yet.").isVisible()).toBe(true);
    // A new account's usage chart is a message, not an empty box.
    expect(await page.getByTestId("usage-empty").textContent()).toContain("No pages read in the last 30 days");
    expect(await page.locator(".chart svg").count()).toBe(0);

    // Create a key: shown once, with a copy button and the warning.
    await page.getByLabel("Key name").fill("browser test key");
    await page.getByRole("button", { name: "Create key" }).click();
    const keyField = page.getByLabel("Your new API key");
    await keyField.waitFor();
    const key = await keyField.inputValue();
    shownKeys.push(key);
    expect(key).toMatch(/^ocr_[1-9A-HJ-NP-Za-km-z]{43,44}$/);
    expect(await page.locator(".key-reveal[role=status]").textContent()).toContain("You won’t see it again");
    expect(await page.getByRole("button", { name: "Copy", exact: true }).isVisible()).toBe(true);
    const start = key.slice(0, 12);
    const row = page.locator(`tr[data-key-start="${start}"]`);
    await row.waitFor();
    expect(await row.textContent()).toContain("browser test key");
    expect(await row.textContent()).toContain(`${start}…`);
    expect(await resolveApiKey(getStore(), key)).toMatchObject({ name: "browser test key" });

    // Try-it snippets under it: curl (a file, a URL), the CLI, Claude Code, an MCP configuration — each with the new
    // key and this server's origin, each with its own copy button.
    const snippetIds = await page
      .locator("[data-snippet]")
      .evaluateAll((nodes) => nodes.map((node) => node.getAttribute("data-snippet")));
    expect(snippetIds).toEqual(["curl-base64", "curl-url", "cli", "claude-code", "cursor"]);
    for (const id of snippetIds) {
      const code = (await page.locator(`[data-snippet="${id}"] pre code`).textContent()) ?? "";
      expect(code, `${id}`).toContain(key);
      expect(code, `${id}`).toContain(baseUrl);
    }
    expect(JSON.parse((await page.locator('[data-snippet="cursor"] pre code').textContent()) ?? "")).toEqual({
      mcpServers: { ocr: { url: `${baseUrl}/api/mcp`, headers: { "x-api-key": key } } },
    });
    expect(await page.getByRole("button", { name: /^Copy/ }).count()).toBe(1 + snippetIds.length);
    expect(await overflowOf(page), "horizontal overflow at 1280 px with the snippets").toBeLessThanOrEqual(0);

    // Copy the curl command with its button, and run what was copied, from the repository's root (the sample path).
    await page.context().grantPermissions(["clipboard-read", "clipboard-write"], { origin: baseUrl });
    const copyCurl = page.getByRole("button", { name: "Copy the curl command", exact: true });
    await copyCurl.click();
    await expect.poll(() => copyCurl.textContent()).toBe("Copied");
    const command = await page.evaluate(() => navigator.clipboard.readText());
    expect(command).toBe(await page.locator('[data-snippet="curl-base64"] pre code').textContent());
    const curl = spawnSync("sh", ["-c", command], { cwd: ROOT, encoding: "utf8", timeout: 60_000 });
    expect(curl.status, curl.stderr).toBe(0);
    const answer = JSON.parse(curl.stdout) as {
      success: boolean;
      requestId: string;
      creditsUsed: number;
      extractedText: string;
    };
    expect(answer).toMatchObject({ success: true, creditsUsed: 1, requestId: expect.stringMatching(/^req_/) });
    expect(answer.extractedText).toContain("ACME OFFICE SUPPLIES");

    // A second key, and a Markdown request with it (straight to the API).
    await page.getByLabel("Key name").fill("second key");
    await page.getByRole("button", { name: "Create key" }).click();
    await expect.poll(() => keyField.inputValue()).not.toBe(key);
    const secondKey = await keyField.inputValue();
    shownKeys.push(secondKey);
    const second = await ocrWith(secondKey, "markdown");

    // After a reload the key is listed by its start only; the full key is gone for good.
    await page.reload();
    await row.waitFor();
    expect(await page.content()).not.toContain(key);
    expect(await page.content()).not.toContain(secondKey);
    expect(await page.getByLabel("Your new API key").count()).toBe(0);
    expect(await page.locator("[data-snippet]").count()).toBe(0);
    // The chart has today's two pages.
    expect(await page.getByTestId("usage-empty").count()).toBe(0);
    expect(await page.locator(".chart svg").getAttribute("aria-label")).toContain("2 in total");

    // Each request's ledger row: time, change, balance, reason, request id, key name, format, pages.
    const cells = (requestId: string) =>
      page.locator(`.ledger-table tr[data-request-id="${requestId}"]`).first().locator("td").allTextContents();
    expect((await cells(answer.requestId)).slice(1)).toEqual([
      "−1",
      "99",
      "ocr",
      answer.requestId,
      "browser test key",
      "text",
      "1",
    ]);
    expect((await cells(second.requestId)).slice(1)).toEqual([
      "−1",
      "98",
      "ocr",
      second.requestId,
      "second key",
      "markdown",
      "1",
    ]);
    expect(await overflowOf(page), "horizontal overflow at 1280 px with the ledger").toBeLessThanOrEqual(0);
    await page.screenshot({ path: path.join(ARTIFACTS, "settings.png"), fullPage: true });

    // Filter by key (a GET form): only that key's rows.
    await page.getByLabel("Key", { exact: true }).selectOption({ label: `browser test key (${start}…)` });
    await page.getByRole("button", { name: "Show" }).click();
    await page.waitForURL(/\?key=key_/);
    const keyId = new URL(page.url()).searchParams.get("key") ?? "";
    const requestIdsShown = () =>
      page
        .locator(".ledger-table tbody tr")
        .evaluateAll((rows) => rows.map((tableRow) => tableRow.getAttribute("data-request-id")));
    expect(await requestIdsShown()).toEqual([answer.requestId]);

    // The CSV export of the filter, fetched with the page's cookies.
    const csvHref = (await page.getByRole("link", { name: "Download CSV of this key" }).getAttribute("href")) ?? "";
    expect(csvHref).toBe(`/settings/ledger.csv?key=${keyId}`);
    const filtered = await page.request.get(`${baseUrl}${csvHref}`);
    expect(filtered.status()).toBe(200);
    expect(filtered.headers()["content-type"]).toBe("text/csv; charset=utf-8");
    expect(filtered.headers()["content-disposition"]).toMatch(
      new RegExp(`^attachment; filename="ocr-ledger-${keyId}-\\d{4}-\\d{2}-\\d{2}\\.csv"$`),
    );
    const filteredLines = (await filtered.text()).split("\r\n");
    expect(filteredLines[0]).toBe("time,change,balance_after,reason,request_id,key_name,key_id,format,pages");
    expect(filteredLines.slice(1)).toEqual([
      expect.stringMatching(
        new RegExp(`^\\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z,-1,99,ocr,${answer.requestId},browser test key,${keyId},text,1$`),
      ),
      "",
    ]);
    // The whole ledger: the signup and both requests; never a key.
    const whole = await (await page.request.get(`${baseUrl}/settings/ledger.csv`)).text();
    expect(
      whole
        .split("\r\n")
        .slice(1, -1)
        .map((line) => line.split(",")[3]),
    ).toEqual(["ocr", "ocr", "signup"]);
    expect(whole).toContain(`${second.requestId},second key,`);
    for (const shown of [key, secondKey]) expect(whole).not.toContain(shown.slice(4));
    // Without the session cookie: nothing.
    expect((await fetch(`${baseUrl}/settings/ledger.csv`)).status).toBe(401);

    // Revoke, with confirmation: the key stays listed, greyed, with when it was revoked, after the active one.
    await page.goto(`${baseUrl}/settings`);
    await row.getByText("Revoke", { exact: true }).click();
    await row.getByRole("button", { name: "Revoke key" }).click();
    await expect.poll(() => row.getAttribute("data-revoked")).toBe("true");
    expect(await row.textContent()).toMatch(/Revoked \d{1,2} \w{3} \d{4}, \d{2}:\d{2}/);
    expect(await row.getByText("Revoke", { exact: true }).count()).toBe(0);
    const muted = "rgb(91, 100, 112)";
    expect(
      await row
        .locator("td")
        .first()
        .evaluate((cell) => getComputedStyle(cell).color),
    ).toBe(muted);
    const secondRow = page.locator(`tr[data-key-start="${secondKey.slice(0, 12)}"]`);
    expect(
      await secondRow
        .locator("td")
        .first()
        .evaluate((cell) => getComputedStyle(cell).color),
    ).not.toBe(muted);
    expect(
      await page
        .locator("tr[data-key-start]")
        .evaluateAll((rows) => rows.map((keyRow) => keyRow.getAttribute("data-key-start"))),
    ).toEqual([secondKey.slice(0, 12), start]);
    expect(await resolveApiKey(getStore(), key)).toBeNull();
    // The ledger still names it.
    expect((await cells(answer.requestId))[5]).toBe("browser test key (revoked)");

    // Sign out ends the session.
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.waitForURL(`${baseUrl}/signin`);
    await page.goto(`${baseUrl}/settings`);
    await page.waitForURL(`${baseUrl}/signin`);
  }, 180_000);

  it("is usable on a phone-sized screen", async () => {
    const page = await newPage({ width: 390, height: 844 });
    // A long e-mail with nowhere a line may break (no hyphen, no space): it must not widen the page.
    const email = `phone${Date.now()}averyveryverylongmailboxname@subdomainofalongcompanyname.example`;
    await signUp(page, baseUrl, email);
    const shown = await page.getByText(email, { exact: true }).boundingBox();
    const header = await page.locator(".settings-header").boundingBox();
    expect(shown && header, "the e-mail and its header").toBeTruthy();
    expect(shown!.x + shown!.width, "the e-mail's right edge against its header's").toBeLessThanOrEqual(
      header!.x + header!.width + 0.5,
    );
    expect(await overflowOf(page), "with a long e-mail").toBeLessThanOrEqual(0);
    const key = await createKeyOnPage(page, "phone");
    shownKeys.push(key);
    // Nothing forces the page wider than the screen: not the snippets (they scroll in their own boxes)…
    await page.locator('[data-snippet="curl-base64"]').waitFor();
    expect(await overflowOf(page), "with the snippets").toBeLessThanOrEqual(0);
    await page.screenshot({ path: path.join(ARTIFACTS, "settings-phone-snippets.png"), fullPage: true });
    // … nor the ledger's rows with request ids (the table scrolls in its container).
    const { requestId } = await ocrWith(key, "json");
    await page.reload();
    await page.locator(`.ledger-table tr[data-request-id="${requestId}"]`).first().waitFor();
    expect(await overflowOf(page), "with the ledger").toBeLessThanOrEqual(0);
    await waitForHydration(page);
    await page.screenshot({ path: path.join(ARTIFACTS, "settings-phone.png"), fullPage: true });
  }, 180_000);

  it("works without JavaScript: sign up, create a key (shown once), revoke it", async () => {
    const page = await newPage(undefined, false);
    await signUp(page, baseUrl, `nojs-${Date.now()}@example.com`);
    expect(await page.getByTestId("balance").textContent()).toBe(FREE_CREDITS);

    const key = await createKeyOnPage(page, "no script");
    shownKeys.push(key);
    expect(await resolveApiKey(getStore(), key)).toMatchObject({ name: "no script" });
    // The try-it snippets come with the server's answer too.
    expect(await page.locator('[data-snippet="curl-base64"] pre code').textContent()).toContain(key);

    const row = page.locator(`tr[data-key-start="${key.slice(0, 12)}"]`);
    await row.getByText("Revoke", { exact: true }).click();
    await row.getByRole("button", { name: "Revoke key" }).click();
    await page.locator(`tr[data-key-start="${key.slice(0, 12)}"][data-revoked="true"]`).waitFor();
    expect(await row.textContent()).toContain("Revoked");
    expect(await resolveApiKey(getStore(), key)).toBeNull();

    // The ledger's key filter is a plain form: it works without JavaScript too.
    await page.getByLabel("Key", { exact: true }).selectOption({ label: `no script (${key.slice(0, 12)}…) · revoked` });
    await page.getByRole("button", { name: "Show" }).click();
    await page.waitForURL(/\?key=key_/);
    expect(await page.getByTestId("ledger-empty").textContent()).toBe("No credit changes with “no script”.");
    expect(await page.getByRole("link", { name: "Download CSV of this key" }).getAttribute("href")).toMatch(
      /^\/settings\/ledger\.csv\?key=key_/,
    );
  });

  /**
   * Send the sign-up form in a fresh context (from the socket 127.0.0.1, plus any headers given), not waiting for
   * /settings: the page ends there or shows an error (the shared `signUp` waits for /settings).
   */
  async function submitSignUp(page: Page, email: string): Promise<void> {
    await page.goto(`${baseUrl}/signin?mode=signup`);
    await page.getByLabel("E-mail").fill(email);
    await page.getByLabel("Password").fill("a long enough password");
    await page.getByRole("button", { name: "Create account" }).click();
  }

  /** Collect what Chromium reports about the Content-Security-Policy: console lines and securitypolicyviolation events. */
  async function watchCsp(page: Page): Promise<string[]> {
    const violations: string[] = [];
    page.on("console", (message) => {
      if (/Content Security Policy|Content-Security-Policy|Refused to/i.test(message.text()))
        violations.push(message.text());
    });
    await page.addInitScript(() => {
      document.addEventListener("securitypolicyviolation", (event) => {
        console.error(`Refused to load (CSP event): ${event.violatedDirective} ${event.blockedURI}`);
      });
    });
    return violations;
  }

  it("every page and route carries the security headers; pages load and hydrate with no CSP violation", async () => {
    const page = await newPage();
    const violations = await watchCsp(page);
    await submitSignUp(page, `csp-${Date.now()}@example.com`);
    await page.waitForURL(`${baseUrl}/settings`);
    for (const pathname of ["/", "/signin", "/settings", "/docs"]) {
      const response = await page.goto(`${baseUrl}${pathname}`);
      const headers = response!.headers();
      expect(response!.status(), pathname).toBe(200);
      const csp = headers["content-security-policy"] ?? "";
      expect(csp, pathname).toMatch(/script-src 'self' 'nonce-[A-Za-z0-9+/=]{20,}' 'strict-dynamic'/);
      expect(csp).toContain("frame-ancestors 'none'");
      expect(csp).toContain("object-src 'none'");
      expect(headers).toMatchObject({
        "x-content-type-options": "nosniff",
        "x-frame-options": "DENY",
        "referrer-policy": "strict-origin-when-cross-origin",
      });
      expect(headers["permissions-policy"]).toContain("camera=()");
      // No HSTS over plain http.
      expect(headers["strict-transport-security"]).toBeUndefined();
      // Every script the server rendered carries this response's nonce (scripts they load are trusted through
      // 'strict-dynamic'), and they ran: Next's client runtime started (it sets window.next) and hydrated the page.
      const nonce = /'nonce-([^']+)'/.exec(csp)![1]!;
      const html = await response!.text();
      const scriptTags = html.match(/<script\b[^>]*>/g) ?? [];
      expect(scriptTags.length, pathname).toBeGreaterThan(0);
      for (const tag of scriptTags) expect(tag, pathname).toContain(`nonce="${nonce}"`);
      await page.waitForFunction(() => "next" in window && "__next_f" in window);
    }
    expect(violations).toEqual([]);

    // API routes: nothing may run or frame them; HSTS when a proxy says the request came over https.
    const api = await fetch(`${baseUrl}/api/health`, { headers: { "x-forwarded-proto": "https" } });
    expect(api.headers.get("content-security-policy")).toBe(
      "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
    );
    expect(api.headers.get("x-content-type-options")).toBe("nosniff");
    expect(api.headers.get("strict-transport-security")).toBe("max-age=31536000");
    const overHttps = await fetch(`${baseUrl}/signin`, { headers: { "x-forwarded-proto": "https" } });
    expect(overHttps.headers.get("strict-transport-security")).toBe("max-age=31536000");
    expect(overHttps.headers.get("content-security-policy")).toContain("upgrade-insecure-requests");
  });

  it("another origin cannot frame /settings (no clickjacking of Create key or Revoke)", async () => {
    const framePort = await freePort();
    const attacker: Server = createHttpServer((_req, res) => {
      res.setHeader("content-type", "text/html");
      res.end(
        `<!doctype html><title>attacker</title><iframe id="victim" src="${baseUrl}/settings" width="800" height="600"></iframe>`,
      );
    });
    await new Promise<void>((resolve) => attacker.listen(framePort, "127.0.0.1", resolve));
    try {
      const page = await newPage();
      const messages: string[] = [];
      page.on("console", (message) => messages.push(message.text()));
      await page.goto(`http://localhost:${framePort}/`);
      await expect
        .poll(() => messages.some((text) => /frame-ancestors|X-Frame-Options/i.test(text)), { timeout: 30_000 })
        .toBe(true);
      const frame = page.frames().find((candidate) => candidate !== page.mainFrame());
      const framedText = frame ? await frame.evaluate(() => document.body?.innerText ?? "").catch(() => "") : "";
      expect(framedText).not.toMatch(/Sign in|Create key/);
    } finally {
      await new Promise((resolve) => attacker.close(resolve));
    }
  });

  /** One request with any method (fetch refuses TRACE and CONNECT): status, headers, body. */
  function rawRequest(
    method: string,
    pathname: string,
    headers: Record<string, string> = {},
  ): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
    return new Promise((resolve, reject) => {
      const request = httpRequest(`${baseUrl}${pathname}`, { method, headers }, (response) => {
        let body = "";
        response.setEncoding("utf8");
        response.on("data", (chunk: string) => (body += chunk));
        response.on("end", () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body }));
      });
      request.on("error", reject);
      request.end();
    });
  }

  it("methods no path serves (TRACE, PROPFIND, …) are 501 not_implemented with the error body, request id and security headers, on pages and API routes", async () => {
    const reference = await fetch(`${baseUrl}/api/health`);
    const logBefore = server!.output().length;
    for (const method of ["TRACE", "PROPFIND", "PURGE", "MKCOL"]) {
      for (const pathname of [
        "/",
        "/signin",
        "/settings",
        "/api/health",
        "/api/ocr/process",
        "/api/mcp",
        "/no-such-page",
        "/_next/static/x.js",
      ]) {
        const response = await rawRequest(method, pathname);
        const where = `${method} ${pathname}`;
        expect(response.status, where).toBe(501);
        expect(response.headers["content-type"], where).toMatch(/^application\/json/);
        const body = errorBodySchema.parse(JSON.parse(response.body));
        expect(body.error.code, where).toBe("not_implemented");
        expect(body.error.message, where).toBe(
          `${method} is not implemented by this server: it serves GET, HEAD, POST, PUT, PATCH, DELETE and OPTIONS`,
        );
        expect(response.headers["x-request-id"], where).toBe(body.requestId);
        expect(body.requestId).toMatch(/^req_[\w-]{22}$/);
        // The security headers of every response, as Next.js sets them on an ordinary API answer.
        for (const name of [
          "x-content-type-options",
          "x-frame-options",
          "referrer-policy",
          "permissions-policy",
          "cross-origin-opener-policy",
          "content-security-policy",
        ]) {
          expect(response.headers[name], `${where}: ${name}`).toBe(reference.headers.get(name));
        }
        expect(response.headers["access-control-allow-origin"], where).toBe(
          pathname.startsWith("/api/") ? "*" : undefined,
        );
        if (pathname.startsWith("/api/")) {
          expect(response.headers["access-control-expose-headers"], where).toBe(
            reference.headers.get("access-control-expose-headers"),
          );
        }
      }
    }
    const overHttps = await rawRequest("TRACE", "/api/health", { "x-forwarded-proto": "https" });
    expect(overHttps.headers["strict-transport-security"]).toBe("max-age=31536000");
    // A scanner's probe is not an error of the server: no stack in its log.
    expect(server!.output().slice(logBefore)).not.toMatch(/HTTP method is unsupported|TypeError/);
    // CONNECT asks for a tunnel: the same answer, then the connection closes.
    const connectAnswer = await new Promise<string>((resolve, reject) => {
      const socket = connect(server!.port, "127.0.0.1");
      let received = "";
      socket.on("connect", () => socket.write("CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n"));
      socket.on("data", (chunk) => (received += chunk.toString()));
      socket.on("close", () => resolve(received));
      socket.on("error", reject);
    });
    expect(connectAnswer).toMatch(/^HTTP\/1\.1 501 Not Implemented\r\n/);
    expect(connectAnswer).toMatch(/x-request-id: req_/);
    expect(connectAnswer).toContain('"code":"not_implemented"');
    // Methods the server does serve still reach the routes: 405 with Allow where a route does not take them.
    const put = await rawRequest("PUT", "/api/health");
    expect(put.status).toBe(405);
    expect(put.headers.allow).toBe("GET, HEAD, OPTIONS");
  });

  it("a cross-site server-action POST is 403 forbidden with the error body, not 500; nothing runs", async () => {
    const logBefore = server!.output().length;
    // As Next's client posts an action (fetch with Next-Action), but from another origin.
    for (const origin of ["https://attacker.example", "http://127.0.0.1:1", "null", "not a url"]) {
      const response = await fetch(`${baseUrl}/signin`, {
        method: "POST",
        headers: {
          "next-action": "7f".padEnd(42, "0"),
          origin,
          "content-type": "text/plain;charset=UTF-8",
          accept: "text/x-component",
        },
        body: "[]",
      });
      expect(response.status, origin).toBe(403);
      const body = errorBodySchema.parse(await response.json());
      expect(body.error).toEqual({
        code: "forbidden",
        message: expect.stringMatching(/^This form was posted from another site/),
      });
      expect(response.headers.get("x-request-id")).toBe(body.requestId);
      expect(response.headers.get("x-content-type-options")).toBe("nosniff");
      expect(response.headers.get("cache-control")).toBe("no-store");
    }
    expect(server!.output().slice(logBefore)).not.toMatch(/Invalid Server Actions request|POST \/signin 500/);

    // A real cross-site form: another origin's page copies the sign-up form (hidden action fields included) and
    // submits it in the victim's browser. The browser sends its own Origin; the account is not created.
    const html = await (await fetch(`${baseUrl}/signin?mode=signup`)).text();
    const form = /<form[^>]*>[\s\S]*?<\/form>/.exec(html)?.[0];
    expect(form).toContain('type="hidden"');
    const email = `csrf-${Date.now()}@example.com`;
    const attackerPort = await freePort();
    const attacker: Server = createHttpServer((_req, res) => {
      res.setHeader("content-type", "text/html");
      const copy = form!
        .replace(
          /<form[^>]*>/,
          `<form id="f" method="post" enctype="multipart/form-data" action="${baseUrl}/signin?mode=signup">`,
        )
        .replace(/(name="email"[^>]*?)(\/?>)/, `$1 value="${email}"$2`)
        .replace(/(name="password"[^>]*?)(\/?>)/, `$1 value="a long enough password"$2`);
      res.end(`<!doctype html><title>attacker</title>${copy}<script>document.getElementById("f").submit()</script>`);
    });
    await new Promise<void>((resolve) => attacker.listen(attackerPort, "127.0.0.1", resolve));
    try {
      const page = await newPage();
      const answered = page.waitForResponse(
        (response) => response.url().startsWith(`${baseUrl}/signin`) && response.request().method() === "POST",
      );
      await page.goto(`http://localhost:${attackerPort}/`);
      const response = await answered;
      expect(response.request().headers().origin).toBe(`http://localhost:${attackerPort}`);
      expect(response.status()).toBe(403);
      expect(errorBodySchema.parse(await response.json()).error.code).toBe("forbidden");
      expect(await getAccountByEmail(getStore(), email)).toBeNull();
      await page.context().close();
    } finally {
      await new Promise((resolve) => attacker.close(resolve));
    }
  });

  it("sign-ups from one socket are limited whatever X-Forwarded-For claims (8 rotating values)", async () => {
    const redis = createClient({ url: TEST_REDIS_URL, RESP: 2 });
    await redis.connect();
    // Start from an empty count for 127.0.0.1 (earlier tests of this file signed up from it).
    const clearCounts = async () => {
      for await (const keys of redis.scanIterator({ MATCH: `${prefix}ratelimit:signup-address*`, COUNT: 100 })) {
        if (keys.length > 0) await redis.unlink(keys);
      }
    };
    try {
      // The limit counts in hours of the clock; sign-ups on both sides of an hour's end are two hours' counts.
      const outcomes = await inOneWindow(60 * 60 * 1000, async () => {
        await clearCounts();
        const seen: string[] = [];
        // The limit and three past it, each claiming another address (scripts/smoke.ts tries 20 on `npm start`).
        for (let i = 0; i < SIGNUPS_PER_ADDRESS + 3; i++) {
          const page = await newPage(undefined, false, {
            extraHTTPHeaders: { "x-forwarded-for": `198.51.100.${i + 1}` },
          });
          await submitSignUp(page, `rotate-${i}-${Date.now()}@example.com`);
          await Promise.race([page.waitForURL("**/settings"), page.locator("#auth-error").waitFor()]);
          seen.push(
            page.url().endsWith("/settings") ? "created" : ((await page.locator("#auth-error").textContent()) ?? "?"),
          );
          await page.context().close();
        }
        return seen;
      });
      expect(outcomes.slice(0, SIGNUPS_PER_ADDRESS)).toEqual(Array(SIGNUPS_PER_ADDRESS).fill("created"));
      for (const outcome of outcomes.slice(SIGNUPS_PER_ADDRESS)) {
        expect(outcome).toMatch(/^Too many sign-ups from your network\. Try again in \d+ (minutes?|seconds?)\.$/);
      }
    } finally {
      await clearCounts();
      redis.destroy();
    }
  });

  it("closes connections whose headers arrive too slowly (slow loris)", async () => {
    const started = Date.now();
    const closedAfter = await Promise.all(
      Array.from(
        { length: 20 },
        () =>
          new Promise<number>((resolve, reject) => {
            const socket = connect(server!.port, "127.0.0.1");
            socket.on("error", () => undefined);
            socket.on("connect", () => socket.write("GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\n"));
            // One more header line every 500 ms, never the blank line that ends them.
            const drip = setInterval(() => socket.write(`X-Drip-${Date.now()}: 1\r\n`), 500);
            const giveUp = setTimeout(() => {
              clearInterval(drip);
              socket.destroy();
              reject(new Error("still open after 45 s"));
            }, 45_000);
            socket.on("close", () => {
              clearInterval(drip);
              clearTimeout(giveUp);
              resolve(Date.now() - started);
            });
          }),
      ),
    );
    // Closed by the headers timeout (checked every second), not by Node's default 60 s: the bound is that default,
    // halved, not a measure of how fast a busy machine gets round to it.
    expect(Math.max(...closedAfter)).toBeLessThan(30_000);
    expect(Math.min(...closedAfter)).toBeGreaterThanOrEqual(HEADERS_TIMEOUT_MS - 100);
    // The server still answers.
    expect((await fetch(`${baseUrl}/api/health`)).status).toBe(200);
  });

  it("/docs is the manual: every example carries this origin, and at 390 px and 1280 px nothing overflows", async () => {
    for (const width of [390, 1280]) {
      const page = await newPage({ width, height: 900 });
      await page.goto(`${baseUrl}/docs`);
      const ids = await page
        .locator("[data-example]")
        .evaluateAll((nodes) => nodes.map((node) => node.getAttribute("data-example")));
      const jobIds = ["job-curl", "job-javascript", "job-python"]; // run by tests/jobs/examples.test.ts
      // Signing in with OAuth needs only the URL (lib/api-docs/examples.ts mcpSignInExamples); then the API-key configurations.
      const signIn = ["oauth-claude-chatgpt", "oauth-claude-code", "oauth-cursor", "oauth-vscode", "oauth-mcp-remote"];
      expect(ids).toEqual([
        "curl-file",
        "curl-raw",
        "curl-base64",
        "curl-url",
        "javascript",
        "python",
        ...jobIds,
        ...signIn,
        "claude-code",
        "claude-desktop",
        "cursor",
        "vscode",
        "ai-sdk",
        "cli",
      ]);
      for (const id of [
        "curl-file",
        "curl-raw",
        "curl-base64",
        "curl-url",
        "javascript",
        "python",
        ...jobIds,
        ...signIn,
        "claude-code",
        "cursor",
        "vscode",
        "ai-sdk",
        "cli",
      ]) {
        expect(await page.locator(`[data-example="${id}"] code`).textContent(), id).toContain(baseUrl);
      }
      expect(await page.getByRole("button", { name: "Copy" }).count()).toBe(ids.length);
      const overflow = await page.evaluate(
        () => document.documentElement.scrollWidth - document.documentElement.clientWidth,
      );
      expect(overflow, `horizontal overflow at ${width} px`).toBeLessThanOrEqual(0);
      // The error table: every code on one line (one line box, not `insuffic ient_cre dits`), in full within the screen.
      const codes = await page
        .locator("table", { has: page.getByRole("columnheader", { name: "Code" }) })
        .locator("tbody tr td:nth-child(2) code")
        .evaluateAll((nodes) =>
          nodes.map((node) => ({
            code: node.textContent,
            lines: node.getClientRects().length,
            right: node.getBoundingClientRect().right,
          })),
        );
      expect(codes.length).toBeGreaterThanOrEqual(16);
      for (const { code, lines, right } of codes) {
        expect(lines, `${code} at ${width} px: line boxes`).toBe(1);
        expect(right, `${code} at ${width} px: right edge`).toBeLessThanOrEqual(width);
      }
      if (width === 390) await page.screenshot({ path: path.join(ARTIFACTS, "docs-phone.png"), fullPage: true });
      await page.context().close();
    }
  });

  /** The /docs examples' code, as the page shows it (a fresh page each time). */
  async function docsExamples(): Promise<(id: string) => string> {
    const page = await newPage();
    await page.goto(`${baseUrl}/docs`);
    const entries = await page
      .locator("[data-example]")
      .evaluateAll((nodes) =>
        nodes.map((node) => [node.getAttribute("data-example") ?? "", node.querySelector("code")?.textContent ?? ""]),
      );
    await page.context().close();
    const byId = new Map(entries.map(([id, text]) => [id!, text!]));
    return (id) => byId.get(id) ?? "";
  }

  /** Run a /docs example as a user would, from the repository's root with OCR_API_KEY set: sh, Node or Python. */
  function runExample(id: string, code: string, key: string) {
    const [command, args] = id.startsWith("curl")
      ? ["sh", ["-c", code]]
      : id === "python"
        ? ["python3", ["-c", code]]
        : [process.execPath, ["--input-type=module", "-e", code]];
    return spawnSync(command, args, {
      cwd: ROOT,
      env: { ...process.env, OCR_API_KEY: key },
      encoding: "utf8",
      timeout: 60_000,
    });
  }

  // The Python example needs the requests package (.ci/run does not install Python packages).
  const pythonRequests = spawnSync("python3", ["-c", "import requests"]).status === 0;

  // The server runs without URL_ALLOW_HOSTS: it reads its own /samples/… URLs from its files (lib/input/own-samples.ts).
  it("the /docs shell and JavaScript examples, copied from the page and run, read the samples (URL ones included) on this local server", async () => {
    const account = await newApiAccount();
    const code = await docsExamples();
    const runs = [
      // Issue 29 point 8: the file itself, multipart (-F) and as the raw body (--data-binary).
      { id: "curl-file", text: /ACME OFFICE SUPPLIES[\s\S]*Total due 82\.40 EUR/ },
      { id: "curl-raw", text: /ACME OFFICE SUPPLIES/ },
      { id: "curl-base64", text: /ACME OFFICE SUPPLIES[\s\S]*Total due 82\.40 EUR/ },
      { id: "curl-url", text: /ACME OFFICE SUPPLIES/ },
    ];
    for (const run of runs) {
      const result = runExample(run.id, code(run.id), account.key);
      expect(result.status, `${run.id}: ${result.stdout} ${result.stderr}`).toBe(0);
      const body = JSON.parse(result.stdout) as { success: boolean; extractedText: string };
      expect(body.success, run.id).toBe(true);
      expect(body.extractedText, run.id).toMatch(run.text);
    }
    // The JavaScript example prints the scan's text, then the report's JSON document (read from its URL).
    const js = runExample("javascript", code("javascript"), account.key);
    expect(js.status, js.stderr).toBe(0);
    expect(js.stdout).toMatch(/ACME OFFICE SUPPLIES[\s\S]*"source":"text-layer"/);
    // The AI SDK example calls extract_text over MCP on the sample's URL.
    const ai = runExample("ai-sdk", code("ai-sdk"), account.key);
    expect(ai.status, ai.stderr).toBe(0);
    expect(ai.stdout).toMatch(/ACME OFFICE SUPPLIES/);
    expect(await account.balance()).toBe(100 - 8); // scan.png, scan.pdf, scan.png, scan.pdf, scan.png, report.pdf (2 pages), scan.png
  });

  it.skipIf(!pythonRequests)(
    "the /docs Python example, copied from the page and run, reads the scan and the report's URL",
    async () => {
      const account = await newApiAccount();
      const python = runExample("python", (await docsExamples())("python"), account.key);
      expect(python.status, python.stderr).toBe(0);
      expect(python.stdout).toMatch(/ACME OFFICE SUPPLIES[\s\S]*# Annual Summary/);
      expect(await account.balance()).toBe(100 - 3); // scan.png, report.pdf (2 pages)
    },
  );

  it("every runnable /docs example exits non-zero on an error answer (a key without credits: 402, or an isError tool result)", async () => {
    const account = await newApiAccount(0);
    const code = await docsExamples();
    const ids = [
      "curl-file",
      "curl-raw",
      "curl-base64",
      "curl-url",
      "javascript",
      ...(pythonRequests ? ["python"] : []),
      "ai-sdk",
    ];
    for (const id of ids) {
      const result = runExample(id, code(id), account.key);
      // curl --fail-with-body: 22 with the error body on stdout; a thrown error in Node or Python: 1, on stderr.
      expect(result.status, `${id}: ${result.stdout} ${result.stderr}`).toBe(id.startsWith("curl") ? 22 : 1);
      expect(id.startsWith("curl") ? result.stdout : result.stderr, id).toContain("insufficient_credits");
      if (!id.startsWith("curl")) expect(result.stdout, `${id} prints no result`).toBe("");
    }
  });

  it("no API key ever reaches the server's output (sign-up → create key, with request logging on)", () => {
    expect(shownKeys.length).toBeGreaterThanOrEqual(3);
    const output = server!.output();
    expect(output.length).toBeGreaterThan(0);
    for (const key of shownKeys) {
      expect(output).not.toContain(key);
      expect(output).not.toContain(key.slice(4)); // not even without its prefix
    }
    expect(output).not.toMatch(/ocr_[1-9A-HJ-NP-Za-km-z]{40,}/);
  });
});
