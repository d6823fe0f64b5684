import { readFileSync } from "node:fs";
import path from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../../tooling";
import { createKeyOnPage, launchChromium } from "../support/browser";
import { leaseDistDir, startNpmRunDev, type DevServer } from "../support/dev-server";

const ROOT = path.resolve(import.meta.dirname, "../..");
/** What Next.js prints when instrumentation.ts holds Node-only code it also compiles for the Edge runtime. */
const EDGE_WARNING = /not supported in the Edge Runtime/;

let browser: Browser | undefined;
let server: DevServer | undefined;
/** Everything the servers of this file printed, the stopped ones included. */
let log = "";
let port = 0;
/** A build directory of the browser tests (leaseDistDir), not .next: this file runs beside `npm run dev`. */
let distDir = "";
let releaseDistDir = () => {};

/** What a page does that a newcomer would notice: full loads, and what the dev server's hot-reload socket tells it. */
interface Watched {
  page: Page;
  loads: string[];
  /** Hot-reload messages that make the page reload or swap code: reloadPage, a Turbopack update, a server change. */
  reloadMessages: string[];
  /** Whether the hot-reload socket opened and Next.js said hello on it. */
  socketConnected: () => boolean;
  socketErrors: string[];
}

async function openWatched(url: string): Promise<Watched> {
  if (!browser) throw new Error("browser not started");
  const page = await (await browser.newContext()).newPage();
  page.setDefaultTimeout(60_000);
  const watched: Watched = { page, loads: [], reloadMessages: [], socketConnected: () => connected, socketErrors: [] };
  let connected = false;
  page.on("load", () => watched.loads.push(page.url()));
  page.on("websocket", (socket) => {
    if (!socket.url().includes("/_next/hmr")) return;
    socket.on("socketerror", (error) => watched.socketErrors.push(error));
    socket.on("framereceived", ({ payload }) => {
      const text = String(payload);
      if (text.includes('"turbopack-connected"')) connected = true;
      if (/"type":"(reloadPage|turbopack-message|serverComponentChanges)"|"restart"/.test(text))
        watched.reloadMessages.push(text.slice(0, 300));
    });
  });
  await page.goto(url, { timeout: 180_000 });
  return watched;
}

/** The ids of the server actions the page's own scripts call (`createServerReference("<id>", …)`). */
async function serverActionIds(page: Page): Promise<string[]> {
  const html = await (await page.request.get(page.url())).text();
  const scripts = [...html.matchAll(/<script[^>]* src="(\/_next\/static\/chunks\/[^"]+\.js)"/g)].map(
    (match) => match[1]!,
  );
  const ids = new Set<string>();
  for (const src of scripts) {
    const code = await (await page.request.get(new URL(src, page.url()).href)).text();
    for (const match of code.matchAll(/\["createServerReference"\]\)\("([0-9a-f]{20,})"/g)) ids.add(match[1]!);
  }
  return [...ids].sort();
}

/** Whether the dev server answers a WebSocket on `url` (sends a first message); false if it says nothing for a minute. */
async function hotReloadSocketAnswers(url: string): Promise<boolean> {
  const socket = new WebSocket(url);
  try {
    return await new Promise<boolean>((resolve) => {
      const giveUp = setTimeout(() => resolve(false), 60_000);
      socket.addEventListener("message", () => {
        clearTimeout(giveUp);
        resolve(true);
      });
      socket.addEventListener("error", () => {
        clearTimeout(giveUp);
        resolve(false);
      });
    });
  } finally {
    socket.close();
  }
}

async function stopServer(): Promise<void> {
  await server?.stop();
  log += server?.output() ?? "";
  server = undefined;
}

/** `npm run dev` as the README says: restarted on the build directory of the run before, opened in Chromium. */
describe("npm run dev, restarted, in headless Chromium", () => {
  beforeAll(async () => {
    ({ dir: distDir, release: releaseDistDir } = await leaseDistDir());
    port = await freePort();
    browser = await launchChromium();
  });

  afterAll(async () => {
    await browser?.close();
    await stopServer();
    releaseDistDir();
  });

  // Issue 20: on a warm build directory the first page opened reloaded itself about 4 times a second
  // ({"type":"reloadPage","data":"HMR hash mismatch"}, a Turbopack `restart`), wiping what was typed. The cause: in a
  // container Next.js made a new server-actions key at every start, so the pages with forms compiled to new client code
  // that Turbopack's cache of the run before did not hold (scripts/serve.mjs, docs/decisions.md#dev-server-actions-key).
  it("restarted on a warm build directory, /settings → /signin stays put while an account is typed and created, and its server actions keep their ids", async () => {
    // First run (`npm run dev -- -p <port>`, as the README says): /settings sends a signed-out visitor to /signin. The
    // build directory may be warm already from another browser file's server; after this run it is.
    server = await startNpmRunDev({
      port,
      args: ["-p", String(port)],
      env: { NEXT_DIST_DIR: distDir, REDIS_URL: "" },
    });
    const first = await openWatched(`${server.baseUrl}/settings`);
    await first.page.waitForURL(`${server.baseUrl}/signin`);
    await first.page.waitForFunction(() => "next" in window);
    const idsBefore = await serverActionIds(first.page);
    expect(idsBefore.length).toBeGreaterThan(0);
    await first.page.context().close();
    await stopServer();

    // Second run on the same build directory (the port from PORT this time, the README's other way).
    server = await startNpmRunDev({ port, env: { NEXT_DIST_DIR: distDir, PORT: String(port), REDIS_URL: "" } });
    // A page left open across the restart reconnects its hot-reload socket before anything else asks for a page.
    expect(await hotReloadSocketAnswers(`ws://localhost:${port}/_next/hmr?id=left-open`)).toBe(true);
    const second = await openWatched(`${server.baseUrl}/settings`);
    const { page } = second;
    await page.waitForURL(`${server.baseUrl}/signin`);
    expect(await serverActionIds(page)).toEqual(idsBefore);

    await page.getByRole("link", { name: "Create an account" }).click();
    await page.waitForURL(/mode=signup/);
    const email = `restart-${Date.now()}@example.com`;
    await page.getByLabel("E-mail").pressSequentially(email, { delay: 40 });
    await page.getByLabel("Password").pressSequentially("a long enough password", { delay: 40 });
    // Time for a late reload to arrive: what was typed must still be there.
    await page.waitForTimeout(3_000);
    expect(await page.getByLabel("E-mail").inputValue()).toBe(email);
    await page.getByRole("button", { name: "Create account" }).click();
    await page.waitForURL(`${server.baseUrl}/settings`);
    await page.getByTestId("balance").waitFor();
    // The embedded store: the admin CLI cannot reach it, so the page gives test credits (issue 29 point 10).
    const before = Number(await page.getByTestId("balance").textContent());
    await page.getByRole("button", { name: "Add 1,000 test credits" }).click();
    await expect.poll(async () => Number(await page.getByTestId("balance").textContent())).toBe(before + 1_000);

    expect(second.reloadMessages).toEqual([]);
    expect(second.loads).toEqual([`${server.baseUrl}/signin`]);
    await page.context().close();
  }, 420_000);

  it("opened at 127.0.0.1 (the server listens for localhost), the hot-reload socket connects and the page stays", async () => {
    expect(server, "the server of the test before").toBeDefined();
    const watched = await openWatched(`http://127.0.0.1:${port}/signin`);
    await expect.poll(() => watched.socketConnected(), { timeout: 60_000 }).toBe(true);
    // A refused socket retries every second or five, and reloads the page after the 12th failure.
    await watched.page.waitForTimeout(5_000);
    expect(watched.socketErrors).toEqual([]);
    expect(watched.loads).toEqual([`http://127.0.0.1:${port}/signin`]);
    expect(server!.output()).not.toContain("Blocked cross-origin request");
    await watched.page.context().close();
  }, 180_000);

  it("the embedded default (no Redis): a key made on the settings page submits a job, and the dev server reads it", async () => {
    expect(server, "the server of the test before").toBeDefined();
    const { page } = await openWatched(`${server!.baseUrl}/signin?mode=signup`);
    await page.getByLabel("E-mail").fill(`jobs-${Date.now()}@example.com`);
    await page.getByLabel("Password").fill("a long enough password");
    await page.getByRole("button", { name: "Create account" }).click();
    await page.waitForURL(`${server!.baseUrl}/settings`);
    const key = await createKeyOnPage(page, "jobs on the dev server");
    await page.context().close();

    const headers = { "x-api-key": key, "content-type": "application/json" };
    const body = JSON.stringify({
      image: readFileSync(path.join(ROOT, "tests/.generated/scanned-3.pdf")).toString("base64"),
    });
    // The README's way: the synchronous route with Prefer: respond-async.
    const submitted = await fetch(`${server!.baseUrl}/api/ocr/process`, {
      method: "POST",
      headers: { ...headers, prefer: "respond-async" },
      body,
    });
    expect(submitted.status).toBe(202);
    const job = (await submitted.json()) as { links: { self: string; result: string } };
    let status: { status: string; pagesDone: number } = { status: "queued", pagesDone: 0 };
    while (status.status === "queued" || status.status === "running") {
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      status = (await (await fetch(`${server!.baseUrl}${job.links.self}`, { headers })).json()) as typeof status;
    }
    expect(status).toMatchObject({ status: "succeeded", pagesDone: 3 });
    const result = (await (await fetch(`${server!.baseUrl}${job.links.result}`, { headers })).json()) as {
      extractedText: string;
    };
    expect(result.extractedText.split("\f")).toHaveLength(3);
    expect(result.extractedText).toContain("Optical character recognition");
  }, 300_000);

  it("the dev log has no Edge-runtime warning about instrumentation.ts (it printed 13 lines before every request)", async () => {
    await stopServer();
    expect(log).toMatch(/GET \/signin 200/);
    expect(log).not.toMatch(EDGE_WARNING);
  });
});
