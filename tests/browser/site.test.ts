import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, existsSync } from "node:fs";
import { createServer as createHttpServer, type Server } from "node:http";
import { connect } from "node:net";
import path from "node:path";
import { chromium, type Browser, type BrowserContextOptions, type Page } from "playwright-core";
import { createClient } from "redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { getBalance, grantCredits } from "@/lib/credits";
import { createApiKey, resolveApiKey } from "@/lib/keys";
import { freePort, startDevServer, type DevServer } from "../support/dev-server";
import { TEST_REDIS_URL, withRedisStoreEnv } from "../support/redis";

const CHROMIUM = "/usr/bin/chromium";
const ROOT = path.resolve(import.meta.dirname, "../..");
const ARTIFACTS = path.join(ROOT, "tests/artifacts");
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

/** An account with 100 credits and a key, made directly in the store the server uses (for running examples). */
async function newApiAccount(): Promise<{ key: string; balance: () => Promise<number> }> {
  const userId = `usr_docs${randomBytes(6).toString("hex")}`;
  await grantCredits({ userId, credits: 100 });
  const { key } = await createApiKey({ userId, name: "docs examples" });
  return { key, balance: () => getBalance(userId) };
}

/** The whole site in headless Chromium, on the development server `npm run dev` runs (scripts/serve.mjs). */
describe("the site in headless Chromium", () => {
  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) {
      throw new Error(`Chromium is missing at ${CHROMIUM}: install Debian's chromium package (CI's .ci/run does).`);
    }
    mkdirSync(ARTIFACTS, { recursive: true });
    await Promise.all([
      startDevServer({
        REDIS_URL: TEST_REDIS_URL,
        REDIS_PREFIX: prefix,
        FREE_CREDITS,
        SIGNUP_PER_ADDRESS_PER_HOUR: String(SIGNUPS_PER_ADDRESS),
        SERVER_HEADERS_TIMEOUT_MS: String(HEADERS_TIMEOUT_MS),
        // The docs' URL examples fetch /samples/… from this very server (a private address otherwise refused).
        URL_ALLOW_HOSTS: "127.0.0.1",
        LOG_REQUESTS: "true",
      }).then((started) => {
        server = started;
        baseUrl = started.baseUrl;
      }),
      chromium
        .launch({
          executablePath: CHROMIUM,
          args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        })
        .then((launched) => {
          browser = launched;
        }),
    ]);
  });

  afterAll(async () => {
    await browser?.close();
    await server?.stop();
  });

  async function newPage(viewport = { width: 1100, height: 900 }, javaScriptEnabled = true, options: BrowserContextOptions = {}): Promise<Page> {
    if (!browser) throw new Error("browser not started");
    const context = await browser.newContext({ viewport, javaScriptEnabled, ...options });
    const page = await context.newPage();
    page.setDefaultTimeout(20_000);
    return page;
  }

  it("signs up, shows the free credits, creates a key once, lists it by its start, revokes it, signs out", async () => {
    const page = await newPage();
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
    await expect.poll(() => page.locator(".ledger-table tbody tr").first().textContent()).toMatch(/\+100.*signup/);
    await expect.poll(() => page.getByText("No API keys yet.").isVisible()).toBe(true);

    // Create a key: shown once, with a copy button and the warning.
    await page.getByLabel("Key name").fill("browser test key");
    await page.getByRole("button", { name: "Create key" }).click();
    const keyField = page.getByLabel("Your new API key");
    await keyField.waitFor();
    const key = await keyField.inputValue();
    shownKeys.push(key);
    expect(key).toMatch(/^ocr_[1-9A-HJ-NP-Za-km-z]{43,44}$/);
    expect(await page.locator(".key-reveal[role=status]").textContent()).toContain("You won’t see it again");
    expect(await page.getByRole("button", { name: "Copy" }).isVisible()).toBe(true);
    const start = key.slice(0, 12);
    const row = page.locator(`tr[data-key-start="${start}"]`);
    await row.waitFor();
    expect(await row.textContent()).toContain("browser test key");
    expect(await row.textContent()).toContain(`${start}…`);
    expect(await resolveApiKey(key)).toMatchObject({ name: "browser test key" });

    // After a reload the key is listed by its start only; the full key is gone for good.
    await page.reload();
    await row.waitFor();
    expect(await page.content()).not.toContain(key);
    expect(await page.getByLabel("Your new API key").count()).toBe(0);
    await page.screenshot({ path: path.join(ARTIFACTS, "settings.png"), fullPage: true });

    // Revoke, with confirmation.
    await row.getByText("Revoke", { exact: true }).click();
    await row.getByRole("button", { name: "Revoke key" }).click();
    await row.waitFor({ state: "detached" });
    await expect.poll(() => page.getByText("No API keys yet.").isVisible()).toBe(true);
    expect(await resolveApiKey(key)).toBeNull();

    // Sign out ends the session.
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.waitForURL(`${baseUrl}/signin`);
    await page.goto(`${baseUrl}/settings`);
    await page.waitForURL(`${baseUrl}/signin`);
  });

  it("is usable on a phone-sized screen", async () => {
    const page = await newPage({ width: 390, height: 844 });
    await page.goto(`${baseUrl}/signin?mode=signup`);
    await page.getByLabel("E-mail").fill(`phone-${Date.now()}@example.com`);
    await page.getByLabel("Password").fill("a long enough password");
    await page.getByRole("button", { name: "Create account" }).click();
    await page.waitForURL(`${baseUrl}/settings`);
    await page.getByLabel("Key name").fill("phone");
    await page.getByRole("button", { name: "Create key" }).click();
    shownKeys.push(await page.getByLabel("Your new API key").inputValue());
    // Nothing forces the page wider than the screen.
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    expect(overflow).toBeLessThanOrEqual(0);
    await page.screenshot({ path: path.join(ARTIFACTS, "settings-phone.png"), fullPage: true });
  });

  it("works without JavaScript: sign up, create a key (shown once), revoke it", async () => {
    const page = await newPage(undefined, false);
    await page.goto(`${baseUrl}/signin?mode=signup`);
    await page.getByLabel("E-mail").fill(`nojs-${Date.now()}@example.com`);
    await page.getByLabel("Password").fill("a long enough password");
    await page.getByRole("button", { name: "Create account" }).click();
    await page.waitForURL(`${baseUrl}/settings`);
    expect(await page.getByTestId("balance").textContent()).toBe(FREE_CREDITS);

    await page.getByLabel("Key name").fill("no script");
    await page.getByRole("button", { name: "Create key" }).click();
    const keyField = page.getByLabel("Your new API key");
    await keyField.waitFor();
    const key = await keyField.inputValue();
    shownKeys.push(key);
    expect(await resolveApiKey(key)).toMatchObject({ name: "no script" });

    const row = page.locator(`tr[data-key-start="${key.slice(0, 12)}"]`);
    await row.getByText("Revoke", { exact: true }).click();
    await row.getByRole("button", { name: "Revoke key" }).click();
    await page.getByText("No API keys yet.").waitFor();
    expect(await resolveApiKey(key)).toBeNull();
  });

  /** Sign up in a fresh context (from the socket 127.0.0.1, plus any headers given); the page ends on /settings or shows an error. */
  async function signUp(page: Page, email: string): Promise<void> {
    await page.goto(`${baseUrl}/signin?mode=signup`);
    await page.getByLabel("E-mail").fill(email);
    await page.getByLabel("Password").fill("a long enough password");
    await page.getByRole("button", { name: "Create account" }).click();
  }

  /** Collect what Chromium reports about the Content-Security-Policy: console lines and securitypolicyviolation events. */
  async function watchCsp(page: Page): Promise<string[]> {
    const violations: string[] = [];
    page.on("console", (message) => {
      if (/Content Security Policy|Content-Security-Policy|Refused to/i.test(message.text())) violations.push(message.text());
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
    await signUp(page, `csp-${Date.now()}@example.com`);
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
    expect(api.headers.get("content-security-policy")).toBe("default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'");
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
      res.end(`<!doctype html><title>attacker</title><iframe id="victim" src="${baseUrl}/settings" width="800" height="600"></iframe>`);
    });
    await new Promise<void>((resolve) => attacker.listen(framePort, "127.0.0.1", resolve));
    try {
      const page = await newPage();
      const messages: string[] = [];
      page.on("console", (message) => messages.push(message.text()));
      await page.goto(`http://localhost:${framePort}/`);
      await expect.poll(() => messages.some((text) => /frame-ancestors|X-Frame-Options/i.test(text)), { timeout: 10_000 }).toBe(true);
      const frame = page.frames().find((candidate) => candidate !== page.mainFrame());
      const framedText = frame ? await frame.evaluate(() => document.body?.innerText ?? "").catch(() => "") : "";
      expect(framedText).not.toMatch(/Sign in|Create key/);
    } finally {
      await new Promise((resolve) => attacker.close(resolve));
    }
  });

  it("sign-ups from one socket are limited whatever X-Forwarded-For claims (20 rotating values)", async () => {
    const redis = createClient({ url: TEST_REDIS_URL, RESP: 2 });
    await redis.connect();
    // Start from an empty count for 127.0.0.1 (earlier tests of this file signed up from it).
    const clearCounts = async () => {
      for await (const keys of redis.scanIterator({ MATCH: `${prefix}ratelimit:signup-address*`, COUNT: 100 })) {
        if (keys.length > 0) await redis.unlink(keys);
      }
    };
    try {
      await clearCounts();
      const outcomes: string[] = [];
      for (let i = 0; i < 20; i++) {
        const page = await newPage(undefined, false, { extraHTTPHeaders: { "x-forwarded-for": `198.51.100.${i + 1}` } });
        await signUp(page, `rotate-${i}-${Date.now()}@example.com`);
        await Promise.race([page.waitForURL("**/settings"), page.locator("#auth-error").waitFor()]);
        outcomes.push(page.url().endsWith("/settings") ? "created" : ((await page.locator("#auth-error").textContent()) ?? "?"));
        await page.context().close();
      }
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
      Array.from({ length: 20 }, () =>
        new Promise<number>((resolve, reject) => {
          const socket = connect(server!.port, "127.0.0.1");
          socket.on("error", () => undefined);
          socket.on("connect", () => socket.write("GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\n"));
          // One more header line every 500 ms, never the blank line that ends them.
          const drip = setInterval(() => socket.write(`X-Drip-${Date.now()}: 1\r\n`), 500);
          const giveUp = setTimeout(() => {
            clearInterval(drip);
            socket.destroy();
            reject(new Error("still open after 15 s"));
          }, 15_000);
          socket.on("close", () => {
            clearInterval(drip);
            clearTimeout(giveUp);
            resolve(Date.now() - started);
          });
        }),
      ),
    );
    // Closed by the headers timeout (checked every second), long before Node's default 60 s.
    expect(Math.max(...closedAfter)).toBeLessThan(HEADERS_TIMEOUT_MS + 3_000);
    expect(Math.min(...closedAfter)).toBeGreaterThanOrEqual(HEADERS_TIMEOUT_MS - 100);
    // The server still answers.
    expect((await fetch(`${baseUrl}/api/health`)).status).toBe(200);
  });

  it("/docs is the manual: every example carries this origin, and at 390 px and 1280 px nothing overflows", async () => {
    for (const width of [390, 1280]) {
      const page = await newPage({ width, height: 900 });
      await page.goto(`${baseUrl}/docs`);
      const ids = await page.locator("[data-example]").evaluateAll((nodes) => nodes.map((node) => node.getAttribute("data-example")));
      expect(ids).toEqual(["curl-base64", "curl-url", "javascript", "python", "claude-code", "claude-desktop", "cursor", "vscode", "ai-sdk", "cli"]);
      for (const id of ["curl-base64", "curl-url", "javascript", "python", "claude-code", "cursor", "vscode", "ai-sdk", "cli"]) {
        expect(await page.locator(`[data-example="${id}"] code`).textContent(), id).toContain(baseUrl);
      }
      expect(await page.getByRole("button", { name: "Copy" }).count()).toBe(ids.length);
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
      expect(overflow, `horizontal overflow at ${width} px`).toBeLessThanOrEqual(0);
      if (width === 390) await page.screenshot({ path: path.join(ARTIFACTS, "docs-phone.png"), fullPage: true });
      await page.context().close();
    }
  });

  it("the /docs shell and JavaScript examples, copied from the page and run, read the samples", async () => {
    const account = await newApiAccount();
    const page = await newPage();
    await page.goto(`${baseUrl}/docs`);
    const code = (id: string) => page.locator(`[data-example="${id}"] code`).textContent().then((text) => text ?? "");
    const env = { ...process.env, OCR_API_KEY: account.key };
    const runs = [
      { id: "curl-base64", command: "sh", args: ["-c", await code("curl-base64")], text: /ACME OFFICE SUPPLIES[\s\S]*Total due 82\.40 EUR/ },
      { id: "curl-url", command: "sh", args: ["-c", await code("curl-url")], text: /ACME OFFICE SUPPLIES/ },
    ];
    for (const run of runs) {
      const result = spawnSync(run.command, run.args, { cwd: ROOT, env, encoding: "utf8", timeout: 60_000 });
      expect(result.status, `${run.id}: ${result.stderr}`).toBe(0);
      const body = JSON.parse(result.stdout) as { success: boolean; extractedText: string };
      expect(body.success, run.id).toBe(true);
      expect(body.extractedText, run.id).toMatch(run.text);
    }
    // The JavaScript example prints the scan's text, then the report's JSON document.
    const js = spawnSync(process.execPath, ["--input-type=module", "-e", await code("javascript")], { cwd: ROOT, env, encoding: "utf8", timeout: 60_000 });
    expect(js.status, js.stderr).toBe(0);
    expect(js.stdout).toMatch(/ACME OFFICE SUPPLIES[\s\S]*"source":"text-layer"/);
    // The AI SDK example calls extract_text over MCP on the sample's URL.
    const ai = spawnSync(process.execPath, ["--input-type=module", "-e", await code("ai-sdk")], { cwd: ROOT, env, encoding: "utf8", timeout: 60_000 });
    expect(ai.status, ai.stderr).toBe(0);
    expect(ai.stdout).toMatch(/ACME OFFICE SUPPLIES/);
    expect(await account.balance()).toBe(100 - 6); // scan.png, scan.pdf, scan.png, report.pdf (2 pages), scan.png
    await page.context().close();
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
