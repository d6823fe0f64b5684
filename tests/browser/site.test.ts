import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync } from "node:fs";
import { createServer } from "node:net";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { resolveApiKey } from "@/lib/keys";
import { TEST_REDIS_URL, withRedisStoreEnv } from "../support/redis";

const CHROMIUM = "/usr/bin/chromium";
const ROOT = path.resolve(import.meta.dirname, "../..");
const ARTIFACTS = path.join(ROOT, "tests/artifacts");
const FREE_CREDITS = "100";

// The server and this test share one Redis prefix, so the test can check from outside the browser that a
// revoked key stops resolving; the prefix is deleted afterwards.
const { prefix } = withRedisStoreEnv("browser");

let server: ChildProcess | undefined;
let serverOutput = "";
let baseUrl = "";
let browser: Browser | undefined;

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address();
      const port = typeof address === "object" && address ? address.port : 0;
      probe.close(() => resolve(port));
    });
  });
}

/** Start `next dev` in its own process group, on a free port, with the Redis store under this run's prefix. */
async function startServer(): Promise<void> {
  const port = await freePort();
  baseUrl = `http://127.0.0.1:${port}`;
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    NODE_ENV: "development",
    NEXT_TELEMETRY_DISABLED: "1",
    REDIS_URL: TEST_REDIS_URL,
    REDIS_PREFIX: prefix,
    FREE_CREDITS,
  };
  for (const name of ["UPSTASH_REDIS_REST_URL", "UPSTASH_REDIS_REST_TOKEN", "KV_REST_API_URL", "KV_REST_API_TOKEN"]) {
    delete env[name];
  }
  const child = spawn(path.join(ROOT, "node_modules/.bin/next"), ["dev", "--port", String(port), "--hostname", "127.0.0.1"], {
    cwd: ROOT,
    env,
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
  });
  server = child;
  child.stdout?.on("data", (chunk: Buffer) => (serverOutput += chunk.toString()));
  child.stderr?.on("data", (chunk: Buffer) => (serverOutput += chunk.toString()));

  const deadline = Date.now() + 90_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) {
      // e.g. another `next dev` already holds .next/dev/lock for this checkout.
      throw new Error(`next dev exited with code ${child.exitCode} before answering:\n${serverOutput}`);
    }
    try {
      const response = await fetch(`${baseUrl}/signin`, { redirect: "manual" });
      if (response.status === 200) return;
    } catch {
      // not listening yet
    }
    await sleep(250);
  }
  throw new Error(`next dev did not answer within 90 s:\n${serverOutput}`);
}

async function stopServer(): Promise<void> {
  const child = server;
  if (!child?.pid || child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  process.kill(-child.pid, "SIGTERM");
  const timeout = sleep(5_000).then(() => "timeout");
  if ((await Promise.race([exited, timeout])) === "timeout" && child.exitCode === null) process.kill(-child.pid, "SIGKILL");
}

describe("settings page in headless Chromium", () => {
  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) {
      throw new Error(`Chromium is missing at ${CHROMIUM}: install Debian's chromium package (CI's .ci/run does).`);
    }
    mkdirSync(ARTIFACTS, { recursive: true });
    await Promise.all([
      startServer(),
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
    await stopServer();
  });

  async function newPage(viewport = { width: 1100, height: 900 }, javaScriptEnabled = true): Promise<Page> {
    if (!browser) throw new Error("browser not started");
    const context = await browser.newContext({ viewport, javaScriptEnabled });
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
    await page.getByLabel("Your new API key").waitFor();
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
    expect(await resolveApiKey(key)).toMatchObject({ name: "no script" });

    const row = page.locator(`tr[data-key-start="${key.slice(0, 12)}"]`);
    await row.getByText("Revoke", { exact: true }).click();
    await row.getByRole("button", { name: "Revoke key" }).click();
    await page.getByText("No API keys yet.").waitFor();
    expect(await resolveApiKey(key)).toBeNull();
  });
});
