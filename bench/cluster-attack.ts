/**
 * The cluster attack of issue 39, on the BUILT server, re-runnable each round:
 *
 *   npx tsx bench/cluster-attack.ts [--server-dir DIR] [--redis-url URL] [--job-pages N] [--json FILE]
 *
 * Two copies of `<server-dir>/.next/standalone/server.js` (one engine process each) and one `npm run worker` process
 * (`scripts/worker.ts` of that checkout, through its tsx) share one Redis and one key prefix, as deployed. By default
 * the Redis is a `redis-server` of the script's own on a free port (the attack pauses it, which would stall every
 * other user of a shared one); `--redis-url` uses another. One account (made with the checkout's admin CLI, credits
 * granted, none free) is driven as users drive it, in phases:
 *
 *   load        REST reads (raw, multipart, base64) and MCP `extract_text` calls (official SDK client, Streamable
 *               HTTP) on both instances at once, and jobs
 *   kill        jobs running on every process; `kill -9` of instance A (with synchronous reads in flight on it) and,
 *               a little later, of the worker: the jobs must end, read by instance B (and a restarted worker), and
 *               what A held must be refunded by the reservation sweep
 *   pause       `CLIENT PAUSE 5000 ALL` on Redis while reads, MCP calls and a job are in flight
 *   hostile     a TIFF directory bomb, a fax page of noise and a 259 000-part multipart body (REST, jobs, MCP), with a
 *               victim's one-page read at the same time: refused or read, never charged past what is delivered
 *
 * Then the ledger, read straight from Redis: its entries sum to the balance (= grants − charges + refunds); every
 * request id nets exactly the pages its answer delivered (a 200's `creditsUsed`, a job's `pagesDone`) and any
 * request whose answer was not a success — a failure, a `504`, a connection cut by `kill -9`, a request id the
 * client never saw — nets 0; no reservation is left open; every job ended, each with its `pagesDone` pages of text.
 * Since issue 41 a synchronous read is a job read in its request: its `ocr` and `refund` entries name the request
 * id, but the sweep's `expired` entry for a read whose instance died names its job's id, so the entries of each
 * such job (found in the account's job index, the job's `requestId`) are counted under its request. Every job in
 * the account's index — the reads' too, including those of reads whose answer never came — must have ended, be
 * charged its `pagesDone`, and each successful read must be one job that delivered what its answer said.
 * Exits 1 when any of that fails.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { createWriteStream, existsSync, readFileSync } from "node:fs";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { createClient } from "redis";
import { FIXTURE_DIR, generateFixtures, longScan } from "../scripts/make-fixtures";
import { writeTiff, writeTiffDirectoryBomb } from "../scripts/tiff-writer";
import { cpuDelta, cpuSnapshot } from "./procfs";
import { deletePrefix, freePort, percentile, startStandalone, type StandaloneServer } from "../tooling";

const { values: args } = parseArgs({
  options: {
    "server-dir": { type: "string" },
    "redis-url": { type: "string" },
    "job-pages": { type: "string", default: "30" },
    json: { type: "string" },
  },
});
const serverDir = path.resolve(args["server-dir"] ?? path.resolve(import.meta.dirname, ".."));
const JOB_PAGES = Number(args["job-pages"]);
const PREFIX = `ocr:attack:${randomBytes(6).toString("hex")}:`;
const CRON_SECRET = randomBytes(18).toString("base64url");
const GRANT = 5_000;
/** How long a job may take to end after the attack (pages of killed processes wait for their lock: 30 s). */
const JOB_END_TIMEOUT_MS = 10 * 60_000;
/** How long open reservations may take to be swept after `kill -9` (the request deadline, 55 s, + 30 s). */
const SWEEP_TIMEOUT_MS = 4 * 60_000;
const TERMINAL = new Set(["succeeded", "failed", "cancelled"]);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const log = (line: string) => console.log(`[${new Date().toISOString().slice(11, 19)}] ${line}`);

// ---------------------------------------------------------------------------------------------------------------
// processes

interface Proc {
  name: string;
  url?: string;
  pid: number;
  stop(): Promise<void>;
  alive(): boolean;
}

const logDir = await fs.mkdtemp(path.join(os.tmpdir(), "ocr-attack-"));

async function ownRedis(): Promise<{ url: string; stop(): void }> {
  const port = await freePort();
  const child = spawn(
    "redis-server",
    ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", logDir],
    { stdio: "ignore" },
  );
  const url = `redis://127.0.0.1:${port}`;
  for (let i = 0; i < 100; i++) {
    const client = createClient({ url, socket: { reconnectStrategy: false } });
    client.on("error", () => undefined);
    try {
      await client.connect();
      await client.ping();
      client.destroy();
      return { url, stop: () => child.kill("SIGTERM") };
    } catch {
      await sleep(100);
    }
  }
  child.kill("SIGKILL");
  throw new Error("redis-server did not start (is it installed? or pass --redis-url)");
}

const SERVER_ENV: Record<string, string> = {
  OCR_ENGINE_PROCESSES: "1",
  FREE_CREDITS: "0",
  // Users of one account, many calls: the attack measures money and liveness, not the per-key limits.
  RATE_LIMIT_PER_MINUTE: "100000",
  ACCOUNT_MAX_IN_FLIGHT: "64",
  CRON_SECRET,
};

async function startInstance(name: string, redisUrl: string): Promise<Proc & { server: StandaloneServer }> {
  const server = await startStandalone({
    serverDir,
    redisUrl,
    prefix: PREFIX,
    label: `ocr-attack-${name}-`,
    env: SERVER_ENV,
    logFile: path.join(logDir, `${name}-${Date.now()}.log`),
  });
  return { name, url: server.url, pid: server.pid, stop: server.stop, alive: server.alive, server };
}

function tsxCommand(script: string, argv: string[]): [string, string[]] {
  const tsx = path.join(serverDir, "node_modules/.bin/tsx");
  return existsSync(tsx)
    ? [tsx, ["--conditions=react-server", script, ...argv]]
    : ["npx", ["tsx", "--conditions=react-server", script, ...argv]];
}

function storeEnv(redisUrl: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, REDIS_URL: redisUrl, REDIS_PREFIX: PREFIX, ...SERVER_ENV };
  for (const name of ["UPSTASH_REDIS_REST_URL", "UPSTASH_REDIS_REST_TOKEN", "KV_REST_API_URL", "KV_REST_API_TOKEN"])
    delete env[name];
  return env;
}

async function startWorker(name: string, redisUrl: string): Promise<Proc> {
  const [command, argv] = tsxCommand("scripts/worker.ts", ["--name", name]);
  const out = createWriteStream(path.join(logDir, `${name}.log`));
  const child: ChildProcess = spawn(command, argv, {
    cwd: serverDir,
    env: { ...storeEnv(redisUrl), NODE_ENV: "production" },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  let text = "";
  const collect = (chunk: Buffer) => {
    text += chunk.toString();
    out.write(chunk);
  };
  child.stdout!.on("data", collect);
  child.stderr!.on("data", collect);
  let exited = false;
  child.once("exit", () => (exited = true));
  const deadline = Date.now() + 120_000;
  while (!/reading job pages/.test(text)) {
    if (exited) throw new Error(`worker ${name} exited during startup:\n${text.slice(-2000)}`);
    if (Date.now() > deadline) throw new Error(`worker ${name} did not start within 120 s`);
    await sleep(200);
  }
  const killGroup = (signal: NodeJS.Signals) => {
    try {
      process.kill(-child.pid!, signal);
    } catch {
      // gone
    }
  };
  return {
    name,
    pid: child.pid!,
    alive: () => !exited,
    stop: async () => {
      if (!exited) {
        const gone = new Promise((resolve) => child.once("exit", resolve));
        killGroup("SIGTERM");
        const timer = setTimeout(() => killGroup("SIGKILL"), 10_000);
        await gone;
        clearTimeout(timer);
      }
      killGroup("SIGKILL");
      out.end();
    },
  };
}

async function admin(redisUrl: string, argv: string[]): Promise<string> {
  const [command, commandArgs] = tsxCommand("scripts/admin.ts", argv);
  const child = spawn(command, commandArgs, {
    cwd: serverDir,
    env: storeEnv(redisUrl),
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (err += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
  if (code !== 0) throw new Error(`admin ${argv[0]} exited ${code}: ${err.trim()}`);
  return out.trim().split("\n").at(-1) ?? "";
}

// ---------------------------------------------------------------------------------------------------------------
// what the client saw

interface Outcome {
  phase: string;
  what: string;
  instance: string;
  status: number | string;
  code?: string;
  requestId?: string;
  /** Pages the answer delivered (what it may be charged): a 200's creditsUsed, checked against what was sent. */
  delivered: number;
  ms: number;
}

interface JobRecord {
  phase: string;
  jobId: string;
  instance: string;
  pagesTotal: number;
  final?: { status: string; pagesDone: number; pagesFailed: number; creditsUsed: number; creditsRefunded: number };
  resultPages?: number;
  resultWithText?: number;
  endedMs?: number;
  submittedAt: number;
}

const outcomes: Outcome[] = [];
const jobs: JobRecord[] = [];
const problems: string[] = [];
let key = "";

function problem(message: string): void {
  problems.push(message);
  log(`PROBLEM: ${message}`);
}

async function rest(
  phase: string,
  what: string,
  instance: Proc,
  init: {
    path?: string;
    body: Uint8Array | string;
    contentType?: string;
    expectPages: number;
    headers?: Record<string, string>;
  },
): Promise<Outcome> {
  const started = performance.now();
  const outcome: Outcome = { phase, what, instance: instance.name, status: 0, delivered: 0, ms: 0 };
  try {
    const response = await fetch(`${instance.url}${init.path ?? "/api/ocr/process"}`, {
      method: "POST",
      headers: {
        "x-api-key": key,
        ...(init.contentType && { "content-type": init.contentType }),
        ...init.headers,
      },
      body: typeof init.body === "string" ? init.body : new Uint8Array(init.body),
      signal: AbortSignal.timeout(120_000),
    });
    outcome.status = response.status;
    outcome.requestId = response.headers.get("x-request-id") ?? undefined;
    const body = (await response.json().catch(() => ({}))) as {
      creditsUsed?: number;
      error?: { code?: string };
      jobId?: string;
      pagesTotal?: number;
    };
    outcome.code = body.error?.code;
    if (response.status === 200) {
      outcome.delivered = body.creditsUsed ?? -1;
      if (body.creditsUsed !== init.expectPages)
        problem(`${what} on ${instance.name}: creditsUsed ${body.creditsUsed}, sent ${init.expectPages} pages`);
    }
    if (response.status === 202 && body.jobId) {
      jobs.push({
        phase,
        jobId: body.jobId,
        instance: instance.name,
        pagesTotal: body.pagesTotal ?? 0,
        submittedAt: Date.now(),
      });
    }
  } catch (error) {
    outcome.status = `network: ${(error as Error).cause ? String((error as Error).cause) : String(error)}`.slice(0, 80);
  }
  outcome.ms = Math.round(performance.now() - started);
  outcomes.push(outcome);
  return outcome;
}

const mcpClients = new Map<string, Client>();

async function mcpClient(instance: Proc): Promise<Client> {
  const cached = mcpClients.get(instance.url!);
  if (cached) return cached;
  const client = new Client({ name: "cluster-attack", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(`${instance.url}/api/mcp`), {
    requestInit: { headers: { "x-api-key": key } },
  });
  await client.connect(transport);
  mcpClients.set(instance.url!, client);
  return client;
}

async function mcp(
  phase: string,
  what: string,
  instance: Proc,
  bytes: Uint8Array,
  expectPages: number,
): Promise<Outcome> {
  const started = performance.now();
  const outcome: Outcome = { phase, what: `MCP ${what}`, instance: instance.name, status: 0, delivered: 0, ms: 0 };
  try {
    const client = await mcpClient(instance);
    const result = (await client.callTool(
      {
        name: "extract_text",
        arguments: { image_source: { type: "base64", data: Buffer.from(bytes).toString("base64") } },
      },
      { timeout: 120_000 },
    )) as { isError?: boolean; content?: Array<{ text?: string }>; structuredContent?: Record<string, unknown> };
    const structured = result.structuredContent ?? {};
    if (result.isError) {
      outcome.status = "isError";
      outcome.code = (result.content?.[0]?.text ?? "").split(":")[0]?.slice(0, 40);
    } else {
      outcome.status = 200;
      outcome.requestId = structured.requestId as string | undefined;
      outcome.delivered = Number(structured.creditsUsed ?? -1);
      const job = structured.job as { jobId?: string; pagesTotal?: number } | undefined;
      if (job?.jobId) {
        // Read as a job: its pages are charged through the job (the answer's creditsUsed says what so far).
        jobs.push({
          phase,
          jobId: job.jobId,
          instance: instance.name,
          pagesTotal: job.pagesTotal ?? 0,
          submittedAt: Date.now(),
        });
        outcome.what += " (job)";
        outcome.delivered = 0;
        outcome.requestId = undefined;
      } else if (outcome.delivered !== expectPages) {
        problem(`MCP ${what} on ${instance.name}: creditsUsed ${outcome.delivered}, sent ${expectPages} pages`);
      }
    }
  } catch (error) {
    outcome.status = `error: ${String(error)}`.slice(0, 80);
    mcpClients.delete(instance.url!);
  }
  outcome.ms = Math.round(performance.now() - started);
  outcomes.push(outcome);
  return outcome;
}

async function jobStatus(instance: Proc, jobId: string): Promise<Record<string, unknown> | null> {
  try {
    const response = await fetch(`${instance.url}/api/ocr/jobs/${jobId}`, {
      headers: { "x-api-key": key },
      signal: AbortSignal.timeout(15_000),
    });
    if (response.status !== 200) return null;
    return (await response.json()) as Record<string, unknown>;
  } catch {
    return null;
  }
}

/** The job's text, part by part: how many pages it holds and how many of them read "Page n of …". */
async function jobText(instance: Proc, jobId: string): Promise<{ pages: number; withText: number }> {
  let next: string | null = `/api/ocr/jobs/${jobId}/result?format=text`;
  let pages = 0;
  let withText = 0;
  while (next) {
    const response = await fetch(`${instance.url}${next}`, {
      headers: { "x-api-key": key },
      signal: AbortSignal.timeout(60_000),
    });
    if (response.status !== 200) throw new Error(`result of ${jobId}: ${response.status} ${await response.text()}`);
    const body = (await response.json()) as { pages: string; extractedText: string; next: string | null };
    const count = body.pages
      ? body.pages.split(",").reduce((sum, range) => {
          const [a, b] = range.split("-").map(Number);
          return sum + (b === undefined ? 1 : b - a! + 1);
        }, 0)
      : 0;
    pages += count;
    if (count > 0) withText += body.extractedText.split("\f").filter((text) => /page\s*\d+\s*of/i.test(text)).length;
    next = body.next;
  }
  return { pages, withText };
}

// ---------------------------------------------------------------------------------------------------------------
// health: the longest /api/health answer of each instance while a phase runs

function watchHealth(instances: () => Proc[]): { stop(): Record<string, number> } {
  const worst: Record<string, number> = {};
  let running = true;
  const loop = async () => {
    while (running) {
      await Promise.all(
        instances()
          .filter((instance) => instance.alive())
          .map(async (instance) => {
            const started = performance.now();
            await fetch(`${instance.url}/api/health`, { signal: AbortSignal.timeout(90_000) })
              .then((r) => r.arrayBuffer())
              .catch(() => undefined);
            const ms = performance.now() - started;
            worst[instance.name] = Math.max(worst[instance.name] ?? 0, Math.round(ms));
          }),
      );
      await sleep(250);
    }
  };
  const done = loop();
  return {
    stop: () => {
      running = false;
      void done;
      return worst;
    },
  };
}

// ---------------------------------------------------------------------------------------------------------------

function noise(length: number): Uint8Array {
  let seed = 39;
  return Uint8Array.from({ length }, () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) >> 23);
}

function multipart(fields: Array<{ name: string; value: Uint8Array | string; filename?: string; type?: string }>) {
  const boundary = `attack${randomBytes(8).toString("hex")}`;
  const parts: Buffer[] = [];
  for (const field of fields) {
    const disposition = `form-data; name="${field.name}"${field.filename ? `; filename="${field.filename}"` : ""}`;
    parts.push(
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: ${disposition}\r\n${field.type ? `Content-Type: ${field.type}\r\n` : ""}\r\n`,
      ),
      Buffer.from(field.value),
      Buffer.from("\r\n"),
    );
  }
  parts.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(parts), contentType: `multipart/form-data; boundary=${boundary}` };
}

/** A body of `count` empty parts (the many-parts attack): refused, and it must cost little and nothing. */
function manyParts(count: number) {
  const boundary = "b";
  const part = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="x"\r\n\r\n\r\n`);
  const body = Buffer.concat([...Array.from({ length: count }, () => part), Buffer.from(`--${boundary}--\r\n`)]);
  return { body, contentType: `multipart/form-data; boundary=${boundary}` };
}

async function main(): Promise<number> {
  const redis = args["redis-url"] ? { url: args["redis-url"], stop: () => undefined } : await ownRedis();
  const redisUrl = redis.url;
  log(`server dir ${serverDir}, Redis ${redisUrl}, prefix ${PREFIX}, logs in ${logDir}`);
  const procs: Proc[] = [];
  const control = controlClient(redisUrl);
  const report: Record<string, unknown> = {};
  try {
    await generateFixtures();
    const png = new Uint8Array(readFileSync(path.join(FIXTURE_DIR, "paragraph.png")));
    const [{ pdf: scan3 }, { pdf: jobScan }] = await Promise.all([longScan(3), longScan(JOB_PAGES)]);

    log("starting instance A, instance B and a worker");
    let a = await startInstance("A", redisUrl);
    const b = await startInstance("B", redisUrl);
    let worker = await startWorker("worker-1", redisUrl);
    procs.push(a, b, worker);
    const instances = () => [a, b];

    const email = `attack-${randomBytes(4).toString("hex")}@example.com`;
    const userId = await admin(redisUrl, [
      "create-user",
      "--email",
      email,
      "--password",
      randomBytes(18).toString("base64url"),
    ]);
    key = await admin(redisUrl, ["create-key", "--email", email, "--name", "attack"]);
    await admin(redisUrl, ["grant", "--email", email, "--credits", String(GRANT)]);
    await control.connect();

    // Warm both engines, and the victim's read alone.
    await Promise.all(
      [a, b].map((instance) => rest("warm", "png", instance, { body: png, contentType: "image/png", expectPages: 1 })),
    );
    const alone: number[] = [];
    for (let i = 0; i < 3; i++)
      alone.push((await rest("warm", "victim png", b, { body: png, contentType: "image/png", expectPages: 1 })).ms);
    report.victimAloneMs = alone;
    log(`victim's one-page read alone: ${alone.join(", ")} ms`);

    // ---- load
    {
      log("phase load: REST (raw, multipart, base64) and MCP reads on both instances, two jobs");
      const health = watchHealth(instances);
      const started = Date.now();
      const work: Promise<unknown>[] = [];
      for (const instance of [a, b])
        work.push(
          rest("load", "job", instance, {
            path: "/api/ocr/jobs",
            body: jobScan,
            contentType: "application/pdf",
            expectPages: JOB_PAGES,
          }),
        );
      for (let i = 0; i < 12; i++) {
        const instance = i % 2 ? b : a;
        if (i % 3 === 0)
          work.push(rest("load", "png raw", instance, { body: png, contentType: "image/png", expectPages: 1 }));
        else if (i % 3 === 1) {
          const form = multipart([{ name: "file", value: scan3, filename: "scan.pdf", type: "application/pdf" }]);
          work.push(rest("load", "3-page multipart", instance, { ...form, expectPages: 3 }));
        } else
          work.push(
            rest("load", "3-page base64", instance, {
              body: JSON.stringify({ image: Buffer.from(scan3).toString("base64") }),
              contentType: "application/json",
              expectPages: 3,
            }),
          );
        work.push(mcp("load", i % 2 ? "png" : "3-page pdf", instance, i % 2 ? png : scan3, i % 2 ? 1 : 3));
      }
      await Promise.all(work);
      report.load = { wallS: (Date.now() - started) / 1000, longestHealthMs: health.stop() };
      log(`phase load: ${summary("load")} in ${(Date.now() - started) / 1000} s`);
    }

    // ---- kill -9
    {
      log("phase kill: jobs on every process, then kill -9 of instance A (reads in flight) and of the worker");
      const health = watchHealth(instances);
      const killJobs = jobs.length;
      await Promise.all(
        [a, b, a].map((instance) =>
          rest("kill", "job", instance, {
            path: "/api/ocr/jobs",
            body: jobScan,
            contentType: "application/pdf",
            expectPages: JOB_PAGES,
          }),
        ),
      );
      const mine = jobs.slice(killJobs);
      // Until pages are being read.
      const until = Date.now() + 120_000;
      while (Date.now() < until) {
        const views = await Promise.all(mine.map((job) => jobStatus(b, job.jobId)));
        if (views.filter((view) => Number(view?.pagesDone ?? 0) >= 2).length >= 2) break;
        await sleep(300);
      }
      const inFlight = [
        rest("kill", "3-page read on A (killed)", a, { body: scan3, contentType: "application/pdf", expectPages: 3 }),
        rest("kill", "3-page read on A (killed)", a, { body: scan3, contentType: "application/pdf", expectPages: 3 }),
        mcp("kill", "3-page pdf on A (killed)", a, scan3, 3),
      ];
      await sleep(1_500);
      log(`kill -9 instance A (pid ${a.pid})`);
      process.kill(a.pid, "SIGKILL");
      await sleep(3_000);
      log(`kill -9 worker (pid ${worker.pid})`);
      process.kill(worker.pid, "SIGKILL");
      await Promise.all(inFlight);
      await a.stop(); // the engine processes it left
      await worker.stop();
      const killedAt = Date.now();
      // Instance B alone reads on; then an operator restarts what died.
      await sleep(20_000);
      log("restarting instance A and the worker");
      a = await startInstance("A2", redisUrl);
      worker = await startWorker("worker-2", redisUrl);
      procs.push(a, worker);
      mcpClients.clear();
      const ended = await waitForJobs(b, mine, JOB_END_TIMEOUT_MS);
      report.kill = {
        jobsEndedS: ended ? (Date.now() - killedAt) / 1000 : null,
        longestHealthMs: health.stop(),
      };
      log(
        `phase kill: ${summary("kill")}; jobs ${ended ? `ended ${(Date.now() - killedAt) / 1000} s after the kill` : "NOT ended"}`,
      );
    }

    // ---- Redis pause
    {
      log("phase pause: CLIENT PAUSE 5000 ALL while reads, MCP calls and a job are in flight");
      const health = watchHealth(instances);
      const work: Promise<unknown>[] = [];
      work.push(
        rest("pause", "job", b, {
          path: "/api/ocr/jobs",
          body: jobScan,
          contentType: "application/pdf",
          expectPages: JOB_PAGES,
        }),
      );
      for (let i = 0; i < 8; i++) {
        const instance = i % 2 ? b : a;
        work.push(
          rest("pause", "3-page raw", instance, { body: scan3, contentType: "application/pdf", expectPages: 3 }),
        );
        if (i % 2 === 0) work.push(mcp("pause", "png", instance, png, 1));
        await sleep(150);
      }
      await sleep(500);
      log("CLIENT PAUSE 5000 ALL");
      await control.sendCommand(["CLIENT", "PAUSE", "5000", "ALL"]);
      for (let i = 0; i < 4; i++) {
        work.push(
          rest("pause", "png raw (during the pause)", i % 2 ? b : a, {
            body: png,
            contentType: "image/png",
            expectPages: 1,
          }),
        );
        await sleep(1_000);
      }
      await Promise.all(work);
      report.pause = { longestHealthMs: health.stop() };
      log(`phase pause: ${summary("pause")}`);
    }

    // ---- hostile
    {
      log("phase hostile: TIFF directory bomb, fax page of noise, 259 000-part multipart; a victim's read meanwhile");
      const bomb = writeTiffDirectoryBomb(1_000_000, 10_000);
      const fax = writeTiff([
        {
          width: 1728,
          height: 2200,
          data: noise(100_000),
          bitsPerSample: 1,
          samplesPerPixel: 1,
          photometric: 0,
          compression: 1,
          declared: { compression: 4 },
        },
      ]);
      const parts = manyParts(259_000);
      // A hostile one-page TIFF sent raw to A, as a job to B and through MCP to A.
      const tiffAttack = (name: string, body: Uint8Array) => [
        rest("hostile", `${name} raw`, a, { body, contentType: "image/tiff", expectPages: 1 }),
        rest("hostile", `${name} job`, b, { path: "/api/ocr/jobs", body, contentType: "image/tiff", expectPages: 1 }),
        mcp("hostile", name, a, body, 1),
      ];
      const attacks: Array<[string, () => Promise<unknown>[]]> = [
        ["tiff bomb", () => tiffAttack("tiff bomb", bomb)],
        ["fax noise", () => tiffAttack("fax noise", fax)],
        [
          "259k parts",
          () => [
            rest("hostile", "259k-part multipart", a, { ...parts, expectPages: 1 }),
            rest("hostile", "259k-part multipart", b, { ...parts, expectPages: 1 }),
            rest("hostile", "259k-part multipart job", a, { path: "/api/ocr/jobs", ...parts, expectPages: 1 }),
          ],
        ],
      ];
      const victims: Record<string, number> = {};
      // The main thread's CPU seconds of both instances while each attack (and the victim's read) ran.
      const mainThread: Record<string, number> = {};
      const health = watchHealth(instances);
      for (const [name, attack] of attacks) {
        const before = [a, b].map((instance) => cpuSnapshot(instance.pid));
        const sent = attack();
        await sleep(300);
        const victim = await rest("hostile", `victim png during ${name}`, a, {
          body: png,
          contentType: "image/png",
          expectPages: 1,
        });
        victims[name] = victim.ms;
        await Promise.all(sent);
        const after = [a, b].map((instance) => cpuSnapshot(instance.pid));
        mainThread[name] = before.reduce(
          (sum, start, i) => sum + (start && after[i] ? cpuDelta(start, after[i]).mainThreadSeconds : Number.NaN),
          0,
        );
      }
      report.hostile = { victimMs: victims, mainThreadCpuS: mainThread, longestHealthMs: health.stop() };
      log(
        `phase hostile: ${summary("hostile")}; victim ${JSON.stringify(victims)} ms (alone ${alone.join(", ")}); ` +
          `main-thread CPU s (A + B): ${JSON.stringify(mainThread)}`,
      );
    }

    // ---- the end: every job ends, every reservation settles
    log("waiting for every job to end");
    const allEnded = await waitForJobs(b, jobs, JOB_END_TIMEOUT_MS);
    if (!allEnded) problem("jobs did not end");
    for (const job of jobs) {
      if (!job.final) continue;
      if (job.final.pagesDone > 0) {
        const text = await jobText(b, job.jobId).catch((error: unknown) => {
          problem(String(error));
          return { pages: 0, withText: 0 };
        });
        job.resultPages = text.pages;
        job.resultWithText = text.withText;
        if (text.pages !== job.final.pagesDone)
          problem(`job ${job.jobId}: result holds ${text.pages} pages, pagesDone ${job.final.pagesDone}`);
      }
      if (job.final.creditsUsed !== job.final.pagesDone)
        problem(`job ${job.jobId}: creditsUsed ${job.final.creditsUsed} ≠ pagesDone ${job.final.pagesDone}`);
    }
    log("waiting for open reservations to be swept");
    const sweepStarted = Date.now();
    let open = -1;
    while (Date.now() - sweepStarted < SWEEP_TIMEOUT_MS) {
      await fetch(`${b.url}/api/cron/reservations`, { headers: { authorization: `Bearer ${CRON_SECRET}` } })
        .then((r) => r.arrayBuffer())
        .catch(() => undefined);
      open = await control.zCard(`${PREFIX}reservations:open`);
      if (open === 0) break;
      await sleep(5_000);
    }
    report.openReservations = open;
    report.sweptAfterS = (Date.now() - sweepStarted) / 1000;
    if (open !== 0) problem(`${open} reservations still open ${SWEEP_TIMEOUT_MS / 1000} s after the attack`);

    report.ledger = await checkLedger(control, userId);
  } finally {
    for (const client of mcpClients.values()) await client.close().catch(() => undefined);
    await Promise.allSettled(procs.map((proc) => proc.stop()));
    if (control.isOpen) control.destroy();
    await deletePrefix(redisUrl, PREFIX).catch(() => 0);
    redis.stop();
  }

  printOutcomes();
  report.outcomes = outcomes;
  report.jobs = jobs;
  report.problems = problems;
  if (args.json) await fs.writeFile(args.json, JSON.stringify(report, null, 2));
  console.log(JSON.stringify({ ...report, outcomes: undefined, jobs: undefined }, null, 2));
  log(problems.length === 0 ? "every ledger exact, every job ended" : `${problems.length} PROBLEM(S)`);
  return problems.length === 0 ? 0 : 1;
}

async function waitForJobs(instance: Proc, list: JobRecord[], timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    let open = 0;
    for (const job of list) {
      if (job.final) continue;
      const view = await jobStatus(instance, job.jobId);
      if (view && TERMINAL.has(String(view.status))) {
        job.final = {
          status: String(view.status),
          pagesDone: Number(view.pagesDone),
          pagesFailed: Number(view.pagesFailed),
          creditsUsed: Number(view.creditsUsed),
          creditsRefunded: Number(view.creditsRefunded),
        };
        job.endedMs = Date.now() - job.submittedAt;
      } else open += 1;
    }
    if (open === 0) return true;
    if (Date.now() > deadline) {
      for (const job of list.filter((j) => !j.final))
        problem(`job ${job.jobId} (${job.phase}) still open after ${timeoutMs / 1000} s`);
      return false;
    }
    await sleep(1_000);
  }
}

interface LedgerLine {
  delta: number;
  reason: string;
  requestId?: string;
  balanceAfter: number;
}

function controlClient(url: string) {
  const client = createClient({ url, RESP: 2 });
  client.on("error", () => undefined);
  return client;
}

async function checkLedger(control: ReturnType<typeof controlClient>, userId: string) {
  const entries = (await control.lRange(`${PREFIX}ledger:${userId}`, 0, -1)).map(
    (raw) => JSON.parse(raw) as LedgerLine,
  );
  const balance = Number(await control.get(`${PREFIX}credits:${userId}`));
  const sum = entries.reduce((total, entry) => total + entry.delta, 0);
  const grants = entries.filter((e) => e.reason === "grant" || e.reason === "signup").reduce((t, e) => t + e.delta, 0);
  const charges = -entries.filter((e) => e.reason === "ocr").reduce((t, e) => t + e.delta, 0);
  const refunds = entries
    .filter((e) => e.reason === "refund" || e.reason === "expired")
    .reduce((t, e) => t + e.delta, 0);
  if (sum !== balance) problem(`ledger sums to ${sum}, balance is ${balance}`);
  if (grants - charges + refunds !== balance)
    problem(`grants ${grants} − charges ${charges} + refunds ${refunds} ≠ balance ${balance}`);
  if (grants !== GRANT) problem(`grants ${grants}, granted ${GRANT}`);
  let running = 0;
  for (const entry of entries) {
    running += entry.delta;
    if (entry.balanceAfter !== running) {
      problem(`ledger entry ${JSON.stringify(entry)}: balanceAfter ≠ running sum ${running}`);
      break;
    }
  }

  // Every job of the account, from its job index: the submitted jobs and the synchronous reads' jobs (issue 41).
  const accountJobs = await readAccountJobs(control, userId);
  const submitted = new Set(jobs.map((job) => job.jobId));
  // A job read in its request: its ledger entries name its request id, except the sweep's `expired` (the job's id).
  const chargedIds = new Set(entries.filter((e) => e.reason === "ocr").map((e) => e.requestId));
  const readJobOf = new Map<string, StoredJob>(); // request id → its job
  const alias = new Map<string, string>(); // job id → request id
  for (const job of accountJobs) {
    if (submitted.has(job.id)) continue;
    if (!job.requestId || chargedIds.has(job.id) || !chargedIds.has(job.requestId)) {
      problem(`job ${job.id} is not one the client submitted, and no read's charge names its request ${job.requestId}`);
      continue;
    }
    if (readJobOf.has(job.requestId)) problem(`request ${job.requestId} has two jobs`);
    readJobOf.set(job.requestId, job);
    alias.set(job.id, job.requestId);
  }
  for (const job of accountJobs) {
    if (!TERMINAL.has(job.status))
      problem(
        `job ${job.id} (${submitted.has(job.id) ? "submitted" : "a read's"}) still ${job.status} in the account's list`,
      );
    if (job.creditsUsed !== job.pagesDone)
      problem(`job ${job.id}: creditsUsed ${job.creditsUsed} ≠ pagesDone ${job.pagesDone}`);
  }
  for (const job of jobs)
    if (!accountJobs.some((stored) => stored.id === job.jobId))
      problem(`job ${job.jobId} missing from the account's list`);
  // Every job ended: nothing of the account still waits (this count caps its job submissions).
  const queuedPages = Number((await control.get(`${PREFIX}jobs-queued:${userId}`)) ?? 0);
  if (queuedPages !== 0) problem(`the account still counts ${queuedPages} pages waiting in its jobs`);
  for (const outcome of outcomes) {
    if (outcome.status !== 200 || !outcome.requestId) continue;
    const job = readJobOf.get(outcome.requestId);
    if (!job) problem(`${outcome.what} (${outcome.requestId}) answered 200 and has no job`);
    else if (job.status !== "succeeded" || job.pagesDone !== outcome.delivered)
      problem(
        `${outcome.what} (${outcome.requestId}): job ${job.id} ${job.status}, ${job.pagesDone} pages, answer ${outcome.delivered}`,
      );
  }

  // Each request id nets what its answer delivered; anything else nets 0.
  const net = new Map<string, number>();
  for (const entry of entries) {
    if (!entry.requestId) continue;
    const id = alias.get(entry.requestId) ?? entry.requestId;
    net.set(id, (net.get(id) ?? 0) - entry.delta);
  }
  const expected = new Map<string, number>();
  for (const outcome of outcomes)
    if (outcome.requestId && outcome.status === 200) expected.set(outcome.requestId, outcome.delivered);
  for (const job of jobs) expected.set(job.jobId, job.final?.pagesDone ?? Number.NaN);
  let wrong = 0;
  for (const [requestId, charged] of net) {
    const want = expected.get(requestId) ?? 0;
    if (charged !== want) {
      wrong += 1;
      const outcome = outcomes.find((o) => o.requestId === requestId);
      problem(
        `request ${requestId} (${outcome ? `${outcome.what} → ${outcome.status}` : "an answer the client never saw"}) charged ${charged}, delivered ${want}`,
      );
    }
  }
  for (const [requestId, want] of expected)
    if (want > 0 && !net.has(requestId)) problem(`request ${requestId} delivered ${want} pages and was never charged`);
  const deliveredSync = outcomes.filter((o) => o.status === 200).reduce((t, o) => t + o.delivered, 0);
  const deliveredJobs = jobs.reduce((t, job) => t + (job.final?.pagesDone ?? 0), 0);
  if (charges - refunds !== deliveredSync + deliveredJobs)
    problem(`charged − refunded = ${charges - refunds}, pages delivered ${deliveredSync + deliveredJobs}`);
  return {
    entries: entries.length,
    balance,
    grants,
    charges,
    refunds,
    expiredEntries: entries.filter((e) => e.reason === "expired").length,
    pagesDelivered: { sync: deliveredSync, jobs: deliveredJobs },
    requestIds: net.size,
    queuedPages,
    accountJobs: {
      submitted: accountJobs.filter((job) => submitted.has(job.id)).length,
      reads: readJobOf.size,
      readsByStatus: countBy([...readJobOf.values()].map((job) => job.status)),
      expiredUnderJobId: entries.filter((e) => e.reason === "expired" && e.requestId && alias.has(e.requestId)).length,
    },
    wrong,
  };
}

interface StoredJob {
  id: string;
  requestId?: string;
  status: string;
  pagesDone: number;
  creditsUsed: number;
}

/** Every job in the account's job index, as its record in Redis says. */
async function readAccountJobs(control: ReturnType<typeof controlClient>, userId: string): Promise<StoredJob[]> {
  const ids = await control.zRange(`${PREFIX}jobs:${userId}`, 0, -1);
  const out: StoredJob[] = [];
  for (const id of ids) {
    const fields = await control.hGetAll(`${PREFIX}job:${id}`);
    if (!fields.status) {
      problem(`job ${id} in the account's index has no record`);
      continue;
    }
    out.push({
      id,
      requestId: fields.requestId,
      status: fields.status,
      pagesDone: Number(fields.pagesDone),
      creditsUsed: Number(fields.creditsUsed),
    });
  }
  return out;
}

function countBy(values: string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const value of values) counts[value] = (counts[value] ?? 0) + 1;
  return counts;
}

function summary(phase: string): string {
  const counts: Record<string, number> = {};
  for (const outcome of outcomes.filter((o) => o.phase === phase)) {
    const label = `${outcome.status}${outcome.code ? ` ${outcome.code}` : ""}`;
    counts[label] = (counts[label] ?? 0) + 1;
  }
  return Object.entries(counts)
    .map(([label, count]) => `${label} ×${count}`)
    .join(", ");
}

function printOutcomes(): void {
  console.log("\nphase    what                                   instance  status                 ms     delivered");
  for (const o of outcomes)
    console.log(
      `${o.phase.padEnd(8)} ${o.what.slice(0, 38).padEnd(38)} ${o.instance.padEnd(9)} ${`${o.status}${o.code ? ` ${o.code}` : ""}`.slice(0, 22).padEnd(22)} ${String(o.ms).padStart(6)} ${String(o.delivered).padStart(4)}`,
    );
  console.log(
    "\njob                              phase    status      pages done/failed/total  result pages (with text)  ended after",
  );
  for (const job of jobs)
    console.log(
      `${job.jobId.padEnd(32)} ${job.phase.padEnd(8)} ${(job.final?.status ?? "OPEN").padEnd(11)} ${`${job.final?.pagesDone ?? "?"}/${job.final?.pagesFailed ?? "?"}/${job.pagesTotal}`.padEnd(24)} ${`${job.resultPages ?? "-"} (${job.resultWithText ?? "-"})`.padEnd(25)} ${job.endedMs ? `${Math.round(job.endedMs / 1000)} s` : "-"}`,
    );
  const msOf = (phase: string) => outcomes.filter((o) => o.phase === phase && o.status === 200).map((o) => o.ms);
  for (const phase of ["load", "pause"]) {
    const ms = msOf(phase);
    if (ms.length) console.log(`${phase}: 200s p50 ${percentile(ms, 50)} ms, p90 ${percentile(ms, 90)} ms`);
  }
}

process.exitCode = await main().catch((error: unknown) => {
  console.error(error);
  return 1;
});
