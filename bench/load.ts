/**
 * npm run bench -- --load [folder ...] [options]
 *
 * Load benchmark of the BUILT server, driven the way users drive it: `POST /api/ocr/process` with base64 JSON
 * bodies and an `x-api-key`. Unless --url is given it starts `<server-dir>/.next/standalone/server.js` (copied out
 * of the checkout, on Redis under a throwaway `ocr:bench:<random>:` prefix, with an account and key from that
 * checkout's admin CLI; see bench/standalone.ts), then runs these phases:
 *
 *   throughput   the corpus images, --concurrency in flight, --rounds rounds: pages/s, latency p50/p90/p99,
 *                statuses (non-200s with their error codes), mean case-folded CER against the ground truth
 *   native       the tesseract CLI (OMP_THREAD_LIMIT=1, the service's eng traineddata, --workers processes) on the
 *                same images, interleaved with the service rounds (service, native, service, …; timings drift):
 *                service pages/s ÷ native pages/s per pair, and the median
 *   event loop   GET /api/health every ~1.5 s during the service rounds: its `eventLoop` field (p99 per reading)
 *                when the build has one, and the health latency in any case
 *   cpu          CPU seconds per page from /proc: the server's main thread, its other threads, its descendant processes
 *   soak         --soak N requests at --concurrency; RSS of the server's process tree every 250 ms: peak, after
 *                warm-up, at the end, and whether it stays flat (within 10%) after warm-up
 *   overload     one burst of --burst concurrent requests (default 3 × --workers): statuses, 503s with and without
 *                Retry-After, time to the first 503. An instance admits what it can start before the request deadline
 *                (55 s: ~30 pages on 2 workers), so a burst past that needs --burst 90 (or a shorter deadline:
 *                --server-env REQUEST_DEADLINE_MS=10000)
 *
 * Options:
 *   --server-dir DIR      checkout whose .next/standalone is started (default: this repository)
 *   --url URL --key K     drive an already running server instead (CPU and RSS only with --pid P)
 *   --workers N           OCR_ENGINE_PROCESSES of the started server (default 2); also the native processes and capacity
 *   --concurrency C       requests in flight (default 2 × workers)
 *   --rounds R            service/native round pairs (default 3)
 *   --soak N              soak requests (default 300; 0 skips), --soak-warmup W (default 50)
 *   --pdfs                also send the corpus PDFs in each service round (timed apart; not in the native ratio)
 *   --format F            options.format of every request (text | json | markdown; default text)
 *   --server-env K=V      extra variable for the started server (repeatable)
 *   --filter S            only files whose path contains S
 *   --burst N             requests in the overload burst (default 3 × workers)
 *   --no-native, --no-overload
 *   --json FILE           write everything as JSON
 */
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { parseArgs, promisify } from "node:util";
import { gunzipSync } from "node:zlib";
import { inLanes } from "../lib/async";
import { mean, median, percentile } from "../tooling";
import { findCorpusFiles } from "./corpus";
import { scoreText } from "./metrics";
import {
  cpuDelta,
  cpuSnapshot,
  loadAverage,
  machineBusySeconds,
  machineStealSeconds,
  selfCpuSeconds,
  sumCpu,
  treeRssKiB,
  type CpuSnapshot,
  type CpuSplit,
} from "./procfs";
import { BenchSetupError, startStandalone, type StandaloneServer } from "./standalone";

const execFileAsync = promisify(execFile);
// bench/index.mjs runs a bundled copy from node_modules/.cache and says where the repo is.
const ROOT = process.env.OCR_BENCH_ROOT ?? path.resolve(import.meta.dirname, "..");
const DEFAULT_CORPUS = path.resolve(ROOT, "../shared/corpus-dev");
/** The service's default MAX_INLINE_BYTES: bigger files cannot be sent inline (they need imageUrl). */
const MAX_INLINE_BYTES = 3 * 1024 * 1024;
const REQUEST_TIMEOUT_MS = 180_000;
const HEALTH_INTERVAL_MS = 1_500;
const RSS_INTERVAL_MS = 250;

interface Item {
  file: string;
  name: string;
  truth: string;
  bytes: number;
  pdf: boolean;
  body: string;
}

interface Outcome {
  name: string;
  status: number;
  code?: string;
  ms: number;
  pages: number;
  startedAt: number;
  endedAt: number;
  retryAfter?: string | null;
  text?: string;
  retried?: boolean;
}

interface HealthReading {
  t: number;
  ms: number;
  status: number;
  eventLoop?: { p50Ms?: number; p99Ms?: number; maxMs?: number; windowMs?: number };
  busy?: number;
  queued?: number;
  workers?: number;
  error?: string;
}

interface RssSample {
  t: number;
  mib: number;
  processes: number;
}

// ---------------------------------------------------------------------------------------------------------------
// small helpers

const round = (v: number, digits = 3) => (Number.isFinite(v) ? Number(v.toFixed(digits)) : null);
const fmt = (v: number | null | undefined, digits = 0) =>
  v === null || v === undefined || !Number.isFinite(v) ? "-" : v.toFixed(digits);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function statusCounts(outcomes: Outcome[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const o of outcomes) {
    const label = o.status === 200 ? "200" : `${o.status || "ERR"} ${o.code ?? "?"}`;
    counts[label] = (counts[label] ?? 0) + 1;
  }
  return counts;
}
const countsText = (counts: Record<string, number>) =>
  Object.entries(counts)
    .map(([k, v]) => `${k}×${v}`)
    .join(", ");

/** A text table: first and last columns left-aligned, the others right-aligned (all left with `left`). */
function table(header: string[], rows: string[][], left = false): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (left || i === 0 || i === cells.length - 1 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!)))
      .join("  ")
      .trimEnd();
  return [line(header), line(widths.map((w) => "-".repeat(w))), ...rows.map(line)].join("\n");
}

/** Machine load while `run` runs: load averages before/after and the cores busy with things other than us. */
async function measured<T>(pid: number | undefined, run: () => Promise<T>) {
  const loadBefore = loadAverage();
  const busy0 = machineBusySeconds();
  const steal0 = machineStealSeconds();
  const self0 = selfCpuSeconds();
  const tree0 = pid ? cpuSnapshot(pid) : null;
  const t0 = performance.now();
  const result = await run();
  const wall = (performance.now() - t0) / 1000;
  const tree1 = pid ? cpuSnapshot(pid) : null;
  const server = tree0 && tree1 ? cpuDelta(tree0, tree1).totalSeconds : 0;
  const bench = selfCpuSeconds() - self0;
  const machine = machineBusySeconds() - busy0;
  const ours = server + bench;
  return {
    result,
    load: {
      loadavgBefore: loadBefore,
      loadavgAfter: loadAverage(),
      wallSeconds: round(wall, 1),
      machineBusyCores: round(machine / wall, 2),
      serverBusyCores: tree0 && tree1 ? round(server / wall, 2) : null,
      benchBusyCores: round(bench / wall, 2),
      stealCores: round((machineStealSeconds() - steal0) / wall, 2),
      // Busy cores not accounted for by the server tree, this bench and its tesseract children (others' work).
      otherBusyCores: tree0 && tree1 ? round(Math.max(0, machine - ours) / wall, 2) : null,
    },
  };
}

// ---------------------------------------------------------------------------------------------------------------
// corpus

async function findItems(targets: string[], filter: string | undefined, withPdfs: boolean, format: string) {
  const items: Item[] = [];
  const skipped: string[] = [];
  const root = targets.length === 1 && (await fs.stat(targets[0]!)).isDirectory() ? targets[0]! : process.cwd();
  for (const { file, ext, truthFile, size } of await findCorpusFiles(targets, filter)) {
    const pdf = ext === ".pdf";
    if (pdf && !withPdfs) continue;
    const name = path.relative(root, file);
    if (size > MAX_INLINE_BYTES) {
      skipped.push(`${name} (${(size / 1048576).toFixed(1)} MiB > the 3 MiB inline limit)`);
      continue;
    }
    const bytes = await fs.readFile(file);
    items.push({
      file,
      name,
      truth: await fs.readFile(truthFile, "utf8"),
      bytes: size,
      pdf,
      body: JSON.stringify({ image: bytes.toString("base64"), options: { format } }),
    });
  }
  // Largest first (for the service and the native runs alike), so the big pages do not all end up in the tail.
  items.sort((a, b) => b.bytes - a.bytes);
  return { items, skipped };
}

/** The text of a response in any format, for scoring. */
function plainText(text: string, format: string): string {
  if (format !== "json") return text;
  try {
    const doc = JSON.parse(text) as { pages?: Array<{ text?: string }> };
    return (doc.pages ?? []).map((p) => p.text ?? "").join("\n");
  } catch {
    return text;
  }
}

// ---------------------------------------------------------------------------------------------------------------
// the client

class Client {
  readonly endpoint: string;
  constructor(
    readonly url: string,
    private readonly key: string,
  ) {
    this.endpoint = new URL("/api/ocr/process", url).toString();
  }

  async post(item: Item, keepText: boolean): Promise<Outcome> {
    const startedAt = performance.now();
    const send = () =>
      fetch(this.endpoint, {
        method: "POST",
        headers: { "content-type": "application/json", "x-api-key": this.key },
        body: item.body,
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
    let response: Response;
    let retried = false;
    try {
      try {
        response = await send();
      } catch (error) {
        // A keep-alive connection the server had already closed (EPIPE / ECONNRESET): once more on a new one.
        if ((error as Error).name === "TimeoutError") throw error;
        retried = true;
        response = await send();
      }
    } catch (error) {
      const endedAt = performance.now();
      const cause = (error as Error & { cause?: Error }).cause;
      return {
        name: item.name,
        status: 0,
        code: `${(error as Error).name}: ${cause?.message ?? (error as Error).message}`,
        ms: endedAt - startedAt,
        pages: 0,
        startedAt,
        endedAt,
        retried,
      };
    }
    const raw = await response.text();
    const endedAt = performance.now();
    let body: { extractedText?: unknown; creditsUsed?: unknown; error?: { code?: unknown } } = {};
    try {
      body = JSON.parse(raw) as typeof body;
    } catch {
      body = { error: { code: `non-JSON body: ${raw.slice(0, 60)}` } };
    }
    return {
      name: item.name,
      status: response.status,
      code: response.status === 200 ? undefined : String(body.error?.code ?? "?"),
      ms: endedAt - startedAt,
      pages: typeof body.creditsUsed === "number" ? body.creditsUsed : 0,
      startedAt,
      endedAt,
      retryAfter: response.headers.get("retry-after"),
      text: keepText && typeof body.extractedText === "string" ? body.extractedText : undefined,
      retried,
    };
  }

  /** Every item once (or `count` requests cycling through them), `concurrency` in flight. */
  async run(
    items: Item[],
    concurrency: number,
    options: { count?: number; keepText?: boolean; onDone?: (o: Outcome, done: number) => void } = {},
  ) {
    const count = options.count ?? items.length;
    const requests = Array.from({ length: count }, (_, i) => items[i % items.length]!);
    let done = 0;
    const outcomes: Outcome[] = [];
    const started = performance.now();
    await inLanes(requests, concurrency, async (item) => {
      const outcome = await this.post(item, options.keepText ?? false);
      outcomes.push(outcome);
      options.onDone?.(outcome, ++done);
    });
    return { outcomes, seconds: (performance.now() - started) / 1000 };
  }
}

// ---------------------------------------------------------------------------------------------------------------
// background samplers

class HealthPoller {
  readonly readings: HealthReading[] = [];
  private running = false;
  private loop: Promise<void> | undefined;
  constructor(private readonly url: string) {}

  start(): void {
    if (this.running) return;
    this.running = true;
    this.loop = (async () => {
      while (this.running) {
        const t = performance.now();
        this.readings.push(await this.read());
        const wait = HEALTH_INTERVAL_MS - (performance.now() - t);
        if (this.running && wait > 0) await sleep(wait);
      }
    })();
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.loop;
  }

  private async read(): Promise<HealthReading> {
    const t = performance.now();
    try {
      const response = await fetch(new URL("/api/health", this.url), { signal: AbortSignal.timeout(30_000) });
      const body = (await response.json()) as {
        eventLoop?: HealthReading["eventLoop"];
        engine?: { busy?: number; queued?: number; workers?: number; eventLoop?: HealthReading["eventLoop"] };
      };
      return {
        t,
        ms: performance.now() - t,
        status: response.status,
        eventLoop: body.eventLoop ?? body.engine?.eventLoop,
        busy: body.engine?.busy,
        queued: body.engine?.queued,
        workers: body.engine?.workers,
      };
    } catch (error) {
      return { t, ms: performance.now() - t, status: 0, error: String(error) };
    }
  }
}

class RssSampler {
  readonly samples: RssSample[] = [];
  private timer: NodeJS.Timeout | undefined;
  constructor(private readonly pid: number) {}
  start(): void {
    const sample = () => {
      const rss = treeRssKiB(this.pid);
      if (rss) this.samples.push({ t: performance.now(), mib: rss.kib / 1024, processes: rss.processes });
    };
    sample();
    this.timer = setInterval(sample, RSS_INTERVAL_MS);
  }
  stop(): void {
    clearInterval(this.timer);
  }
  between(from: number, to: number): RssSample[] {
    return this.samples.filter((s) => s.t >= from && s.t <= to);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// native tesseract

async function prepareTessdata(serverDir: string): Promise<string | null> {
  try {
    await execFileAsync("tesseract", ["--version"]);
  } catch {
    console.error("native: tesseract CLI not found (apt-get install tesseract-ocr); skipped");
    return null;
  }
  const candidates = [serverDir, ROOT].map((dir) =>
    path.join(dir, "node_modules/@tesseract.js-data/eng/4.0.0_best_int/eng.traineddata.gz"),
  );
  const gz = candidates.find((file) => existsSync(file));
  if (!gz) {
    console.error("native: eng.traineddata.gz not found under node_modules/@tesseract.js-data; skipped");
    return null;
  }
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), "bench-tessdata-"));
  await fs.writeFile(path.join(dir, "eng.traineddata"), gunzipSync(await fs.readFile(gz)));
  return dir;
}

async function nativeRound(items: Item[], processes: number, tessdata: string) {
  const texts = new Map<string, string>();
  const failures: string[] = [];
  const started = performance.now();
  await inLanes(items, processes, async (item) => {
    try {
      const { stdout } = await execFileAsync(
        "tesseract",
        [item.file, "stdout", "--tessdata-dir", tessdata, "-l", "eng"],
        {
          env: { ...process.env, OMP_THREAD_LIMIT: "1" },
          maxBuffer: 64 * 1024 * 1024,
        },
      );
      texts.set(item.name, stdout);
    } catch (error) {
      failures.push(`${item.name}: ${(error as Error).message.split("\n")[0]}`);
    }
  });
  const seconds = (performance.now() - started) / 1000;
  return { seconds, pages: texts.size, pagesPerSecond: texts.size / seconds, texts, failures };
}

// ---------------------------------------------------------------------------------------------------------------
// phases

function latencySummary(outcomes: Outcome[]) {
  const ms = outcomes.filter((o) => o.status === 200).map((o) => o.ms);
  return {
    p50Ms: round(percentile(ms, 50), 0),
    p90Ms: round(percentile(ms, 90), 0),
    p99Ms: round(percentile(ms, 99), 0),
    maxMs: round(Math.max(...ms), 0),
  };
}

function errorsOf(outcomes: Outcome[]) {
  return outcomes
    .filter((o) => o.status !== 200)
    .map((o) => ({
      name: o.name,
      status: o.status,
      code: o.code,
      ms: Math.round(o.ms),
      retryAfter: o.retryAfter ?? null,
    }));
}

/** The options of `npm run bench -- --load`, checked (see the usage at the top of this file). */
function parseLoadOptions(argv: string[]) {
  const { values: args, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: {
      load: { type: "boolean" },
      url: { type: "string" },
      key: { type: "string" },
      pid: { type: "string" },
      "server-dir": { type: "string" },
      "server-env": { type: "string", multiple: true },
      workers: { type: "string" },
      concurrency: { type: "string" },
      rounds: { type: "string" },
      soak: { type: "string" },
      "soak-warmup": { type: "string" },
      pdfs: { type: "boolean", default: false },
      format: { type: "string", default: "text" },
      filter: { type: "string" },
      json: { type: "string" },
      "no-native": { type: "boolean", default: false },
      "no-overload": { type: "boolean", default: false },
      burst: { type: "string" },
    },
  });
  const int = (value: string | undefined, fallback: number, name: string, min = 0) => {
    const n = value === undefined ? fallback : Number(value);
    if (!Number.isSafeInteger(n) || n < min) throw new BenchSetupError(`--${name} must be a whole number ≥ ${min}`);
    return n;
  };
  const workers = int(args.workers, 2, "workers", 1);
  const soakCount = int(args.soak, 300, "soak");
  const format = args.format!;
  if (!["text", "json", "markdown"].includes(format))
    throw new BenchSetupError("--format must be text, json or markdown");
  const serverEnv: Record<string, string> = {};
  for (const pair of args["server-env"] ?? []) {
    const at = pair.indexOf("=");
    if (at < 1) throw new BenchSetupError(`--server-env takes NAME=value, not ${pair}`);
    serverEnv[pair.slice(0, at)] = pair.slice(at + 1);
  }
  if (args.url && !(args.key ?? process.env.OCR_API_KEY))
    throw new BenchSetupError("--url needs --key (or OCR_API_KEY)");
  return {
    workers,
    concurrency: int(args.concurrency, 2 * workers, "concurrency", 1),
    rounds: int(args.rounds, 3, "rounds", 1),
    burst: int(args.burst, 3 * workers, "burst", 1),
    soakCount,
    soakWarmup: int(args["soak-warmup"], Math.min(50, Math.floor(soakCount / 3)), "soak-warmup"),
    format,
    serverDir: path.resolve(args["server-dir"] ?? ROOT),
    serverEnv,
    url: args.url,
    key: args.key ?? process.env.OCR_API_KEY,
    pid: args.pid ? Number(args.pid) : undefined,
    targets: positionals.length > 0 ? positionals.map((p) => path.resolve(p)) : [DEFAULT_CORPUS],
    filter: args.filter,
    pdfs: args.pdfs!,
    json: args.json,
    native: !args["no-native"],
    overload: !args["no-overload"],
  };
}
type LoadOptions = ReturnType<typeof parseLoadOptions>;

/** What every phase reads (the options, the server, the documents) and adds to (the results and the summary). */
interface LoadRun {
  options: LoadOptions;
  client: Client;
  url: string;
  /** The server's process, for CPU and RSS figures (none for --url without --pid). */
  pid: number | undefined;
  images: Item[];
  pdfs: Item[];
  /** The JSON report, by phase. */
  results: Record<string, unknown>;
  /** One row per phase: name, result, details. */
  summaryRows: string[][];
  failures: string[];
}

/** The server under load: the one at --url, or a copy of the checkout's standalone build started for the run. */
async function openServer(
  options: LoadOptions,
): Promise<{ server?: StandaloneServer; url: string; key: string; pid: number | undefined }> {
  if (options.url) return { url: options.url, key: options.key!, pid: options.pid };
  const started = performance.now();
  const redisUrl = process.env.REDIS_URL || "redis://127.0.0.1:6379";
  const server = await startStandalone({
    serverDir: options.serverDir,
    redisUrl,
    workers: options.workers,
    env: options.serverEnv,
  });
  console.log(
    `load: started ${options.serverDir}/.next/standalone at ${server.url} (pid ${server.pid}, ${((performance.now() - started) / 1000).toFixed(1)} s), log ${server.logFile}`,
  );
  return { server, url: server.url, key: server.key, pid: server.pid };
}

/** The checkout's last commit (and whether it has uncommitted changes), for the report. */
async function describeCommit(serverDir: string): Promise<string> {
  try {
    let commit = (await execFileAsync("git", ["-C", serverDir, "log", "-1", "--format=%h %s"])).stdout
      .trim()
      .slice(0, 100);
    const dirty = (
      await execFileAsync("git", ["-C", serverDir, "status", "--porcelain", "--untracked-files=no"])
    ).stdout.trim();
    if (dirty) commit += ` (+ uncommitted changes in ${dirty.split("\n").length} files)`;
    return commit;
  } catch {
    return ""; // not a checkout
  }
}

async function runLoad(argv: string[]): Promise<void> {
  const options = parseLoadOptions(argv);
  const { items: all, skipped } = await findItems(options.targets, options.filter, options.pdfs, options.format);
  const images = all.filter((i) => !i.pdf);
  const pdfs = all.filter((i) => i.pdf);
  if (images.length === 0)
    throw new BenchSetupError(`no images with a .gt.txt beside them in ${options.targets.join(", ")}`);

  const loadAtStart = loadAverage();
  const { server, url, key, pid } = await openServer(options);
  const cleanUp = async () => {
    await server?.stop();
  };
  const onSignal = (signal: NodeJS.Signals) => {
    console.error(`\nload: ${signal}, stopping the server`);
    void cleanUp().finally(() => process.exit(130));
  };
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  const commit = await describeCommit(options.serverDir);

  const run: LoadRun = {
    options,
    client: new Client(url, key),
    url,
    pid,
    images,
    pdfs,
    results: {},
    summaryRows: [],
    failures: [],
  };
  let tessdata: string | null = null;
  try {
    const { workers, concurrency, rounds, soakCount, format } = options;
    console.log(
      `load: ${images.length} images${pdfs.length ? ` + ${pdfs.length} PDFs` : ""}, workers ${workers}, concurrency ${concurrency}, rounds ${rounds}, soak ${soakCount}, ` +
        `format ${format}; node ${process.version}, ${os.availableParallelism()} cpus, load average ${loadAtStart.join(" ")}`,
    );
    if (skipped.length) console.log(`load: skipped ${skipped.join("; ")}`);
    if (options.url && !pid) console.log("load: --url without --pid: no CPU or RSS figures");

    await warmUp(run);
    tessdata = options.native ? await prepareTessdata(options.serverDir) : null;
    const measuredRounds = await measureThroughput(run, tessdata);
    const { throughput, imageFiles } = reportThroughput(run, measuredRounds);
    if (tessdata) reportNative(run, measuredRounds, imageFiles);
    reportEventLoop(run, measuredRounds.health.readings);
    if (measuredRounds.cpuSplits.length) reportCpu(run, measuredRounds.cpuSplits, measuredRounds.pages);
    if (measuredRounds.rss)
      run.results.throughputRss = { peakMiB: round(Math.max(...measuredRounds.rss.samples.map((s) => s.mib)), 0) };
    if (soakCount > 0) await soak(run);
    if (options.overload) await overload(run);
    await checkFinalHealth(run);

    console.log("");
    console.log(table(["phase", "result", "details"], run.summaryRows, true));
    const loadAtEnd = loadAverage();
    console.log(
      `\nload average: ${loadAtStart.join(" ")} at start, ${loadAtEnd.join(" ")} at end; other work during throughput: ${fmt(measuredRounds.machine.otherBusyCores ?? NaN, 2)} cores`,
    );
    const errorLines = [
      ...(throughput.errors.length ? [`throughput: ${throughput.errors.length} non-200`] : []),
      ...run.failures,
    ];
    if (errorLines.length) console.log(`problems: ${errorLines.join("; ")}`);
    if (server) printServerLog(server);

    if (options.json) {
      const meta = {
        date: new Date().toISOString(),
        server: options.url
          ? { url }
          : { dir: options.serverDir, commit, logFile: server?.logFile, env: options.serverEnv },
        pid,
        workers,
        concurrency,
        rounds,
        soak: soakCount,
        format,
        images: images.length,
        pdfs: pdfs.length,
        skipped,
        node: process.version,
        cpus: os.availableParallelism(),
        loadavgStart: loadAtStart,
        loadavgEnd: loadAtEnd,
      };
      await fs.writeFile(options.json, JSON.stringify({ meta, ...run.results }, null, 2));
      console.log(`wrote ${options.json}`);
    }
  } finally {
    process.removeListener("SIGINT", onSignal);
    process.removeListener("SIGTERM", onSignal);
    if (tessdata) await fs.rm(tessdata, { recursive: true, force: true });
    await cleanUp();
  }
}

/** Warm-up: every worker started, the key works (the smallest images, two per worker). */
async function warmUp({ client, images, options }: LoadRun): Promise<void> {
  const warmItems = [...images].sort((a, b) => a.bytes - b.bytes).slice(0, Math.max(2, options.workers * 2));
  const warm = await client.run(warmItems, options.workers);
  const warmBad = warm.outcomes.filter((o) => o.status !== 200);
  if (warmBad.length === warm.outcomes.length) {
    throw new BenchSetupError(`warm-up failed: ${countsText(statusCounts(warm.outcomes))}`);
  }
  console.log(
    `load: warm-up ${warm.outcomes.length} requests in ${warm.seconds.toFixed(1)} s (${countsText(statusCounts(warm.outcomes))})`,
  );
}

/**
 * Throughput: `rounds` passes over every image (and PDF) at `concurrency`, each followed by the same images read by
 * native tesseract with as many processes (interleaved, so both see the same machine); the health endpoint polled
 * meanwhile (event loop), the server's CPU split per round. Texts are kept for scoring after the runs.
 */
async function measureThroughput(run: LoadRun, tessdata: string | null) {
  const { client, pid, images, pdfs, options, failures } = run;
  const { rounds, concurrency, workers, format } = options;
  const health = new HealthPoller(run.url);
  const rss = pid ? new RssSampler(pid) : undefined;
  rss?.start();
  const roundRows: string[][] = [];
  const serviceRounds: Array<Record<string, unknown>> = [];
  const nativeRounds: Array<Record<string, unknown>> = [];
  const cpuSplits: CpuSplit[] = [];
  const serviceTexts = new Map<string, string[]>();
  const nativeTexts = new Map<string, string[]>();
  const allOutcomes: Outcome[] = [];
  const ratios: number[] = [];
  let throughputPages = 0;
  const tp = await measured(pid, async () => {
    for (let r = 1; r <= rounds; r++) {
      const load = loadAverage();
      const cpu0: CpuSnapshot | null = pid ? cpuSnapshot(pid) : null;
      health.start();
      const svc = await measured(pid, async () => {
        const service = await client.run(images, concurrency, { keepText: true });
        const pdfPass = pdfs.length ? await client.run(pdfs, concurrency, { keepText: true }) : null;
        return { service, pdfPass };
      });
      const { service, pdfPass } = svc.result;
      await health.stop();
      const cpu1 = pid ? cpuSnapshot(pid) : null;
      const outcomes = [...service.outcomes, ...(pdfPass?.outcomes ?? [])];
      allOutcomes.push(...outcomes);
      for (const o of outcomes) {
        if (o.status === 200 && o.text !== undefined) {
          const list = serviceTexts.get(o.name) ?? [];
          list.push(plainText(o.text, format));
          serviceTexts.set(o.name, list);
        }
        delete o.text;
      }
      const imagePages = service.outcomes.reduce((a, o) => a + o.pages, 0);
      const pdfPages = pdfPass?.outcomes.reduce((a, o) => a + o.pages, 0) ?? 0;
      throughputPages += imagePages + pdfPages;
      const pagesPerSecond = imagePages / service.seconds;
      let split: CpuSplit | null = null;
      if (cpu0 && cpu1) {
        split = cpuDelta(cpu0, cpu1);
        cpuSplits.push(split);
      }
      const lat = latencySummary(service.outcomes);
      const serviceRound = {
        round: r,
        loadavg: load,
        machine: svc.load,
        pages: imagePages,
        seconds: round(service.seconds, 2),
        pagesPerSecond: round(pagesPerSecond),
        ...lat,
        statuses: statusCounts(outcomes),
        pdf: pdfPass
          ? {
              pages: pdfPages,
              seconds: round(pdfPass.seconds, 2),
              pagesPerSecond: round(pdfPages / pdfPass.seconds),
              ...latencySummary(pdfPass.outcomes),
            }
          : undefined,
        cpuSecondsPerPage: split ? round(split.totalSeconds / (imagePages + pdfPages)) : undefined,
      };
      serviceRounds.push(serviceRound);
      let nativeRow = ["-", "-"];
      let nativeOther: number | null = null;
      if (tessdata) {
        const nat = await measured(pid, () => nativeRound(images, workers, tessdata));
        const native = nat.result;
        nativeOther = nat.load.otherBusyCores;
        for (const [name, text] of native.texts) {
          const list = nativeTexts.get(name) ?? [];
          list.push(text);
          nativeTexts.set(name, list);
        }
        const ratio = pagesPerSecond / native.pagesPerSecond;
        ratios.push(ratio);
        nativeRounds.push({
          round: r,
          pages: native.pages,
          seconds: round(native.seconds, 2),
          pagesPerSecond: round(native.pagesPerSecond),
          ratio: round(ratio),
          failures: native.failures,
          machine: nat.load,
        });
        nativeRow = [fmt(native.pagesPerSecond, 3), fmt(ratio, 2)];
        if (native.failures.length) failures.push(...native.failures.map((f) => `native: ${f}`));
      }
      roundRows.push([
        String(r),
        fmt(pagesPerSecond, 3),
        ...nativeRow,
        fmt(lat.p50Ms),
        fmt(lat.p90Ms),
        fmt(lat.p99Ms),
        pdfPass ? fmt(pdfPages / pdfPass.seconds, 2) : "-",
        split ? fmt(split.totalSeconds / (imagePages + pdfPages), 2) : "-",
        load.join(" "),
        `${fmt(svc.load.otherBusyCores ?? NaN, 2)}/${fmt(nativeOther ?? NaN, 2)}`,
        countsText(statusCounts(outcomes)),
      ]);
      console.log(
        `load: round ${r}/${rounds}: service ${fmt(pagesPerSecond, 3)} pages/s${tessdata ? `, native ${nativeRow[0]} pages/s, ratio ${nativeRow[1]}` : ""}`,
      );
    }
  });
  rss?.stop();

  console.log("");
  console.log(
    table(
      [
        "round",
        "service p/s",
        "native p/s",
        "ratio",
        "p50 ms",
        "p90 ms",
        "p99 ms",
        "pdf p/s",
        "cpu s/page",
        "loadavg at start",
        "others' cores svc/nat",
        "statuses",
      ],
      roundRows,
    ),
  );
  return {
    health,
    rss,
    serviceRounds,
    nativeRounds,
    cpuSplits,
    serviceTexts,
    nativeTexts,
    allOutcomes,
    ratios,
    pages: throughputPages,
    machine: tp.load,
  };
}
type MeasuredRounds = Awaited<ReturnType<typeof measureThroughput>>;

/**
 * The throughput's result, and accuracy per file: scored after the runs (scoring on this process while measuring
 * would take CPU from the server).
 */
function reportThroughput(run: LoadRun, measuredRounds: MeasuredRounds) {
  const { images, pdfs, results, summaryRows, options } = run;
  const { serviceRounds, serviceTexts, nativeTexts, allOutcomes } = measuredRounds;
  const perFile = images.concat(pdfs).map((item) => {
    const service = (serviceTexts.get(item.name) ?? []).map((t) => scoreText(t, item.truth).cerFolded);
    const native = (nativeTexts.get(item.name) ?? []).slice(0, 1).map((t) => scoreText(t, item.truth).cerFolded);
    const ms = allOutcomes.filter((o) => o.name === item.name && o.status === 200).map((o) => o.ms);
    return {
      name: item.name,
      bytes: item.bytes,
      serviceCERFolded: round(mean(service)),
      nativeCERFolded: item.pdf ? null : round(mean(native)),
      medianMs: round(median(ms), 0),
      ok: ms.length,
    };
  });
  console.log("");
  console.log(
    table(
      ["file", "KiB", "ok", "median ms", "CER cf", "native CER cf"],
      perFile.map((f) => [
        f.name,
        fmt(f.bytes / 1024),
        String(f.ok),
        fmt(f.medianMs ?? NaN),
        fmt(f.serviceCERFolded ?? NaN, 3),
        fmt(f.nativeCERFolded ?? NaN, 3),
      ]),
    ),
  );
  const imageFiles = perFile.filter((f) => !f.name.endsWith(".pdf"));
  const throughput = {
    pagesPerSecondMedian: round(median(serviceRounds.map((r) => r.pagesPerSecond as number))),
    pagesPerSecondByRound: serviceRounds.map((r) => r.pagesPerSecond),
    ...latencySummary(allOutcomes.filter((o) => !o.name.endsWith(".pdf"))),
    statuses: statusCounts(allOutcomes),
    errors: errorsOf(allOutcomes),
    retriedConnections: allOutcomes.filter((o) => o.retried).length,
    meanCERFoldedImages: round(mean(imageFiles.map((f) => f.serviceCERFolded ?? NaN).filter(Number.isFinite))),
    meanCERFoldedPdfs: pdfs.length
      ? round(
          mean(
            perFile
              .filter((f) => f.name.endsWith(".pdf"))
              .map((f) => f.serviceCERFolded ?? NaN)
              .filter(Number.isFinite),
          ),
        )
      : undefined,
    rounds: serviceRounds,
    machine: measuredRounds.machine,
  };
  results.throughput = throughput;
  results.files = perFile;
  summaryRows.push([
    "throughput",
    `${fmt(throughput.pagesPerSecondMedian, 3)} pages/s (median of ${options.rounds})`,
    `p50/p90/p99 ${fmt(throughput.p50Ms)}/${fmt(throughput.p90Ms)}/${fmt(throughput.p99Ms)} ms; CER cf ${fmt(throughput.meanCERFoldedImages, 3)}; ${countsText(throughput.statuses)}`,
  ]);
  return { throughput, imageFiles };
}
type FileScore = ReturnType<typeof reportThroughput>["imageFiles"][number];

/** Native tesseract beside the service: pages per second, their ratio per round, its accuracy (`imageFiles`: per image). */
function reportNative(run: LoadRun, { nativeRounds, ratios }: MeasuredRounds, imageFiles: FileScore[]): void {
  const { workers } = run.options;
  const native = {
    processes: workers,
    pagesPerSecondMedian: round(median(nativeRounds.map((r) => r.pagesPerSecond as number))),
    ratioByRound: ratios.map((r) => round(r)),
    ratioMedian: round(median(ratios)),
    meanCERFolded: round(mean(imageFiles.map((f) => f.nativeCERFolded ?? NaN).filter(Number.isFinite))),
    rounds: nativeRounds,
  };
  run.results.native = native;
  run.summaryRows.push([
    "native",
    `ratio ${fmt(median(ratios), 2)} (median; service ÷ native pages/s)`,
    `native ${fmt(native.pagesPerSecondMedian, 3)} pages/s ×${workers} procs; per round ${ratios.map((r) => fmt(r, 2)).join(", ")}; native CER cf ${fmt(native.meanCERFolded, 3)}`,
  ]);
}

/** The event loop as /api/health reported it during the throughput rounds, and how fast health answered. */
function reportEventLoop(run: LoadRun, readings: HealthReading[]): void {
  const ok = readings.filter((r) => r.status !== 0);
  const withLoop = readings.filter((r) => r.eventLoop && typeof r.eventLoop.p99Ms === "number");
  const allBusy = readings.filter((r) => typeof r.busy === "number" && r.busy >= run.options.workers);
  const eventLoop = {
    readings: readings.length,
    readingsWithAllWorkersBusy: allBusy.length,
    field: withLoop.length > 0,
    maxP99Ms: withLoop.length ? round(Math.max(...withLoop.map((r) => r.eventLoop!.p99Ms!)), 1) : null,
    medianP99Ms: withLoop.length ? round(median(withLoop.map((r) => r.eventLoop!.p99Ms!)), 1) : null,
    maxMaxMs: withLoop.length
      ? round(Math.max(...withLoop.map((r) => r.eventLoop!.maxMs ?? NaN).filter(Number.isFinite)), 1)
      : null,
    healthLatency: {
      p50Ms: round(
        percentile(
          ok.map((r) => r.ms),
          50,
        ),
        1,
      ),
      p99Ms: round(
        percentile(
          ok.map((r) => r.ms),
          99,
        ),
        1,
      ),
      maxMs: round(Math.max(...ok.map((r) => r.ms)), 1),
      allBusyP50Ms: allBusy.length
        ? round(
            percentile(
              allBusy.map((r) => r.ms),
              50,
            ),
            1,
          )
        : null,
      allBusyMaxMs: allBusy.length ? round(Math.max(...allBusy.map((r) => r.ms)), 1) : null,
    },
    failed: readings.filter((r) => r.status !== 200).map((r) => ({ status: r.status, error: r.error })),
    samples: readings.map((r) => ({
      t: round((r.t - readings[0]!.t) / 1000, 1),
      ms: round(r.ms, 1),
      status: r.status,
      busy: r.busy,
      queued: r.queued,
      eventLoop: r.eventLoop,
    })),
  };
  run.results.eventLoop = eventLoop;
  run.summaryRows.push([
    "event loop",
    eventLoop.field
      ? `p99 max ${fmt(eventLoop.maxP99Ms, 1)} ms (median ${fmt(eventLoop.medianP99Ms, 1)})`
      : "no eventLoop field (older build)",
    `health latency p50/p99/max ${fmt(eventLoop.healthLatency.p50Ms, 1)}/${fmt(eventLoop.healthLatency.p99Ms, 1)}/${fmt(eventLoop.healthLatency.maxMs, 1)} ms over ${readings.length} polls` +
      ` (${allBusy.length} with all workers busy${allBusy.length ? `: p50 ${fmt(eventLoop.healthLatency.allBusyP50Ms, 1)}, max ${fmt(eventLoop.healthLatency.allBusyMaxMs, 1)}` : ""})` +
      (eventLoop.failed.length ? `; ${eventLoop.failed.length} non-200` : ""),
  ]);
}

/** Where the CPU time of the throughput rounds went: the server's main thread, its other threads, the engine processes. */
function reportCpu(run: LoadRun, cpuSplits: CpuSplit[], pages: number): void {
  const total = sumCpu(cpuSplits);
  const perPage = (s: number) => round(s / pages, 3);
  const cpu = {
    pages,
    wallSeconds: round(total.wallSeconds, 1),
    mainThreadSecondsPerPage: perPage(total.mainThreadSeconds),
    otherThreadsSecondsPerPage: perPage(total.otherThreadsSeconds),
    descendantSecondsPerPage: perPage(total.descendantSeconds),
    totalSecondsPerPage: perPage(total.totalSeconds),
    mainThreadShare: round(total.mainThreadSeconds / total.totalSeconds),
    coresBusy: round(total.totalSeconds / total.wallSeconds, 2),
    maxDescendantProcesses: total.maxDescendants,
    otherThreadsByName: Object.fromEntries(Object.entries(total.threadsByName).map(([k, v]) => [k, round(v, 1)])),
    seconds: {
      mainThread: round(total.mainThreadSeconds, 1),
      otherThreads: round(total.otherThreadsSeconds, 1),
      descendants: round(total.descendantSeconds, 1),
      total: round(total.totalSeconds, 1),
    },
  };
  run.results.cpu = cpu;
  run.summaryRows.push([
    "cpu",
    `${fmt(cpu.totalSecondsPerPage, 2)} CPU s/page (${fmt(cpu.coresBusy, 2)} cores busy)`,
    `main thread ${fmt(cpu.mainThreadSecondsPerPage, 3)}, other threads ${fmt(cpu.otherThreadsSecondsPerPage, 3)}, child processes ${fmt(cpu.descendantSecondsPerPage, 3)} s/page` +
      ` (main thread ${fmt((cpu.mainThreadShare ?? 0) * 100, 0)}%; up to ${cpu.maxDescendantProcesses} child processes)`,
  ]);
}

/** Soak: `--soak` requests in a row, the server's RSS sampled; flat after the warm-up, or a leak. */
async function soak(run: LoadRun): Promise<void> {
  const { client, pid, images } = run;
  const { concurrency, soakCount, soakWarmup } = run.options;
  const sampler = pid ? new RssSampler(pid) : undefined;
  sampler?.start();
  let warmAt = performance.now();
  const soakRun = await measured(pid, () =>
    client.run(images, concurrency, {
      count: soakCount,
      onDone: (_o, done) => {
        if (done === soakWarmup) warmAt = performance.now();
      },
    }),
  );
  const endAt = performance.now();
  await sleep(2_000);
  sampler?.stop();
  const { outcomes, seconds } = soakRun.result;
  const pages = outcomes.reduce((a, o) => a + o.pages, 0);
  const soak: Record<string, unknown> = {
    requests: soakCount,
    warmupRequests: soakWarmup,
    seconds: round(seconds, 1),
    pagesPerSecond: round(pages / seconds),
    ...latencySummary(outcomes),
    statuses: statusCounts(outcomes),
    errors: errorsOf(outcomes),
    machine: soakRun.load,
  };
  if (sampler && sampler.samples.length > 4) soak.rss = rssAfterWarmup(sampler, warmAt, endAt);
  run.results.soak = soak;
  const r = soak.rss as Record<string, number | boolean> | undefined;
  run.summaryRows.push([
    "soak",
    r
      ? `peak ${fmt(r.peakMiB as number)} MiB; ${r.flat ? "flat" : "NOT flat"} after warm-up (windows within ±${fmt((r.maxWindowDeviation as number) * 100, 0)}%, drift ${(r.drift as number) >= 0 ? "+" : ""}${fmt((r.drift as number) * 100, 0)}%)`
      : `${soakCount} requests`,
    (r
      ? `RSS start ${fmt(r.beforeMiB as number)}, after ${soakWarmup} req ${fmt(r.afterWarmupMiB as number)}, end ${fmt(r.endMiB as number)}, idle ${fmt(r.idleAfterMiB as number)} MiB; `
      : "") +
      `${soakCount} req in ${fmt(seconds, 0)} s, ${fmt(soak.pagesPerSecond as number, 3)} pages/s, p99 ${fmt(soak.p99Ms as number)} ms; ${countsText(soak.statuses as Record<string, number>)}`,
  ]);
}

/** The soak's RSS: peak, and whether it stayed flat from the warm-up to the end (medians of ten windows). */
function rssAfterWarmup(sampler: RssSampler, warmAt: number, endAt: number) {
  const samples = sampler.samples;
  const start = samples[0]!.t;
  const during = sampler.between(start, endAt);
  const after = sampler.between(warmAt, endAt);
  // RSS moves with the images in flight: compare medians of windows, not single samples.
  const windows = 10;
  const span = (endAt - warmAt) / windows;
  const windowMedians = Array.from({ length: windows }, (_, i) =>
    median(sampler.between(warmAt + i * span, warmAt + (i + 1) * span).map((s) => s.mib)),
  ).filter(Number.isFinite);
  const warmMiB = windowMedians[0] ?? NaN;
  const endMiB = windowMedians.at(-1) ?? NaN;
  const spread = windowMedians.length ? Math.max(...windowMedians.map((m) => Math.abs(m - warmMiB) / warmMiB)) : NaN;
  // Growth from the first third of the post-warm-up windows to the last third (a leak shows here; a hump does not).
  const third = Math.max(1, Math.floor(windowMedians.length / 3));
  const drift = median(windowMedians.slice(-third)) / median(windowMedians.slice(0, third)) - 1;
  return {
    peakMiB: round(Math.max(...during.map((s) => s.mib)), 0),
    beforeMiB: round(samples[0]!.mib, 0),
    afterWarmupMiB: round(warmMiB, 0),
    endMiB: round(endMiB, 0),
    idleAfterMiB: round(samples.at(-1)!.mib, 0),
    maxAfterWarmupMiB: round(Math.max(...after.map((s) => s.mib)), 0),
    windowMediansMiB: windowMedians.map((m) => round(m, 0)),
    maxWindowDeviation: round(spread),
    drift: round(drift),
    flat: spread <= 0.1,
    maxProcesses: Math.max(...samples.map((s) => s.processes)),
    samples: samples.map((s) => [round((s.t - start) / 1000, 2), round(s.mib, 0), s.processes]),
  };
}

/** Overload: `--burst` requests at once; past the queue, 503 with Retry-After, never a hang. */
async function overload(run: LoadRun): Promise<void> {
  const { client, images } = run;
  const { burst } = run.options;
  const t0 = performance.now();
  const burstItems = Array.from({ length: burst }, (_, i) => images[i % images.length]!);
  const outcomes = await Promise.all(burstItems.map((item) => client.post(item, false)));
  const seconds = (performance.now() - t0) / 1000;
  const s503 = outcomes.filter((o) => o.status === 503);
  const first503 = s503.length ? Math.min(...s503.map((o) => o.endedAt)) - t0 : null;
  const overload = {
    burst,
    seconds: round(seconds, 2),
    statuses: statusCounts(outcomes),
    status503: s503.length,
    status503WithRetryAfter: s503.filter((o) => o.retryAfter).length,
    status503WithoutRetryAfter: s503.filter((o) => !o.retryAfter).length,
    retryAfterValues: [...new Set(s503.map((o) => o.retryAfter).filter(Boolean))],
    firstStatus503Ms: first503 === null ? null : round(first503, 0),
    ...latencySummary(outcomes),
    errors: errorsOf(outcomes),
  };
  run.results.overload = overload;
  run.summaryRows.push([
    "overload",
    `${burst} at once: ${countsText(overload.statuses)}`,
    `503: ${overload.status503} (${overload.status503WithRetryAfter} with Retry-After${overload.retryAfterValues.length ? ` ${overload.retryAfterValues.join("/")}` : ""}, ${overload.status503WithoutRetryAfter} without)` +
      `; first 503 after ${first503 === null ? "-" : `${fmt(first503)} ms`}; all answered in ${fmt(seconds, 1)} s, 200s max ${fmt(overload.maxMs)} ms`,
  ]);
}

/** The server's own view at the end (newer builds report engine processes stopped, memory, the event loop). */
async function checkFinalHealth(run: LoadRun): Promise<void> {
  try {
    const response = await fetch(new URL("/api/health", run.url), { signal: AbortSignal.timeout(30_000) });
    const body = (await response.json()) as { engine?: { stopped?: Record<string, number> } };
    run.results.finalHealth = body;
    const stopped = body.engine?.stopped;
    if (stopped && Object.values(stopped).some((n) => n > 0))
      run.failures.push(`engine processes stopped: ${JSON.stringify(stopped)}`);
  } catch (error) {
    run.failures.push(`final health check failed: ${String(error)}`);
  }
}

/** The lines of the server's log worth a look (non-200 requests, errors, warnings), and whether it exited. */
function printServerLog(server: StandaloneServer): void {
  const interesting = server
    .log()
    .split("\n")
    .filter((l) =>
      /^api /.test(l) ? !/ status=200 /.test(l) : /error|warn|exited|overloaded|timeout|ECONN|heap|killed/i.test(l),
    );
  if (interesting.length) {
    console.log(
      `server log: ${interesting.length} lines of interest (non-200 requests, errors, warnings; ${server.logFile}), first ones:`,
    );
    for (const l of interesting.slice(0, 8)) console.log(`  ${l.slice(0, 240)}`);
  }
  if (!server.alive()) console.log("server: EXITED during the run");
}
/** Entry from bench/run.ts: prints setup errors as one line, exit code 2. */
export async function loadMain(argv: string[]): Promise<never> {
  try {
    await runLoad(argv);
    process.exit(0);
  } catch (error) {
    if (error instanceof BenchSetupError || (error as { code?: string }).code?.startsWith("ERR_PARSE_ARGS")) {
      console.error(`load: ${(error as Error).message}`);
      process.exit(2);
    }
    throw error;
  }
}
