/**
 * npm run bench -- --job [--pages 200] [--processes 1,2] [--source-mb 0]
 *
 * Asynchronous jobs against the synchronous path, on a generated scan whose text is known (scripts/make-fixtures.ts
 * `longScan`), with a redis-server of the bench's own (so its command and byte counters are the job's alone):
 *
 * - pages/s of the job path (submitJob → a JobRunner with P engine processes → the result) and of the same pages
 *   read synchronously by the engine with P processes, for each P; the ratio (job overhead) and the scaling from the
 *   first P to the others;
 * - Redis commands and bytes (in + out) per page of the job;
 * - peak resident memory of each process (the bench and each engine process) during each pass;
 * - CER of the job's text.
 *
 * `--source-mb N` also submits an N MB scanned PDF by URL (served by the bench on 127.0.0.1) and reports how long the
 * submission takes, what its source costs in Redis and in each process (docs/decisions.md#job-source).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import http from "node:http";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { createClient } from "redis";
import { freePort, median } from "../tooling";
import { characterErrorRate } from "./metrics";
import { descendants, machineBusySeconds } from "./procfs";

const { values: args } = parseArgs({
  allowPositionals: true,
  strict: false,
  options: {
    job: { type: "boolean" },
    pages: { type: "string", default: "200" },
    processes: { type: "string", default: "1,2" },
    "source-mb": { type: "string", default: "0" },
    json: { type: "string" },
  },
});

async function startRedis(): Promise<{ url: string; stop(): void }> {
  const port = await freePort();
  const dir = mkdtempSync(path.join(os.tmpdir(), "ocr-bench-redis-"));
  const child: ChildProcess = spawn(
    "redis-server",
    [
      "--port",
      String(port),
      "--bind",
      "127.0.0.1",
      "--save",
      "",
      "--appendonly",
      "no",
      "--dir",
      dir,
      "--maxmemory-policy",
      "noeviction",
    ],
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
      break;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  return {
    url,
    stop: () => {
      child.kill("SIGKILL");
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

interface RedisCounters {
  commands: number;
  bytesIn: number;
  bytesOut: number;
  usedMemory: number;
}

async function redisCounters(url: string): Promise<RedisCounters> {
  const client = createClient({ url });
  await client.connect();
  const info = await client.info();
  client.destroy();
  const field = (name: string) => Number(new RegExp(`^${name}:(\\d+)`, "m").exec(info)?.[1] ?? 0);
  return {
    commands: field("total_commands_processed"),
    bytesIn: field("total_net_input_bytes"),
    bytesOut: field("total_net_output_bytes"),
    usedMemory: field("used_memory"),
  };
}

/**
 * Commands clients send to Redis while `run` runs, counted with MONITOR: what Upstash bills (a script is one command),
 * apart from the commands scripts run inside Redis (`lua` in MONITOR's lines).
 */
async function countCommands<T>(
  url: string,
  run: () => Promise<T>,
): Promise<{ result: T; sent: number; loads: number; inScripts: number }> {
  const client = createClient({ url });
  await client.connect();
  let sent = 0;
  let inScripts = 0;
  const byName = new Map<string, number>();
  await client.monitor((line: string) => {
    if (/\[\d+ lua\]/.test(line)) inScripts++;
    else {
      sent++;
      const match = /\] "([^"]+)"(?: "([^"]+)")?/.exec(line);
      const name = `${match?.[1]?.toLowerCase() ?? "?"}${match?.[1]?.toLowerCase() === "script" ? ` ${match[2]}` : ""}`;
      byName.set(name, (byName.get(name) ?? 0) + 1);
    }
  });
  try {
    const result = await run();
    if (process.env.BENCH_COMMANDS) console.log([...byName].sort((a, b) => b[1] - a[1]).slice(0, 15));
    // BullMQ loads each of its scripts once per new connection: a cost per process start, not per page.
    const loads = byName.get("script LOAD") ?? 0;
    return { result, sent: sent - loads, loads, inScripts };
  } finally {
    client.destroy();
  }
}

/** Peak resident memory of this process and of each of its descendants (MiB), sampled every 100 ms. */
function samplePerProcess(): { stop(): { self: number; engines: number[] } } {
  const peaks = new Map<number, number>();
  const rssMiB = (pid: number) => {
    try {
      const match = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
      return match ? Number(match[1]) / 1024 : 0;
    } catch {
      return 0;
    }
  };
  const sample = () => {
    for (const pid of [process.pid, ...descendants(process.pid).map((p) => p.pid)])
      peaks.set(pid, Math.max(peaks.get(pid) ?? 0, rssMiB(pid)));
  };
  const timer = setInterval(sample, 100);
  sample();
  return {
    stop() {
      clearInterval(timer);
      sample();
      const self = peaks.get(process.pid) ?? 0;
      peaks.delete(process.pid);
      return { self, engines: [...peaks.values()].sort((a, b) => b - a) };
    },
  };
}

const f1 = (v: number) => v.toFixed(1);
const f2 = (v: number) => v.toFixed(2);

export async function jobsMain(): Promise<void> {
  const pageCount = Number(args.pages);
  const processCounts = String(args.processes).split(",").map(Number);
  const redis = await startRedis();
  // The service's configuration is read once, on first use: set it before anything reads it.
  Object.assign(process.env, {
    REDIS_URL: redis.url,
    REDIS_PREFIX: `bench:${randomBytes(4).toString("hex")}:`,
    LOG_REQUESTS: "false",
    MAX_JOB_PAGES: String(Math.max(2000, pageCount)),
    URL_ALLOW_HOSTS: "127.0.0.1",
    MAX_JOB_URL_BYTES: String(512 * 1024 * 1024),
    // The generated scan goes inline (a 200-page one is ~4 MB).
    MAX_INLINE_BYTES: String(64 * 1024 * 1024),
  });
  const { longScan } = await import("../scripts/make-fixtures");
  const [{ extractDocument }, { OcrPool }] = await Promise.all([import("../lib/ocr"), import("../lib/ocr/pool/pool")]);
  const { JobRunner, jobSettings, readJobResult, resetWorkQueue, getJobView } = await import("../lib/jobs");
  const { services } = await import("../lib/services");
  const { submitJob } = await import("../lib/intake");
  const { grantCredits } = await import("../lib/credits");
  const { getStore, resetStore } = await import("../lib/store");
  const { getEnv } = await import("../lib/env");
  const { buildSettings } = await import("../lib/settings");
  const engines = getEnv().OCR_ENGINES;

  if (pageCount > 0) console.log(`generating a ${pageCount}-page scan…`);
  const scan = await longScan(pageCount);
  const bytes = scan.pdf;
  const truth = scan.truth.join("\n");
  const rows: Array<Record<string, string | number>> = [];

  for (const processes of pageCount > 0 ? processCounts : []) {
    // Synchronous: the engine reads every page with `processes` processes, as a request would (no job, no Redis).
    const syncPool = new OcrPool({
      size: processes,
      queueLimit: 10_000,
      maxJobsPerWorker: 200,
      createTimeoutMs: 60_000,
      engines,
    });
    await syncPool.warm({ ocr: processes });
    let memory = samplePerProcess();
    let busy = machineBusySeconds();
    let started = performance.now();
    const doc = await extractDocument(bytes, {
      env: getEnv(),
      pool: syncPool,
      limits: { maxPdfPages: pageCount, maxPdfWorkMs: 3_600_000 },
      language: "eng",
      deadline: Date.now() + 3_600_000,
    });
    const syncSeconds = (performance.now() - started) / 1000;
    const syncCores = (machineBusySeconds() - busy) / syncSeconds;
    const syncMemory = memory.stop();
    await syncPool.terminate();
    const syncCer = characterErrorRate(doc.pages.map((page) => page.text).join("\n"), truth);

    // The job path: submit, one runner with `processes` engine processes, wait, read the whole result.
    const pool = new OcrPool({
      size: processes,
      queueLimit: 10_000,
      maxJobsPerWorker: 200,
      createTimeoutMs: 60_000,
      engines,
    });
    await pool.warm({ ocr: processes });
    const userId = `usr_bench${randomBytes(6).toString("hex")}`;
    await grantCredits(getStore(), { userId, credits: pageCount * 2 });
    const before = await redisCounters(redis.url);
    memory = samplePerProcess();
    busy = machineBusySeconds();
    started = performance.now();
    // A request's page, alone (idle) and while the job's pages fill every engine process: what a request waits.
    const onePage = scan.pdf; // its first page, by options.pages
    const requestMs = async () => {
      const t = performance.now();
      await extractDocument(onePage, {
        env: getEnv(),
        pool,
        pages: "1",
        language: "eng",
        deadline: Date.now() + 120_000,
      });
      return performance.now() - t;
    };
    const idle: number[] = [];
    for (let i = 0; i < 3; i++) idle.push(await requestMs());
    const during: number[] = [];
    const runner = new JobRunner({
      store: getStore(),
      queue: services().workQueue!,
      deliveries: services().deliveries,
      settings: jobSettings({}, getEnv()),
      name: `bench-${processes}`,
      pool,
      languages: getEnv().OCR_LANGUAGES,
    });
    let jobRunning = true;
    const probes = (async () => {
      await new Promise((resolve) => setTimeout(resolve, 3_000));
      while (jobRunning && during.length < 8) {
        during.push(await requestMs());
        await new Promise((resolve) => setTimeout(resolve, 1_500));
      }
    })();
    const counted = await countCommands(redis.url, async () => {
      const { view } = await submitJob(getStore(), {
        env: getEnv(),
        settings: buildSettings(getEnv()),
        body: { image: Buffer.from(bytes).toString("base64"), options: { language: "eng" } },
        account: { userId },
        requestId: `req_bench${processes}`,
        deadline: Date.now() + 600_000,
        workQueue: services().workQueue,
        deliveries: services().deliveries,
        pool,
      });
      runner.start();
      // Polled once a second, as a client would: its commands count in the job's.
      for (;;) {
        const status = await getJobView(getStore(), getEnv(), services().deliveries, userId, view.jobId);
        if (status.status !== "queued" && status.status !== "running") break;
        await new Promise((resolve) => setTimeout(resolve, 1_000));
      }
      let text = "";
      for (let part: string | null = ""; part !== null;) {
        const pages = part ? (new URL(part, "http://x").searchParams.get("pages") ?? undefined) : undefined;
        const result = await readJobResult(getStore(), getEnv(), services().deliveries, userId, view.jobId, {
          format: "text",
          pages,
        });
        text += (text ? "\f" : "") + result.extractedText;
        part = result.next;
      }
      return { view, text };
    });
    jobRunning = false;
    await probes;
    const { view, text } = counted.result;
    const jobSeconds = (performance.now() - started) / 1000;
    const jobCores = (machineBusySeconds() - busy) / jobSeconds;
    const jobMemory = memory.stop();
    const after = await redisCounters(redis.url);
    await runner.stop();
    await pool.terminate();
    const final = await getJobView(getStore(), getEnv(), services().deliveries, userId, view.jobId);
    rows.push({
      processes,
      "sync pages/s": f2(pageCount / syncSeconds),
      "job pages/s": f2(pageCount / jobSeconds),
      "job/sync": f2(syncSeconds / jobSeconds),
      // Cores busy on the whole machine during each pass: how much room more processes had.
      "cores busy sync / job": `${f2(syncCores)} / ${f2(jobCores)}`,
      "redis cmds sent/page": f1(counted.sent / pageCount),
      "script loads": counted.loads,
      "in scripts/page": f1(counted.inScripts / pageCount),
      "redis KB/page": f1((after.bytesIn + after.bytesOut - before.bytesIn - before.bytesOut) / 1024 / pageCount),
      "peak MiB sync (bench / engines)": `${f1(syncMemory.self)} / ${syncMemory.engines
        .slice(0, processes + 1)
        .map(f1)
        .join(", ")}`,
      "peak MiB job (bench / engines)": `${f1(jobMemory.self)} / ${jobMemory.engines
        .slice(0, processes + 1)
        .map(f1)
        .join(", ")}`,
      "CER sync / job": `${f2(syncCer)} / ${f2(characterErrorRate(text.split("\f").join("\n"), truth))}`,
      status: `${final.status} ${final.pagesDone}/${final.pagesTotal}`,
      // A request's one page: median ms idle / median and max while the job ran.
      "request ms idle / during (max)": `${Math.round(median(idle))} / ${Math.round(median(during))} (${Math.round(Math.max(0, ...during))})`,
    });
    console.table([rows[rows.length - 1]]);
  }
  const first = rows[0];
  for (const row of first ? rows.slice(1) : []) {
    const scaling =
      Number(row["job pages/s"]) / Number(first!["job pages/s"]) / (Number(row.processes) / Number(first!.processes));
    console.log(`scaling ${first!.processes} → ${row.processes} processes: ${f2(scaling)}× linear`);
  }

  const sourceMb = Number(args["source-mb"]);
  if (sourceMb > 0) await sourceBench(sourceMb, redis.url);

  await resetWorkQueue();
  await resetStore();
  void getStore;
  redis.stop();
  process.exit(0);
}

/** A large scanned PDF by URL: what its submission and its source cost. */
async function sourceBench(megabytes: number, redisUrl: string): Promise<void> {
  const { bigScan } = await import("./big-scan");
  const { JobRunner, getJobView, jobSettings } = await import("../lib/jobs");
  const { services } = await import("../lib/services");
  const { submitJob } = await import("../lib/intake");
  const { OcrPool } = await import("../lib/ocr/pool/pool");
  const { grantCredits } = await import("../lib/credits");
  const { getStore } = await import("../lib/store");
  const { getEnv } = await import("../lib/env");
  const { buildSettings } = await import("../lib/settings");
  console.log(`generating a ${megabytes} MB scanned PDF…`);
  const pdf = await bigScan(megabytes);
  const server = http.createServer((_, res) => {
    res.writeHead(200, { "content-type": "application/pdf", "content-length": String(pdf.byteLength) });
    res.end(Buffer.from(pdf.buffer, pdf.byteOffset, pdf.byteLength)); // a view: the bench holds the file once
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address() as net.AddressInfo;
  const userId = `usr_bench${randomBytes(6).toString("hex")}`;
  await grantCredits(getStore(), { userId, credits: 10_000 });
  const before = await redisCounters(redisUrl);
  const memory = samplePerProcess();
  const started = performance.now();
  const { view } = await submitJob(getStore(), {
    env: getEnv(),
    settings: buildSettings(getEnv()),
    body: { imageUrl: `http://127.0.0.1:${address.port}/big.pdf` },
    account: { userId },
    requestId: "req_benchbig",
    deadline: Date.now() + 600_000,
    pool: services().pool,
    workQueue: services().workQueue,
    deliveries: services().deliveries,
  });
  const seconds = (performance.now() - started) / 1000;
  const peaks = memory.stop();
  const after = await redisCounters(redisUrl);
  server.close();

  // Then read it: a runner with two engine processes, as a server instance would.
  const pool = new OcrPool({
    size: 2,
    queueLimit: 10_000,
    maxJobsPerWorker: 200,
    createTimeoutMs: 60_000,
    engines: getEnv().OCR_ENGINES,
  });
  await pool.warm({ ocr: 2 });
  const reading = samplePerProcess();
  const readStarted = performance.now();
  const runner = new JobRunner({
    store: getStore(),
    queue: services().workQueue!,
    deliveries: services().deliveries,
    settings: jobSettings({}, getEnv()),
    name: "bench-big",
    pool,
    languages: getEnv().OCR_LANGUAGES,
  });
  runner.start();
  let final = await getJobView(getStore(), getEnv(), services().deliveries, userId, view.jobId);
  while (final.status === "queued" || final.status === "running") {
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    final = await getJobView(getStore(), getEnv(), services().deliveries, userId, view.jobId);
  }
  const readSeconds = (performance.now() - readStarted) / 1000;
  const readPeaks = reading.stop();
  await runner.stop();
  await pool.terminate();
  console.table([
    {
      status: `${final.status} ${final.pagesDone}/${final.pagesTotal} (${final.pagesFailed} failed)`,
      "read s": f1(readSeconds),
      "pages/s": f2(final.pagesDone / readSeconds),
      "peak MiB runner / engines": `${f1(readPeaks.self)} / ${readPeaks.engines.map(f1).join(", ")}`,
    },
  ]);
  console.table([
    {
      "file MB": f1(pdf.byteLength / 1024 / 1024),
      pages: view.pagesTotal,
      "submit s": f2(seconds),
      "redis MB stored": f1((after.usedMemory - before.usedMemory) / 1024 / 1024),
      "redis MB in": f1((after.bytesIn - before.bytesIn) / 1024 / 1024),
      "peak MiB bench / inspect": `${f1(peaks.self)} / ${peaks.engines.map(f1).join(", ")}`,
    },
  ]);
}
