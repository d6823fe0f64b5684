/**
 * Smoke test of the production build: `npm run build && npx tsx scripts/smoke.ts` (the last step of `.ci/run`).
 *
 * Runs `.next/standalone/server.js` — what a Vercel function gets — from a copy outside the repository, so a
 * file missing from `outputFileTracingIncludes` cannot be found in the repo's own node_modules by accident. Then:
 * health (store and a deep engine check), the pages, and, when those routes exist, OCR of an image and PDFs
 * through `POST /api/ocr/process` with a key made by the admin CLI, and an MCP `initialize`.
 *
 * Needs Redis (REDIS_URL, default redis://127.0.0.1:6379); everything goes under a fresh `ocr:smoke:<random>:`
 * prefix, deleted at the end. Exits 1 with a message (and the server's log) on the first failure.
 */
import { execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import fs from "node:fs/promises";
import { Agent, request as httpRequest, type ClientRequest } from "node:http";
import net from "node:net";
import path from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import { makeTextPdf } from "../bench/long-pdf";
import { OWN_SAMPLES } from "../lib/input";
import { characterErrorRate } from "../bench/metrics";
import {
  REST_STORE_VARIABLES,
  assertRedisAnswers,
  deletePrefix,
  freePort,
  startStandalone,
  type StandaloneServer,
} from "../tooling";
import { FIXTURE_DIR, generateFixtures, longScan, TEXTS } from "./make-fixtures";

const ROOT = path.resolve(import.meta.dirname, "..");
const STANDALONE = path.join(ROOT, ".next/standalone");
const REDIS_URL = process.env.REDIS_URL || "redis://127.0.0.1:6379";
const PREFIX = `ocr:smoke:${randomBytes(6).toString("hex")}:`;
/** How long `npm start` may take to answer `/api/health`. */
const STARTUP_TIMEOUT_MS = 60_000;
/** The server's REQUEST_DEADLINE_MS: short, so the engine-timeout check below takes seconds, not a minute. */
const DEADLINE_MS = 8_000;
const MAX_CER = 0.05;
const CHROMIUM = "/usr/bin/chromium";
const CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"];
/** Sign-ups per address the `npm start` server allows, and its headers timeout (the checks of scripts/serve.mjs). */
const START_SIGNUPS_PER_ADDRESS = 2;
const START_HEADERS_TIMEOUT_MS = 2_000;

class SmokeFailure extends Error {}

/**
 * Lines of a server's log that would alarm an operator on a healthy start (issue 29: a Redis "Connection timeout",
 * "readMarker failed", a stack and `[jobs] queue: Error` on every boot while Redis answered).
 */
function alarmingLines(log: string): string[] {
  // Request log lines (`api request_id=…`) are the access log, not alarms.
  return log
    .split("\n")
    .filter(
      (line) => !line.startsWith("api ") && /error|fail|not reachable|timed? ?out|unavailable|^\s+at |⨯/i.test(line),
    );
}

/** Whether the dynamic loader finds libtesseract.so.5 here (`ldconfig -p`, as the engine's `dlopen` would). */
function hostHasLibtesseract(): boolean {
  try {
    return /libtesseract\.so\.5\b/.test(execFileSync("/sbin/ldconfig", ["-p"], { encoding: "utf8" }));
  } catch {
    return false;
  }
}

/** The first line of the server's log that matches `pattern`, waited for up to `timeoutMs`. */
async function waitForLine(pattern: RegExp, timeoutMs: number): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const line = serverLog()
      .split("\n")
      .find((candidate) => pattern.test(candidate));
    if (line) return line;
    if (Date.now() > deadline) fail(`no line matching ${pattern} in the server's log within ${timeoutMs / 1000} s`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

let server: StandaloneServer | undefined;
let baseUrl = "";
/** The server's log so far. */
const serverLog = () => server?.log() ?? "";

function fail(message: string): never {
  throw new SmokeFailure(message);
}

function check(condition: unknown, message: string): asserts condition {
  if (!condition) fail(message);
}

async function step<T>(name: string, run: () => Promise<T>): Promise<T> {
  const started = performance.now();
  const result = await run();
  console.log(`  ✓ ${name} (${Math.round(performance.now() - started)} ms)`);
  return result;
}

async function request(pathname: string, init: RequestInit = {}): Promise<Response> {
  return fetch(`${baseUrl}${pathname}`, { ...init, signal: AbortSignal.timeout(60_000) });
}

async function json(response: Response): Promise<Record<string, unknown>> {
  const text = await response.text();
  try {
    return JSON.parse(text) as Record<string, unknown>;
  } catch {
    fail(`${response.url} answered ${response.status} with a non-JSON body: ${text.slice(0, 300)}`);
  }
}

/**
 * The sample documents an imageUrl of this server's own /samples/… is read from (lib/input/own-samples.ts) must be in
 * the build itself (outputFileTracingIncludes): a Vercel function never sees public/.
 */
async function checkSamplesTraced(): Promise<void> {
  check(
    existsSync(path.join(STANDALONE, "server.js")),
    `${path.relative(ROOT, STANDALONE)}/server.js is missing: run \`npm run build\` first (next.config.ts must keep output: "standalone")`,
  );
  for (const name of OWN_SAMPLES) {
    check(
      existsSync(path.join(STANDALONE, "public/samples", name)),
      `public/samples/${name} is not traced into ${path.relative(ROOT, STANDALONE)}`,
    );
  }
}

async function runAdmin(args: string[]): Promise<string> {
  const env: NodeJS.ProcessEnv = { ...process.env, REDIS_URL, REDIS_PREFIX: PREFIX };
  for (const name of REST_STORE_VARIABLES) delete env[name];
  // As `npm run admin` runs it (the condition lets lib's "server-only" modules load).
  const child = spawn("npx", ["tsx", "--conditions=react-server", "scripts/admin.ts", ...args], {
    cwd: ROOT,
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
  check(code === 0, `admin ${args[0]} exited ${code}: ${stderr.trim()}`);
  const line = stdout.trim().split("\n").at(-1) ?? "";
  check(line, `admin ${args[0]} printed nothing`);
  return line;
}

interface OcrCase {
  file: string;
  format: "text" | "json" | "markdown";
  pages: number;
  source: "ocr" | "text-layer";
}

async function checkOcr(key: string, item: OcrCase): Promise<string> {
  const bytes = await fs.readFile(path.join(FIXTURE_DIR, item.file));
  const truth = await fs.readFile(path.join(FIXTURE_DIR, item.file.replace(/\.[a-z]+$/, ".gt.txt")), "utf8");
  const response = await request("/api/ocr/process", {
    method: "POST",
    headers: { "content-type": "application/json", "x-api-key": key },
    body: JSON.stringify({ image: bytes.toString("base64"), options: { format: item.format } }),
  });
  const body = await json(response);
  const label = `${item.file} (${item.format})`;
  check(response.status === 200, `${label}: status ${response.status}: ${JSON.stringify(body).slice(0, 400)}`);
  check(body.success === true, `${label}: success is ${String(body.success)}`);
  check(typeof body.extractedText === "string", `${label}: extractedText is not a string`);
  check(body.creditsUsed === item.pages, `${label}: creditsUsed ${String(body.creditsUsed)}, expected ${item.pages}`);
  check(response.headers.get("x-request-id"), `${label}: no x-request-id header`);
  let text = body.extractedText;
  if (item.format === "json") {
    const document = JSON.parse(text) as { pages: Array<{ text: string; source: string }> };
    check(document.pages.length === item.pages, `${label}: ${document.pages.length} pages in the JSON document`);
    check(
      document.pages.every((page) => page.source === item.source),
      `${label}: page sources ${document.pages.map((page) => page.source).join(",")}, expected ${item.source}`,
    );
    text = document.pages.map((page) => page.text).join("\n");
  }
  const cer = characterErrorRate(text, truth);
  check(
    cer < MAX_CER,
    `${label}: character error rate ${cer.toFixed(3)} ≥ ${MAX_CER}; read: ${JSON.stringify(text.slice(0, 300))}`,
  );
  return `CER ${cer.toFixed(3)}, ${item.pages} credit${item.pages > 1 ? "s" : ""}, ${String(body.processingTime)} ms server time`;
}

async function postFile(key: string, file: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const bytes = await fs.readFile(path.join(FIXTURE_DIR, file));
  const response = await request("/api/ocr/process", {
    method: "POST",
    headers: { "content-type": "application/json", "x-api-key": key },
    body: JSON.stringify({ image: bytes.toString("base64") }),
  });
  return { status: response.status, body: await json(response) };
}

/**
 * `POST /api/ocr/process` through node:http on `agent`, its body written by `write` (no Content-Length: chunked),
 * for what `fetch` hides: which connection a request goes on, and the `Connection` header of the answer. A request
 * whose body is cut off by an early answer resolves with that answer.
 */
function rawPost(
  agent: Agent,
  key: string,
  contentType: string,
  write: (req: ClientRequest) => void,
): Promise<{ status: number; connection: string | undefined }> {
  return new Promise((resolve, reject) => {
    let answered = false;
    const req = httpRequest(
      `${baseUrl}/api/ocr/process`,
      { method: "POST", agent, headers: { "x-api-key": key, "content-type": contentType } },
      (response) => {
        answered = true;
        response.resume();
        response.on("end", () =>
          resolve({ status: response.statusCode ?? 0, connection: response.headers.connection }),
        );
        response.on("error", reject);
      },
    );
    // Writing on after the server answered and closed is EPIPE / ECONNRESET on the request: only a failure when no
    // answer comes.
    req.on("error", (error) => setTimeout(() => (answered ? undefined : reject(error)), 1_000));
    req.setTimeout(60_000, () => req.destroy(new Error("no answer within 60 s")));
    write(req);
  });
}

async function balanceOf(key: string): Promise<number> {
  const response = await request("/api/credits", { headers: { "x-api-key": key } });
  const body = await json(response);
  check(
    response.status === 200 && typeof body.balance === "number",
    `GET /api/credits: ${response.status} ${JSON.stringify(body)}`,
  );
  return body.balance;
}

/** Sign up in `page` (a fresh context); resolves on /settings, or on the form showing its error. */
async function signUpIn(page: Page, origin: string, email: string): Promise<void> {
  await page.goto(`${origin}/signin?mode=signup`);
  await page.getByLabel("E-mail").fill(email);
  await page.getByLabel("Password").fill(`smoke ${randomBytes(9).toString("base64url")}`);
  await page.getByRole("button", { name: "Create account" }).click();
  // Either the account page or the form again with its error (with or without JavaScript).
  await Promise.race([
    page.waitForURL("**/settings", { timeout: 20_000 }),
    page.locator("#auth-error").waitFor({ timeout: 20_000 }),
  ]);
}

/**
 * The production pages in Chromium: each carries the security headers and a nonce CSP, loads and hydrates with no CSP
 * violation (production's policy is the strict one); then a sign-up and a new key — which must never reach the log.
 */
async function checkPagesInBrowser(browser: Browser): Promise<void> {
  const page = await browser.newPage();
  const violations: string[] = [];
  page.on("console", (message) => {
    if (/Content Security Policy|Refused to/i.test(message.text())) violations.push(message.text());
  });
  for (const pathname of ["/", "/signin", "/docs"]) {
    const response = await page.goto(`${baseUrl}${pathname}`);
    check(response?.status() === 200, `${pathname} is ${response?.status()}`);
    const headers = response.headers();
    check(
      /script-src 'self' 'nonce-[^']+' 'strict-dynamic'/.test(headers["content-security-policy"] ?? ""),
      `${pathname}: CSP ${headers["content-security-policy"]}`,
    );
    check(
      /style-src 'self' 'nonce-/.test(headers["content-security-policy"] ?? ""),
      `${pathname}: production styles are not nonce-only`,
    );
    check(
      headers["x-frame-options"] === "DENY" && headers["x-content-type-options"] === "nosniff",
      `${pathname}: headers ${JSON.stringify(headers)}`,
    );
    await page.waitForFunction(() => "next" in window, undefined, { timeout: 10_000 });
  }
  await signUpIn(page, baseUrl, `smoke-browser-${randomBytes(4).toString("hex")}@example.com`);
  check(page.url().endsWith("/settings"), `sign-up did not reach /settings (at ${page.url()})`);
  await page.getByLabel("Key name").fill("smoke browser");
  await page.getByRole("button", { name: "Create key" }).click();
  const key = await page.getByLabel("Your new API key").inputValue();
  check(/^ocr_\S{32,}$/.test(key), "no key shown after Create key");
  check(violations.length === 0, `CSP violations: ${violations.slice(0, 3).join(" | ")}`);
  await new Promise((resolve) => setTimeout(resolve, 500)); // let the request log lines arrive
  check(
    !serverLog().includes(key) && !serverLog().includes(key.slice(4)),
    "the new API key appears in the server's log",
  );
  await page.context().close();
}

/**
 * `npm start` — Next.js inside scripts/serve.mjs, on the repo's own build: starts without Next's standalone warning,
 * limits sign-ups per socket address whatever X-Forwarded-For says, and closes a connection whose headers drip in.
 */
async function checkNpmStart(browser: Browser): Promise<void> {
  const port = await freePort();
  const origin = `http://127.0.0.1:${port}`;
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const name of REST_STORE_VARIABLES) delete env[name];
  Object.assign(env, {
    PORT: String(port),
    HOSTNAME: "127.0.0.1",
    REDIS_URL,
    REDIS_PREFIX: `${PREFIX}start:`,
    SIGNUP_PER_ADDRESS_PER_HOUR: String(START_SIGNUPS_PER_ADDRESS),
    NEXT_TELEMETRY_DISABLED: "1",
  });
  const child = spawn("npm", ["start", "--silent", "--", "--headers-timeout-ms", String(START_HEADERS_TIMEOUT_MS)], {
    cwd: ROOT,
    env,
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  let log = "";
  child.stdout.on("data", (chunk: Buffer) => (log += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (log += chunk.toString()));
  try {
    const deadline = Date.now() + STARTUP_TIMEOUT_MS;
    for (;;) {
      check(child.exitCode === null, `npm start exited (${child.exitCode}): ${log.slice(-500)}`);
      const ok = await fetch(`${origin}/api/health`, { signal: AbortSignal.timeout(5_000) }).then(
        (response) => response.status === 200,
        () => false,
      );
      if (ok) break;
      check(
        Date.now() < deadline,
        `npm start did not answer within ${STARTUP_TIMEOUT_MS / 1000} s: ${log.slice(-500)}`,
      );
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    check(!/does not work with|⚠/.test(log), `npm start printed a warning: ${log.slice(0, 500)}`);
    check(
      alarmingLines(log).length === 0,
      `npm start's start on a healthy Redis logged:\n${alarmingLines(log).join("\n")}`,
    );

    const outcomes: string[] = [];
    for (let i = 0; i < START_SIGNUPS_PER_ADDRESS + 2; i++) {
      const context = await browser.newContext({
        javaScriptEnabled: false,
        extraHTTPHeaders: { "x-forwarded-for": `198.51.100.${i + 1}` },
      });
      const page = await context.newPage();
      await signUpIn(page, origin, `smoke-start-${i}-${randomBytes(3).toString("hex")}@example.com`);
      outcomes.push(
        page.url().endsWith("/settings") ? "created" : ((await page.locator("#auth-error").textContent()) ?? "?"),
      );
      await context.close();
    }
    const created = outcomes.filter((outcome) => outcome === "created").length;
    check(
      created === START_SIGNUPS_PER_ADDRESS &&
        outcomes.slice(created).every((outcome) => /^Too many sign-ups from your network/.test(outcome)),
      `sign-ups with rotating X-Forwarded-For: ${JSON.stringify(outcomes)}`,
    );

    const closedAfter = await new Promise<number>((resolve, reject) => {
      const started = Date.now();
      const socket = net.connect(port, "127.0.0.1");
      socket.on("error", () => undefined);
      socket.on("connect", () => socket.write("GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\n"));
      const drip = setInterval(() => socket.write(`X-Drip: ${Date.now()}\r\n`), 400);
      const giveUp = setTimeout(
        () => reject(new SmokeFailure("a slow-loris connection is still open after 15 s")),
        15_000,
      );
      socket.on("close", () => {
        clearInterval(drip);
        clearTimeout(giveUp);
        resolve(Date.now() - started);
      });
    });
    check(closedAfter < START_HEADERS_TIMEOUT_MS + 2_500, `a slow-loris connection was closed after ${closedAfter} ms`);

    // TRACE (and every method no path serves) is answered by serve.mjs before Next.js, which would answer 500.
    const trace = await new Promise<{ status: number; type: string; requestId: string; body: string }>(
      (resolve, reject) => {
        const traceRequest = httpRequest(`${origin}/api/health`, { method: "TRACE" }, (response) => {
          let body = "";
          response.setEncoding("utf8");
          response.on("data", (chunk: string) => (body += chunk));
          response.on("end", () =>
            resolve({
              status: response.statusCode ?? 0,
              type: String(response.headers["content-type"]),
              requestId: String(response.headers["x-request-id"]),
              body,
            }),
          );
        });
        traceRequest.on("error", reject);
        traceRequest.end();
      },
    );
    check(
      trace.status === 501 &&
        trace.type.startsWith("application/json") &&
        trace.body.includes('"code":"not_implemented"') &&
        trace.body.includes(trace.requestId),
      `TRACE /api/health on npm start: ${trace.status} ${trace.type} ${trace.body.slice(0, 200)}`,
    );
  } finally {
    if (child.pid && child.exitCode === null) process.kill(-child.pid, "SIGTERM");
  }
}

/** `npm start` with no Redis configured: exits 1 at start, saying what to set, instead of answering 500 everywhere. */
async function checkStartWithoutRedis(): Promise<void> {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PORT: String(await freePort()),
    HOSTNAME: "127.0.0.1",
    NEXT_TELEMETRY_DISABLED: "1",
  };
  for (const name of ["REDIS_URL", ...REST_STORE_VARIABLES]) delete env[name];
  const child = spawn("npm", ["start", "--silent"], {
    cwd: ROOT,
    env,
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  let log = "";
  child.stdout.on("data", (chunk: Buffer) => (log += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (log += chunk.toString()));
  const timer = setTimeout(() => child.pid && process.kill(-child.pid, "SIGKILL"), 30_000);
  const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
  clearTimeout(timer);
  check(code === 1, `npm start without Redis exited with ${code} (expected 1): ${log.slice(-400)}`);
  check(
    /refusing to start: No Redis is configured.*REDIS_URL/s.test(log),
    `npm start without Redis did not say what to set: ${log.slice(-400)}`,
  );
}

/**
 * `npm start` on a Redis that is down at start (nothing on its port): one plain line says so; once a redis-server
 * starts on that port, the server answers `/api/health` 200 again and says so, with nothing else alarming.
 */
async function checkStartWithRedisDown(): Promise<void> {
  const redisPort = await freePort();
  const port = await freePort();
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const name of REST_STORE_VARIABLES) delete env[name];
  Object.assign(env, {
    PORT: String(port),
    HOSTNAME: "127.0.0.1",
    REDIS_URL: `redis://127.0.0.1:${redisPort}`,
    REDIS_PREFIX: `${PREFIX}down:`,
    NEXT_TELEMETRY_DISABLED: "1",
  });
  const child = spawn("npm", ["start", "--silent"], {
    cwd: ROOT,
    env,
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  let log = "";
  child.stdout.on("data", (chunk: Buffer) => (log += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (log += chunk.toString()));
  const health = () =>
    fetch(`http://127.0.0.1:${port}/api/health`, { signal: AbortSignal.timeout(10_000) }).then(
      async (response) => (await response.body?.cancel(), response.status),
      () => 0,
    );
  const waitFor = async (what: string, done: () => Promise<boolean>) => {
    const deadline = Date.now() + STARTUP_TIMEOUT_MS;
    while (!(await done())) {
      check(child.exitCode === null, `npm start exited (${child.exitCode}): ${log.slice(-500)}`);
      check(
        Date.now() < deadline,
        `npm start with Redis down: ${what} within ${STARTUP_TIMEOUT_MS / 1000} s:\n${log.slice(-800)}`,
      );
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  };
  let redis: ReturnType<typeof spawn> | undefined;
  try {
    const down = `[store] Redis at 127.0.0.1:${redisPort} is not reachable (ECONNREFUSED)`;
    await waitFor("no 503 from /api/health", async () => (await health()) === 503);
    await waitFor("no line saying Redis is not reachable", async () => log.includes(down));
    await new Promise((resolve) => setTimeout(resolve, 3_000)); // what else it would say meanwhile
    check(
      alarmingLines(log).length === 1 && alarmingLines(log)[0]!.startsWith(down),
      `npm start with Redis down logged:\n${alarmingLines(log).join("\n")}`,
    );
    redis = spawn(
      "redis-server",
      ["--port", String(redisPort), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
      { stdio: "ignore" },
    );
    await waitFor("no 200 from /api/health after Redis came", async () => (await health()) === 200);
    await waitFor("no line saying Redis answers again", async () =>
      log.includes(`[store] Redis at 127.0.0.1:${redisPort} answers again`),
    );
    check(alarmingLines(log).length === 1, `npm start logged more once Redis came:\n${alarmingLines(log).join("\n")}`);
  } finally {
    if (child.pid && child.exitCode === null) process.kill(-child.pid, "SIGTERM");
    redis?.kill("SIGKILL");
  }
}

async function main(): Promise<void> {
  const started = performance.now();
  const parts: string[] = [];
  console.log(`smoke: standalone server, Redis ${REDIS_URL}, prefix ${PREFIX}`);

  await step("Redis answers", () =>
    assertRedisAnswers(REDIS_URL).catch((error: unknown) =>
      fail(String(error instanceof Error ? error.message : error)),
    ),
  );
  await step("fixtures generated", () => generateFixtures());
  await step("the sample documents traced into the build", checkSamplesTraced);
  server = await step("standalone copied out of the repo (with .next/static, public), answering /api/health", () =>
    startStandalone({
      serverDir: ROOT,
      redisUrl: REDIS_URL,
      prefix: PREFIX,
      label: "ocr-smoke-",
      // The smoke test is one client making every kind of call in a few minutes (the conformance suite alone sends
      // ~100 MCP requests, each message of a batch counted): the per-key limits are tested by tests/, not here (reads
      // follow: ten times the request limit).
      env: {
        REQUEST_DEADLINE_MS: String(DEADLINE_MS),
        RATE_LIMIT_PER_MINUTE: "10000",
      },
    }),
  );
  baseUrl = server.url;
  console.log(`    at ${baseUrl}`);
  const bootLog = server.log();
  await step("the standalone server's start logged nothing alarming", async () => {
    check(
      alarmingLines(bootLog).length === 0,
      `the standalone server's start logged:\n${alarmingLines(bootLog).join("\n")}`,
    );
  });

  await step("the standalone server's engine reads with the host's libtesseract when it has one", async () => {
    // The build must carry everything koffi loads (next.config.ts): a file left out falls back to tesseract.js
    // without an error, only slower, so only this line tells.
    if (!hostHasLibtesseract()) return console.log("    (no libtesseract.so.5 on this host: skipped)");
    const warm = await waitForLine(/\[startup\] OCR engine warm .*/, 120_000);
    check(/Tesseract: native libtesseract/.test(warm), `the engine did not load libtesseract: ${warm}`);
  });

  await step("GET /api/health: 200 ok, Redis store reachable", async () => {
    const response = await request("/api/health");
    const body = await json(response);
    check(response.status === 200, `health is ${response.status}: ${JSON.stringify(body)}`);
    const store = body.store as { kind?: string; ok?: boolean } | undefined;
    check(
      body.status === "ok" && store?.kind === "redis-tcp" && store.ok,
      `unexpected health: ${JSON.stringify(body)}`,
    );
    check(response.headers.get("access-control-allow-origin") === "*", "health has no CORS header");
  });
  await step("GET /api/health?deep=1: engine reads the built-in PNG and PDF", async () => {
    const response = await request("/api/health?deep=1");
    const body = await json(response);
    const engine = body.engine as { ready?: boolean; check?: { ok?: boolean } } | undefined;
    check(response.status === 200 && engine?.ready && engine.check?.ok, `deep health failed: ${JSON.stringify(body)}`);
  });
  parts.push("health");

  for (const [pathname, expected] of [
    ["/", "/api/ocr/process"],
    ["/docs", "Documentation"],
    ["/signin", "Sign in"],
  ] as const) {
    await step(`GET ${pathname}: 200, mentions "${expected}"`, async () => {
      const response = await request(pathname);
      const html = await response.text();
      check(response.status === 200, `${pathname} is ${response.status}`);
      check(html.includes(expected), `${pathname} does not contain "${expected}"`);
    });
  }
  await step("static assets, the favicon and the sample documents are served", async () => {
    const html = await (await request("/")).text();
    const asset = html.match(/\/_next\/static\/[^"']+\.(?:js|css)/)?.[0];
    check(asset, "the home page links no /_next/static asset");
    const response = await request(asset);
    await response.body?.cancel();
    check(response.status === 200, `${asset} is ${response.status} (was .next/static copied?)`);
    const icon = await request("/favicon.ico");
    await icon.body?.cancel();
    check(
      icon.status === 200 && /image/.test(icon.headers.get("content-type") ?? ""),
      `/favicon.ico is ${icon.status}`,
    );
    const sample = await request("/samples/scan.png");
    await sample.body?.cancel();
    check(sample.status === 200, `/samples/scan.png (the docs' URL example) is ${sample.status}`);
  });
  await step(
    "a cross-site server-action POST: 403 forbidden with the error body (proxy.ts), not Next's 500",
    async () => {
      const response = await request("/signin", {
        method: "POST",
        headers: {
          "next-action": "7f".padEnd(42, "0"),
          origin: "https://attacker.example",
          "content-type": "text/plain;charset=UTF-8",
        },
        body: "[]",
      });
      const body = await json(response);
      const error = body.error as { code?: string } | undefined;
      check(
        response.status === 403 && error?.code === "forbidden",
        `cross-site action answered ${response.status}: ${JSON.stringify(body)}`,
      );
      check(response.headers.get("x-request-id") === body.requestId, "the 403 has no matching x-request-id");
    },
  );
  parts.push("pages");

  if (existsSync(CHROMIUM)) {
    const browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
    try {
      await step(
        "pages in Chromium: security headers, nonce CSP with no violation; sign-up and a new key, never in the log",
        () => checkPagesInBrowser(browser),
      );
      await step(
        "npm start (scripts/serve.mjs): no warning; sign-ups limited per socket whatever X-Forwarded-For says; slow loris cut; TRACE 501",
        () => checkNpmStart(browser),
      );
    } finally {
      await browser.close();
    }
    parts.push("browser", "npm start");
  } else {
    console.log(`  - ${CHROMIUM} is missing: browser and npm start checks skipped (CI installs Debian's chromium)`);
  }
  await step("npm start without Redis: exits 1 at start, naming the variables to set", checkStartWithoutRedis);
  await step(
    "npm start with Redis down at start: one plain line, then 200 and one line once Redis answers",
    checkStartWithRedisDown,
  );

  const hasRest = existsSync(path.join(ROOT, "app/api/ocr/process/route.ts"));
  const hasMcp = existsSync(path.join(ROOT, "app/api/mcp/route.ts"));
  let key: string | undefined;
  if (hasRest || hasMcp) {
    key = await step("admin CLI: create-user and create-key on the same Redis", async () => {
      const email = `smoke-${randomBytes(4).toString("hex")}@example.com`;
      await runAdmin(["create-user", "--email", email, "--password", randomBytes(18).toString("base64url")]);
      const created = await runAdmin(["create-key", "--email", email, "--name", "smoke"]);
      check(/^ocr_\S{32,}$/.test(created), `create-key printed something that is not a key: ${created.slice(0, 12)}…`);
      return created;
    });
  }

  if (hasRest && key) {
    const apiKey = key;
    const cases: OcrCase[] = [
      { file: "paragraph.png", format: "text", pages: 1, source: "ocr" },
      { file: "born-digital.pdf", format: "text", pages: TEXTS.pdfPages.length, source: "text-layer" },
      { file: "scanned.pdf", format: "json", pages: 1, source: "ocr" },
    ];
    for (const item of cases) {
      let detail = "";
      await step(`POST /api/ocr/process ${item.file} as ${item.format}`, async () => {
        detail = await checkOcr(apiKey, item);
      });
      console.log(`      ${detail}`);
    }
    await step(
      "POST /api/ocr/process with imageUrl of this server's own /samples/report.pdf (loopback: read from the build, not fetched)",
      async () => {
        const response = await request("/api/ocr/process", {
          method: "POST",
          headers: { "content-type": "application/json", "x-api-key": apiKey },
          body: JSON.stringify({ imageUrl: `${baseUrl}/samples/report.pdf` }),
        });
        const body = await json(response);
        check(
          response.status === 200 && body.inputSource === "url",
          `own sample URL: ${response.status} ${JSON.stringify(body).slice(0, 300)}`,
        );
        check(
          String(body.extractedText).includes("Annual Summary"),
          `own sample URL read: ${String(body.extractedText).slice(0, 200)}`,
        );
        const other = await request("/api/ocr/process", {
          method: "POST",
          headers: { "content-type": "application/json", "x-api-key": apiKey },
          body: JSON.stringify({ imageUrl: `${baseUrl}/api/health` }),
        });
        await other.body?.cancel();
        check(
          other.status === 400,
          `another path of this server as imageUrl: ${other.status}, expected 400 (SSRF guard)`,
        );
      },
    );
    await step("POST /api/ocr/process a 30-page born-digital PDF (text layer)", async () => {
      const pages = 30;
      const response = await request("/api/ocr/process", {
        method: "POST",
        headers: { "content-type": "application/json", "x-api-key": apiKey },
        body: JSON.stringify({
          image: Buffer.from(await makeTextPdf(pages)).toString("base64"),
          options: { format: "json" },
        }),
      });
      const body = await json(response);
      check(response.status === 200, `status ${response.status}: ${JSON.stringify(body).slice(0, 400)}`);
      check(body.creditsUsed === pages, `creditsUsed ${String(body.creditsUsed)}, expected ${pages}`);
      const document = JSON.parse(String(body.extractedText)) as {
        pages: Array<{ number: number; text: string; source: string }>;
      };
      check(
        document.pages.length === pages && document.pages.every((p) => p.source === "text-layer"),
        "not 30 text-layer pages",
      );
      check(
        document.pages[pages - 1]!.text.includes(`Chapter ${pages}: Reading documents`),
        "the last page's heading is missing",
      );
    });
    await step(
      "POST /api/ocr/jobs: a 6-page scan read by the built server's job runner, its result by parts",
      async () => {
        const { pdf } = await longScan(6);
        const submitted = await request("/api/ocr/jobs", {
          method: "POST",
          headers: { "content-type": "application/json", "x-api-key": apiKey },
          body: JSON.stringify({ image: Buffer.from(pdf).toString("base64") }),
        });
        const job = await json(submitted);
        check(submitted.status === 202, `status ${submitted.status}: ${JSON.stringify(job).slice(0, 400)}`);
        const links = job.links as { self: string; result: string };
        check(submitted.headers.get("location") === links.self, "no Location naming the job");
        let status: Record<string, unknown> = job;
        for (const started = Date.now(); status.status === "queued" || status.status === "running";) {
          check(Date.now() - started < 120_000, `the job did not end within 2 min: ${JSON.stringify(status)}`);
          await new Promise((resolve) => setTimeout(resolve, 500));
          status = await json(await request(links.self, { headers: { "x-api-key": apiKey } }));
        }
        check(
          status.status === "succeeded" && status.pagesDone === 6,
          `job ended ${JSON.stringify(status).slice(0, 400)}`,
        );
        const result = await json(await request(`${links.result}?pages=1-6`, { headers: { "x-api-key": apiKey } }));
        const text = String(result.extractedText).split("\f");
        check(
          text.length === 6 && text.every((page, i) => page.includes(`Page ${i + 1} of 6`)),
          `result: ${String(result.extractedText).slice(0, 300)}`,
        );
      },
    );
    await step("POST /api/ocr/process without a key: 401 with the documented error body", async () => {
      const response = await request("/api/ocr/process", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ image: "aGVsbG8=" }),
      });
      const body = await json(response);
      const error = body.error as { code?: unknown; message?: unknown } | undefined;
      check(response.status === 401, `expected 401, got ${response.status}: ${JSON.stringify(body)}`);
      check(
        body.success === false &&
          error?.code === "unauthorized" &&
          typeof error.message === "string" &&
          typeof body.requestId === "string",
        `not the documented error body: ${JSON.stringify(body)}`,
      );
      check(response.headers.get("x-request-id") === body.requestId, "x-request-id differs from the body's requestId");
    });
    await step("hostile PDFs: image bomb and inflate bomb → 413 at once, nothing charged", async () => {
      const before = await balanceOf(apiKey);
      for (const [file, pattern] of [
        ["hostile/image-bomb.pdf", /megapixels/],
        ["hostile/inflate-bomb.pdf", /inflates to more than/],
      ] as const) {
        const { status, body } = await postFile(apiKey, file);
        const error = body.error as { code?: string; message?: string } | undefined;
        check(
          status === 413 && error?.code === "payload_too_large",
          `${file}: ${status} ${JSON.stringify(body).slice(0, 300)}`,
        );
        check(pattern.test(error.message ?? ""), `${file}: the message does not name the limit: ${error.message}`);
      }
      check((await balanceOf(apiKey)) === before, "credits were charged for refused documents");
    });
    await step(
      "a chunked upload over the limit: 413 that closes the connection; the next request is answered",
      async () => {
        const before = await balanceOf(apiKey);
        // One socket, kept alive: the second request goes on the first's connection unless that one closed.
        const agent = new Agent({ keepAlive: true, maxSockets: 1 });
        try {
          const refused = await rawPost(agent, apiKey, "application/octet-stream", (req) => {
            const chunk = Buffer.alloc(1024 * 1024, 7);
            let sent = 0;
            const more = () => {
              while (sent < 40 && !req.destroyed) {
                sent++;
                if (!req.write(chunk)) return void req.once("drain", more);
              }
              req.end();
            };
            more();
          });
          check(refused.status === 413, `expected 413 for 40 MB sent chunked, got ${refused.status}`);
          check(
            refused.connection === "close",
            `the 413 did not close the connection (Connection: ${refused.connection})`,
          );
          const png = await fs.readFile(path.join(FIXTURE_DIR, "small-text.png"));
          const started = Date.now();
          const next = await rawPost(agent, apiKey, "image/png", (req) => req.end(png));
          check(next.status === 200, `the request after the 413: ${next.status} after ${Date.now() - started} ms`);
          check((await balanceOf(apiKey)) === before - 1, "the refused upload was charged, or the next read was not");
        } finally {
          agent.destroy();
        }
      },
    );
    await step(
      `engine timeout on the built server: 504 within the ${DEADLINE_MS / 1000} s deadline + 1 s, health answers meanwhile`,
      async () => {
        const before = await balanceOf(apiKey);
        const started = Date.now();
        const slow = postFile(apiKey, "hostile/huge-pages.pdf");
        await new Promise((resolve) => setTimeout(resolve, 2_000));
        const healthStarted = Date.now();
        const health = await request("/api/health");
        await health.body?.cancel();
        const healthMs = Date.now() - healthStarted;
        const { status, body } = await slow;
        const elapsed = Date.now() - started;
        const error = body.error as { code?: string } | undefined;
        check(
          status === 504 && error?.code === "timeout",
          `expected 504 timeout, got ${status}: ${JSON.stringify(body).slice(0, 300)}`,
        );
        check(elapsed <= DEADLINE_MS + 1_500, `answered after ${elapsed} ms (deadline ${DEADLINE_MS} ms)`);
        check(health.status === 200 && healthMs < 1_500, `health during the work: ${health.status} in ${healthMs} ms`);
        check((await balanceOf(apiKey)) === before, "credits were charged for a timed-out request");
      },
    );
    parts.push("REST");
  } else {
    console.log("  - app/api/ocr/process/route.ts does not exist yet: REST checks skipped");
  }

  if (hasMcp && key) {
    const apiKey = key;
    await step("POST /api/mcp initialize (2024-11-05): 200 JSON echoing the version", async () => {
      const response = await request("/api/mcp", {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          "x-api-key": apiKey,
        },
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: 1,
          method: "initialize",
          params: { protocolVersion: "2024-11-05", capabilities: {}, clientInfo: { name: "smoke", version: "1.0.0" } },
        }),
      });
      const text = await response.text();
      check(response.status === 200, `expected 200, got ${response.status}: ${text.slice(0, 300)}`);
      check(
        response.headers.get("content-type")?.includes("application/json"),
        `content-type ${response.headers.get("content-type")}`,
      );
      const body = JSON.parse(text) as Record<string, unknown>;
      const result = body.result as { protocolVersion?: string } | undefined;
      check(result?.protocolVersion === "2024-11-05", `initialize answered ${JSON.stringify(body).slice(0, 300)}`);
    });
    await step(
      "MCP legacy SSE: a session POST with Idempotency-Key → 202 and its answer on the stream; a GET with MCP-Protocol-Version → 405",
      () => checkLegacySse(apiKey),
    );
    await step(
      "MCP as an OAuth protected resource: 401 with the challenge, both metadata documents served",
      async () => {
        const refused = await request("/api/mcp", {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }),
        });
        await refused.body?.cancel();
        check(refused.status === 401, `no credentials: expected 401, got ${refused.status}`);
        const challenge = refused.headers.get("www-authenticate") ?? "";
        const metadataUrl = /resource_metadata="([^"]+)"/.exec(challenge)?.[1];
        check(metadataUrl === `${baseUrl}/.well-known/oauth-protected-resource/api/mcp`, `challenge: ${challenge}`);
        const resource = await json(await request("/.well-known/oauth-protected-resource/api/mcp"));
        check(resource.resource === `${baseUrl}/api/mcp`, `protected-resource metadata: ${JSON.stringify(resource)}`);
        const server = await json(await request("/.well-known/oauth-authorization-server"));
        check(
          server.issuer === baseUrl && server.token_endpoint === `${baseUrl}/oauth/token`,
          `authorization-server metadata: ${JSON.stringify(server)}`,
        );
        const page = await request("/oauth/authorize?client_id=ocl_unknown");
        check(
          page.status === 200 && (await page.text()).includes("Unknown app"),
          `/oauth/authorize answered ${page.status}`,
        );
      },
    );
    await step(
      "MCP conformance suite (@modelcontextprotocol/conformance, server scenarios) within conformance/expected-failures.yml",
      () => runConformance(`${baseUrl}/api/mcp?api_key=${encodeURIComponent(apiKey)}`),
    );
    parts.push("MCP");
  } else {
    console.log("  - app/api/mcp/route.ts does not exist yet: MCP check skipped");
  }

  check(server.alive(), "the server died during the checks");
  check(serverLog().includes("[startup] OCR engine warm"), "instrumentation.ts did not warm the engine at startup");
  // The second recognizer loads in every OCR process at start (onnxruntime's native addon, the model files): only
  // the built server shows whether they were traced into it.
  check(
    !serverLog().includes("PaddleOCR could not load"),
    "the engine processes could not load PaddleOCR (see the log)",
  );
  console.log(`smoke: passed (${parts.join(", ")}) in ${((performance.now() - started) / 1000).toFixed(1)} s`);
}

/**
 * Issue 39, seen only on a real server: a legacy SSE session POST carrying `Idempotency-Key` answered 500 (`new
 * Request(req, …)` on Next's request object: "Cannot read private member #state"), so `ocr mcp --transport sse`, which
 * sends the key on every POST, could not connect; and a Streamable HTTP client's standalone-stream GET (it sends
 * MCP-Protocol-Version) was taken for a legacy session, whose five-minute `retry:` held the SDK's reconnects.
 */
async function checkLegacySse(apiKey: string): Promise<void> {
  const controller = new AbortController();
  try {
    const stream = await fetch(`${baseUrl}/api/mcp`, {
      headers: { accept: "text/event-stream", "x-api-key": apiKey },
      signal: controller.signal,
    });
    check(stream.status === 200, `legacy GET (no MCP-Protocol-Version): ${stream.status}, expected 200`);
    const reader = stream.body!.pipeThrough(new TextDecoderStream()).getReader();
    let text = "";
    const readUntil = async (pattern: RegExp): Promise<RegExpExecArray> => {
      const deadline = Date.now() + 30_000;
      for (;;) {
        const found = pattern.exec(text);
        if (found) return found;
        check(Date.now() < deadline, `no ${pattern} on the SSE stream within 30 s: ${text.slice(0, 300)}`);
        const { value, done } = await reader.read();
        check(!done, `the SSE stream ended before ${pattern}: ${text.slice(0, 300)}`);
        text += value;
      }
    };
    const endpoint = (await readUntil(/event: endpoint\ndata: (\S+)/))[1]!;
    for (const [id, key] of [
      [1, `smoke-${randomBytes(6).toString("hex")}`],
      [2, undefined],
    ] as const) {
      const post = await request(endpoint, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "x-api-key": apiKey,
          ...(key !== undefined && { "idempotency-key": key }),
        },
        body: JSON.stringify({ jsonrpc: "2.0", id, method: "tools/list" }),
      });
      const body = await post.text();
      check(
        post.status === 202,
        `session POST ${key ? "with" : "without"} Idempotency-Key: ${post.status}, expected 202: ${body.slice(0, 300)}`,
      );
      const answer = (await readUntil(new RegExp(`data: (\\{[^\\n]*"id":${id}[,}][^\\n]*)\\n`)))[1]!;
      const tools = (JSON.parse(answer) as { result?: { tools?: { name: string }[] } }).result?.tools;
      check(tools?.[0]?.name === "extract_text", `tools/list ${id} on the stream: ${answer.slice(0, 300)}`);
    }
  } finally {
    controller.abort();
  }
  const versioned = await request("/api/mcp", {
    headers: { accept: "text/event-stream", "x-api-key": apiKey, "mcp-protocol-version": "2025-11-25" },
  });
  await versioned.body?.cancel();
  check(
    versioned.status === 405,
    `GET with MCP-Protocol-Version 2025-11-25 (a Streamable HTTP client's standalone stream): ${versioned.status}, expected 405`,
  );
}

/**
 * The official MCP conformance suite's server scenarios against the built server, keyed by the `api_key` query (the
 * suite sends no headers of ours). Scenarios that test the suite's own example tools, resources and prompts — which
 * this server rightly lacks — are listed with their reasons in conformance/expected-failures.yml; the suite fails on
 * any other failure and on a listed scenario that passes. Its auth scenarios test clients, not servers (0.1.16).
 */
async function runConformance(url: string): Promise<void> {
  const bin = path.join(ROOT, "node_modules/@modelcontextprotocol/conformance/dist/index.js");
  const args = [
    bin,
    "server",
    "--url",
    url,
    "--expected-failures",
    path.join(ROOT, "conformance/expected-failures.yml"),
  ];
  const child = spawn(process.execPath, args, { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
  // Its summary, without the key in the URL.
  const summary = output
    .replaceAll(url, "<server>/api/mcp?api_key=…")
    .split("\n")
    .filter((line) => /pass|fail|expected|scenario/i.test(line));
  console.log(
    summary
      .slice(-40)
      .map((line) => `      ${line}`)
      .join("\n"),
  );
  check(code === 0, `the conformance suite exited ${code}:\n${output.replaceAll(url, "<server>").slice(-4000)}`);
}

async function cleanUp(): Promise<void> {
  await server?.stop();
  const deleted = await deletePrefix(REDIS_URL, PREFIX).catch(() => 0);
  if (deleted > 0) console.log(`smoke: deleted ${deleted} Redis keys under ${PREFIX}`);
}

for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    console.error(`\nsmoke: ${signal}, stopping the server`);
    void cleanUp().finally(() => process.exit(130));
  });
}

let failed = false;
try {
  await main();
} catch (error) {
  failed = true;
  console.error(
    `\nsmoke: FAILED: ${error instanceof SmokeFailure ? error.message : error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
  );
  if (serverLog())
    console.error(`\n--- server log (last 60 lines) ---\n${serverLog().trim().split("\n").slice(-60).join("\n")}`);
} finally {
  await cleanUp();
}
process.exit(failed ? 1 : 0);
