/**
 * npm run bench -- [folder or file ...] [options]
 *
 * Runs every image/PDF that has a `<name>.gt.txt` beside it through the OCR engine and prints accuracy
 * (CER / WER, plain and case-folded, order-free word F1), latency, throughput with 1 and N workers, cold
 * start and peak RSS, as a table and (with --json) as JSON.
 *
 *   --workers N       workers for the throughput pass (default: available cores)
 *   --baseline        also run tesseract.js with its defaults (one worker per core, raw files, PSM single block)
 *   --native          also run the tesseract CLI (OMP_THREAD_LIMIT=1, same traineddata, N processes) and pdftotext
 *   --long-pdf N      time a generated N-page born-digital PDF (default 120; 0 to skip)
 *   --long-pdf-from F build that PDF by repeating the pages of the born-digital PDF F instead (real fonts)
 *   --lang L          options.language for every file (default: the engine's default, auto)
 *   --filter S        only files whose path contains S
 *   --json FILE       write the results as JSON
 *   --review          precision and recall of the words marked `review` (bench/review.ts)
 *   --text-dir DIR    write each document's text output to DIR/<name>.txt (to read the errors behind a score)
 *   --http URL --key K [--concurrency C]   drive a running service instead of the engine (see docs/benchmark.md)
 *   --load [options]  load benchmark of the built server (bench/load.ts lists its options)
 *   --job [options]   asynchronous jobs against the synchronous path (bench/jobs.ts lists its options)
 *   --orientation [--before DIR]  pages turned 90/180/270 and skewed ±3/±7°, CER against upright; upright CPU against DIR
 *   --layouts         the generated layout suite (scripts/make-layouts.ts): order-sensitive CER per layout (bench/layouts.ts)
 *   --profile         CPU time per stage of every OCR page (1-worker pass), and its mean by corpus source
 *   --second-below N  the second reading's confidence threshold (default: the engine's): sweeps re-tune it
 */
import { execFile, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { parseArgs, promisify } from "node:util";
import { gunzipSync } from "node:zlib";
import { inLanes } from "../lib/async";
import { envSchema, getEnv } from "../lib/env";
import { documentConfidence, extractDocument, ocrSettings, render } from "../lib/ocr";
import { OcrPool } from "../lib/ocr/pool/pool";
import type { ExtractedDocument } from "../lib/ocr/model";
import { median, percentile } from "../tooling";
import { scoreText, type AccuracyScores } from "./metrics";
import { benchModelDir } from "./model-dir";
import { findCorpusFiles } from "./corpus";
import { makeTextPdf, repeatPdf } from "./long-pdf";
import { cpuDelta, cpuSnapshot, sampleTreeRss } from "./procfs";
import { formatProfiles, profileDocument, type PageProfile } from "./profile";
import { services } from "../lib/services";

/** Recognizers, as the service reads them (`OCR_ENGINES`, default tesseract and paddle). */
const ENGINES = envSchema.shape.OCR_ENGINES.parse(process.env.OCR_ENGINES);
/** PaddleOCR's recognizer: OCR_MODEL_DIR, else ../shared/models/ppocr-v6-tiny where it is (bench/model-dir.ts). */
const MODEL_DIR = benchModelDir();
/** `OCR_TESSERACT` (native libtesseract where it loads, or tesseract.js), as the service reads it. */
const TESSERACT = envSchema.shape.OCR_TESSERACT.parse(process.env.OCR_TESSERACT);
/** `ocrSettings().keepTesseractForPaddle` (off), or on with `--keep-tesseract` (docs/decisions.md#speed-profile). */
const KEEP_TESSERACT = process.argv.includes("--keep-tesseract") || ocrSettings().keepTesseractForPaddle;

const execFileAsync = promisify(execFile);
// bench/index.mjs runs a bundled copy of this file from node_modules/.cache and says where the repo is.
const ROOT = process.env.OCR_BENCH_ROOT ?? path.resolve(import.meta.dirname, "..");
const DEFAULT_CORPUS = path.resolve(ROOT, "../shared/corpus-dev");

interface Item {
  file: string;
  name: string;
  truth: string;
  /** The folder the file is in: the corpus source (sroie, funsd, scribe, …). */
  source: string;
}

interface FileResult extends AccuracyScores {
  name: string;
  trace: string;
  pages: number;
  sources: string;
  ms: number;
  confidence: number;
}

interface PassResult {
  pages: number;
  seconds: number;
  pagesPerSecond: number;
  /**
   * CPU seconds of the engine processes over the pass (user + system from /proc, every thread; processes replaced
   * during the pass included, their start too), after they were started and warmed: what the pages cost.
   */
  engineCpuSeconds?: number;
}

// --load: the load benchmark of the built standalone server; bench/load.ts parses its own options.
if (process.argv.includes("--load")) await (await import("./load")).loadMain(process.argv.slice(2));
// --job: asynchronous jobs against the synchronous path (bench/jobs.ts lists its options).
if (process.argv.includes("--job")) await (await import("./jobs")).jobsMain();
// --review: how well `review` marks the wrong words, against the corpus's ground truth (bench/review.ts).
if (process.argv.includes("--review")) {
  await (
    await import("./review")
  ).reviewMain(
    process.argv.slice(2),
    path.resolve(process.env.OCR_BENCH_ROOT ?? path.resolve(import.meta.dirname, ".."), "../shared/corpus-dev"),
  );
  process.exit(0);
}
// --orientation: the sample's pages turned and skewed, against the upright page (bench/orientation.ts).
if (process.argv.includes("--orientation")) {
  await (await import("./orientation")).orientationMain(process.argv.slice(2), ROOT);
  process.exit(0);
}
// --layouts: the generated layout suite, order-sensitive CER per page (bench/layouts.ts).
if (process.argv.includes("--layouts")) {
  await (await import("./layouts")).layoutsMain(process.argv.slice(2));
  process.exit(0);
}

const { values: args, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    workers: { type: "string" },
    baseline: { type: "boolean", default: false },
    native: { type: "boolean", default: false },
    "long-pdf": { type: "string", default: "120" },
    "long-pdf-from": { type: "string" },
    lang: { type: "string" },
    filter: { type: "string" },
    json: { type: "string" },
    "text-dir": { type: "string" },
    http: { type: "string" },
    key: { type: "string" },
    concurrency: { type: "string" },
    "cold-child": { type: "string" },
    profile: { type: "boolean", default: false },
    "keep-tesseract": { type: "boolean", default: false },
    "second-below": { type: "string" },
    "paddle-sure": { type: "string" },
  },
});

const workers = Number(args.workers ?? os.availableParallelism());

async function findItems(targets: string[]): Promise<Item[]> {
  const files = await findCorpusFiles(targets, args.filter);
  return Promise.all(
    files.map(async ({ file, truthFile }) => ({
      file,
      name: path.relative(process.cwd(), file),
      truth: await fs.readFile(truthFile, "utf8"),
      source: path.basename(path.dirname(file)),
    })),
  );
}

const mean = (values: number[]) => (values.length ? values.reduce((a, b) => a + b, 0) / values.length : 0);
const f3 = (v: number) => v.toFixed(3);

/** Run every item through a pool of `size` workers with `size` documents in flight. */
async function enginePass(
  items: Item[],
  size: number,
  onResult?: (item: Item, doc: ExtractedDocument, ms: number) => void | Promise<void>,
  profile = false,
): Promise<PassResult> {
  const pool = new OcrPool({
    size,
    queueLimit: 1000,
    maxJobsPerWorker: 200,
    createTimeoutMs: 60_000,
    engines: ENGINES,
    keepTesseract: KEEP_TESSERACT,
    tesseract: TESSERACT,
    ...(MODEL_DIR && { modelDir: MODEL_DIR }),
    ...(args["second-below"] !== undefined && { secondReadingBelow: Number(args["second-below"]) }),
    ...(args["paddle-sure"] !== undefined && { paddleFirstSure: Number(args["paddle-sure"]) }),
  });
  // Start every engine process before timing (process start and Tesseract's start are not a document's cost).
  await pool.warm({ ocr: size });
  let pages = 0;
  const started = performance.now();
  const cpuBefore = cpuSnapshot(process.pid);
  await inLanes(items, size, async (item) => {
    const bytes = new Uint8Array(await fs.readFile(item.file));
    const t = performance.now();
    const doc = await extractDocument(bytes, {
      env: getEnv(),
      pool,
      language: args.lang,
      deadline: Date.now() + 600_000,
      profile,
    });
    const ms = performance.now() - t;
    pages += doc.pages.length;
    await onResult?.(item, doc, ms);
  });
  const seconds = (performance.now() - started) / 1000;
  const cpuAfter = cpuSnapshot(process.pid);
  const engineCpuSeconds = cpuBefore && cpuAfter ? cpuDelta(cpuBefore, cpuAfter).descendantSeconds : NaN;
  const { recycled, stopped } = pool.stats();
  if (recycled + stopped.memory + stopped.work + stopped.crashed > 0) {
    console.log(
      `(${size} worker${size > 1 ? "s" : ""}: engine processes replaced ${recycled}× for memory kept after a job, stopped ${stopped.memory}× at the ceiling, ${stopped.work}× for a PDF's work budget, died ${stopped.crashed}×)`,
    );
  }
  await pool.terminate();
  return { pages, seconds, pagesPerSecond: pages / seconds, engineCpuSeconds };
}

/** A new process that reads one file: time from spawn to first result. */
async function coldStart(file: string): Promise<{ spawnToResultMs: number; inProcessMs: number }> {
  const started = performance.now();
  const child = spawn(process.execPath, [...process.execArgv, process.argv[1]!, "--cold-child", file], {
    stdio: ["ignore", "pipe", "inherit"],
    cwd: ROOT,
  });
  let out = "";
  child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
  await new Promise((resolve) => child.on("close", resolve));
  const spawnToResultMs = performance.now() - started;
  const line = out.trim().split("\n").pop() ?? "{}";
  const parsed = JSON.parse(line) as { inProcessMs?: number; resultAtMs?: number };
  return { spawnToResultMs: parsed.resultAtMs ?? spawnToResultMs, inProcessMs: parsed.inProcessMs ?? 0 };
}

async function coldChild(file: string): Promise<void> {
  const t = performance.now();
  const pool = new OcrPool({
    size: 1,
    queueLimit: 10,
    maxJobsPerWorker: 10,
    createTimeoutMs: 60_000,
    engines: ENGINES,
    keepTesseract: KEEP_TESSERACT,
    tesseract: TESSERACT,
    ...(MODEL_DIR && { modelDir: MODEL_DIR }),
  });
  await extractDocument(new Uint8Array(await fs.readFile(file)), { env: getEnv(), pool, language: args.lang });
  // performance.now() counts from process start (timeOrigin).
  console.log(JSON.stringify({ inProcessMs: performance.now() - t, resultAtMs: performance.now() }));
  await pool.terminate();
}

/** tesseract.js as a newcomer would use it: createWorker('eng'), raw file bytes, default PSM (single block). */
async function baselinePass(items: Item[], size: number, scores: Map<string, AccuracyScores>): Promise<PassResult> {
  const { createScheduler, createWorker } = await import("tesseract.js");
  // The baseline draws PDF pages in this process, with the engine's own pdf.js set-up, so only the recognizer differs.
  // eslint-disable-next-line no-restricted-syntax
  const { openPdf, getPdfPage, renderPdfPage } = await import("../lib/ocr/engine/pdf");
  const langPath = path.join(ROOT, "node_modules/@tesseract.js-data/eng/4.0.0_best_int");
  const scheduler = createScheduler();
  for (let i = 0; i < size; i++) {
    scheduler.addWorker(
      await createWorker("eng", 1, { langPath, gzip: true, cacheMethod: "none", errorHandler: () => {} }),
    );
  }
  // PDF pages are rendered (300 DPI PNG) up front: tesseract.js cannot read PDFs, and rendering is not its cost.
  const inputs = new Map<string, Buffer[]>();
  for (const item of items) {
    const bytes = await fs.readFile(item.file);
    if (item.file.toLowerCase().endsWith(".pdf")) {
      const handle = await openPdf(new Uint8Array(bytes));
      const pngs: Buffer[] = [];
      for (let n = 1; n <= handle.pageCount; n++)
        pngs.push((await renderPdfPage(await getPdfPage(handle, n))).toBuffer("image/png"));
      await handle.close();
      inputs.set(item.file, pngs);
    } else inputs.set(item.file, [bytes]);
  }
  const started = performance.now();
  let pages = 0;
  await Promise.all(
    items.map(async (item) => {
      const texts = await Promise.all(
        inputs.get(item.file)!.map(async (image) => (await scheduler.addJob("recognize", image)).data.text),
      );
      pages += texts.length;
      scores.set(item.name, scoreText(texts.join("\f"), item.truth));
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  await scheduler.terminate();
  return { pages, seconds, pagesPerSecond: pages / seconds };
}

/** The tesseract CLI on the image files with `size` processes, same LSTM data as ours. */
async function nativePass(
  items: Item[],
  size: number,
  scores: Map<string, AccuracyScores>,
): Promise<PassResult | null> {
  try {
    await execFileAsync("tesseract", ["--version"]);
  } catch {
    console.error("--native: tesseract CLI not found (apt-get install tesseract-ocr)");
    return null;
  }
  const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), "bench-tessdata-"));
  for (const lang of ["eng", "fra"]) {
    const gz = path.join(ROOT, `node_modules/@tesseract.js-data/${lang}/4.0.0_best_int/${lang}.traineddata.gz`);
    if (existsSync(gz))
      await fs.writeFile(path.join(dataDir, `${lang}.traineddata`), gunzipSync(await fs.readFile(gz)));
  }
  const images = items.filter((i) => !i.file.toLowerCase().endsWith(".pdf"));
  const started = performance.now();
  const cpuBefore = cpuSnapshot(process.pid);
  await inLanes(images, size, async (item) => {
    const { stdout } = await execFileAsync("tesseract", [item.file, "stdout", "--tessdata-dir", dataDir, "-l", "eng"], {
      env: { ...process.env, OMP_THREAD_LIMIT: "1" },
      maxBuffer: 64 * 1024 * 1024,
    });
    scores.set(item.name, scoreText(stdout, item.truth));
  });
  const seconds = (performance.now() - started) / 1000;
  const cpuAfter = cpuSnapshot(process.pid);
  await fs.rm(dataDir, { recursive: true, force: true });
  const engineCpuSeconds = cpuBefore && cpuAfter ? cpuDelta(cpuBefore, cpuAfter).descendantSeconds : undefined;
  return { pages: images.length, seconds, pagesPerSecond: images.length / seconds, engineCpuSeconds };
}

async function longPdfPass(pages: number): Promise<Record<string, number | string> | null> {
  if (pages <= 0) return null;
  const from = args["long-pdf-from"];
  const bytes = from ? await repeatPdf(await fs.readFile(from), pages) : await makeTextPdf(pages);
  const file = path.join(os.tmpdir(), `bench-long-${pages}.pdf`);
  await fs.writeFile(file, bytes);
  const runs: number[] = [];
  let chars = 0;
  for (let i = 0; i < 3; i++) {
    const t = performance.now();
    const doc = await extractDocument(new Uint8Array(bytes), {
      env: getEnv(),
      pool: services().pool,
      limits: { maxPdfPages: pages },
    });
    runs.push(performance.now() - t);
    chars = render(doc, "text").length;
  }
  const result: Record<string, number | string> = {
    source: from ? path.basename(from) : "generated",
    pages,
    chars,
    coldMs: Math.round(runs[0]!),
    warmMs: Math.round(Math.min(...runs.slice(1))),
  };
  try {
    const native: number[] = [];
    for (let i = 0; i < 3; i++) {
      const t = performance.now();
      await execFileAsync("pdftotext", [file, "/dev/null"]);
      native.push(performance.now() - t);
    }
    result.pdftotextMs = Math.round(Math.min(...native));
    result.ratioWarm = Number((Number(result.warmMs) / Number(result.pdftotextMs)).toFixed(2));
  } catch {
    result.pdftotextMs = "n/a (apt-get install poppler-utils)";
  }
  await fs.rm(file, { force: true });
  return result;
}

async function httpPass(items: Item[]): Promise<void> {
  const { runHttpBench } = await import("./http");
  await runHttpBench(items, {
    url: args.http!,
    key: args.key ?? process.env.OCR_API_KEY ?? "",
    concurrency: Number(args.concurrency ?? workers),
    json: args.json,
  });
}

async function main(): Promise<void> {
  if (args["cold-child"]) return coldChild(args["cold-child"]);
  const targets = positionals.length > 0 ? positionals : existsSync(DEFAULT_CORPUS) ? [DEFAULT_CORPUS] : [];
  if (targets.length === 0) {
    console.error("usage: npm run bench -- <folder with <name>.gt.txt beside each document> [options]");
    process.exit(2);
  }
  const items = await findItems(targets);
  if (items.length === 0) {
    console.error("No documents with a .gt.txt beside them were found.");
    process.exit(2);
  }
  if (args.http) return httpPass(items);

  console.log(
    `bench: ${items.length} documents, ${workers} workers, node ${process.version}, ${os.cpus().length} cpus, PaddleOCR recognizer ${MODEL_DIR ?? "PP-OCRv4 (npm)"}`,
  );
  // Cold start on the smallest image: the time to a first result that is not OCR itself.
  const sizes = await Promise.all(items.map(async (item) => ({ item, bytes: (await fs.stat(item.file)).size })));
  const images = sizes.filter(({ item }) => !item.file.toLowerCase().endsWith(".pdf"));
  const coldItem = (images.length ? images : sizes).sort((a, b) => a.bytes - b.bytes)[0]!.item;
  const cold = await coldStart(coldItem.file);

  const results: FileResult[] = [];
  // This process and its engine processes together (the engine runs in child processes).
  const memory = sampleTreeRss();
  const textDir = args["text-dir"];
  if (textDir) await fs.mkdir(textDir, { recursive: true });
  const profiles: PageProfile[] = [];
  const single = await enginePass(
    items,
    1,
    async (item, doc, ms) => {
      if (args.profile) profiles.push(...profileDocument(item.name, item.source, doc));
      const text = render(doc, "text");
      if (textDir) await fs.writeFile(path.join(textDir, `${path.basename(item.file)}.txt`), text);
      results.push({
        name: item.name,
        pages: doc.pages.length,
        sources: [...new Set(doc.pages.map((p) => p.source))].join("+"),
        ms,
        confidence: documentConfidence(doc),
        trace: doc.pages
          .filter((p) => p.trace)
          .map(
            (p) =>
              `p${p.number} s${p.trace!.scale} psm${p.trace!.psm} cov${p.trace!.coverage} ${p.trace!.langs} x${p.trace!.passes}` +
              `${p.trace!.second ? ` 2nd:${p.trace!.second}` : ""} c1:${p.trace!.firstConfidence ?? "-"} [${p.trace!.crop}]`,
          )
          .join("; "),
        ...scoreText(text, item.truth),
      });
    },
    args.profile,
  );
  const multi = workers > 1 ? await enginePass(items, workers) : single;
  const peakRssMiB = memory.stop();

  const baselineScores = new Map<string, AccuracyScores>();
  const baseline = args.baseline ? await baselinePass(items, workers, baselineScores) : null;
  const nativeScores = new Map<string, AccuracyScores>();
  const native = args.native ? await nativePass(items, workers, nativeScores) : null;
  const longPdf = await longPdfPass(Number(args["long-pdf"]));

  // Table
  const header = ["file", "pages", "source", "CER", "CERcf", "WER", "WERcf", "F1", "conf", "ms"];
  if (baseline) header.push("baseCERcf");
  if (native) header.push("natCERcf");
  const rows = results
    .sort((a, b) => a.name.localeCompare(b.name))
    .map((r) => {
      const row = [
        r.name,
        String(r.pages),
        r.sources,
        f3(r.cer),
        f3(r.cerFolded),
        f3(r.wer),
        f3(r.werFolded),
        f3(r.wordF1),
        r.confidence.toFixed(1),
        r.ms.toFixed(0),
      ];
      if (baseline) row.push(baselineScores.has(r.name) ? f3(baselineScores.get(r.name)!.cerFolded) : "-");
      if (native) row.push(nativeScores.has(r.name) ? f3(nativeScores.get(r.name)!.cerFolded) : "-");
      return row;
    });
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ");
  console.log(line(header));
  for (const row of rows) console.log(line(row));
  if (process.env.BENCH_TRACE) for (const r of results) console.log(`  ${r.name}: ${r.trace}`);
  if (args.profile) console.log(`\n${formatProfiles(profiles)}\n`);

  const latencies = results.map((r) => r.ms);
  const summary = {
    documents: results.length,
    pages: single.pages,
    meanCER: mean(results.map((r) => r.cer)),
    meanCERFolded: mean(results.map((r) => r.cerFolded)),
    meanWER: mean(results.map((r) => r.wer)),
    meanWERFolded: mean(results.map((r) => r.werFolded)),
    meanWordF1: mean(results.map((r) => r.wordF1)),
    latencyMedianMs: median(latencies),
    latencyP90Ms: percentile(latencies, 90),
    pagesPerSecond1: single.pagesPerSecond,
    pagesPerSecondN: multi.pagesPerSecond,
    engineCpuSecondsPerPage1: (single.engineCpuSeconds ?? NaN) / single.pages,
    engineCpuSecondsPerPageN: (multi.engineCpuSeconds ?? NaN) / multi.pages,
    workers,
    coldStartFile: coldItem.name,
    coldStartMs: cold.spawnToResultMs,
    coldStartInProcessMs: cold.inProcessMs,
    peakRssMiB,
    baseline: baseline
      ? {
          meanCERFolded: mean([...baselineScores.values()].map((s) => s.cerFolded)),
          meanWordF1: mean([...baselineScores.values()].map((s) => s.wordF1)),
          pagesPerSecond: baseline.pagesPerSecond,
        }
      : undefined,
    native: native
      ? {
          imagesOnly: true,
          meanCERFolded: mean([...nativeScores.values()].map((s) => s.cerFolded)),
          oursMeanCERFoldedSameFiles: mean(results.filter((r) => nativeScores.has(r.name)).map((r) => r.cerFolded)),
          pagesPerSecond: native.pagesPerSecond,
          cpuSecondsPerPage: (native.engineCpuSeconds ?? NaN) / native.pages,
        }
      : undefined,
    longPdf,
    profile: args.profile
      ? {
          pages: profiles.length,
          cpuSecondsPerPage: mean(profiles.map((p) => (p.profile.total ?? 0) / 1000)),
          engineCpuSecondsPerPage:
            mean(profiles.map((p) => (p.profile.total ?? 0) - (p.profile.tables ?? 0) - (p.profile.render ?? 0))) /
            1000,
        }
      : undefined,
  };

  console.log("");
  console.log(
    `accuracy   mean CER ${f3(summary.meanCER)}  case-folded ${f3(summary.meanCERFolded)}  WER ${f3(summary.meanWER)} (cf ${f3(summary.meanWERFolded)})  word F1 ${f3(summary.meanWordF1)}`,
  );
  const bySource = new Map<string, FileResult[]>();
  for (const r of results) {
    const source = path.basename(path.dirname(r.name));
    bySource.set(source, [...(bySource.get(source) ?? []), r]);
  }
  console.log(
    `by source  ${[...bySource]
      .map(([source, rs]) => `${source} ${f3(mean(rs.map((r) => r.cerFolded)))} / ${f3(mean(rs.map((r) => r.wordF1)))}`)
      .join(", ")} (case-folded CER / word F1)`,
  );
  console.log(
    `latency    median ${summary.latencyMedianMs.toFixed(0)} ms  p90 ${summary.latencyP90Ms.toFixed(0)} ms (1 worker, per document)`,
  );
  console.log(
    `throughput ${summary.pagesPerSecond1.toFixed(3)} pages/s with 1 worker, ${summary.pagesPerSecondN.toFixed(3)} pages/s with ${workers}`,
  );
  console.log(
    `engine cpu ${summary.engineCpuSecondsPerPage1.toFixed(3)} s per page with 1 worker, ${summary.engineCpuSecondsPerPageN.toFixed(3)} with ${workers} (all pages; engine processes from /proc)`,
  );
  console.log(
    `cold start ${summary.coldStartMs.toFixed(0)} ms from process start to first result (${summary.coldStartInProcessMs.toFixed(0)} ms after import), on ${path.basename(coldItem.file)}`,
  );
  console.log(`memory     peak RSS ${summary.peakRssMiB.toFixed(0)} MiB`);
  if (summary.profile) {
    const p = summary.profile;
    console.log(
      `cpu        ${p.cpuSecondsPerPage.toFixed(3)} s per OCR page (${p.pages} pages; engine ${p.engineCpuSecondsPerPage.toFixed(3)} s)`,
    );
  }
  if (summary.baseline && baseline) {
    const b = summary.baseline;
    console.log(
      `baseline   tesseract.js defaults: mean CER cf ${f3(b.meanCERFolded)}, F1 ${f3(b.meanWordF1)}, ${b.pagesPerSecond.toFixed(3)} pages/s with ${workers} workers` +
        ` → ours: CER ${((1 - summary.meanCERFolded / b.meanCERFolded) * 100).toFixed(0)}% lower, throughput ×${(summary.pagesPerSecondN / b.pagesPerSecond).toFixed(2)}`,
    );
  }
  if (summary.native) {
    const n = summary.native;
    // Native reads images only: compare throughput on the same files.
    const ours = await enginePass(
      items.filter((i) => !i.file.toLowerCase().endsWith(".pdf")),
      workers,
    );
    const oursImagesPps = ours.pagesPerSecond;
    const oursCpu = (ours.engineCpuSeconds ?? NaN) / ours.pages;
    console.log(
      `native     tesseract CLI ×${workers} processes (images only): mean CER cf ${f3(n.meanCERFolded)} (ours on the same files ${f3(n.oursMeanCERFoldedSameFiles)}), ${n.pagesPerSecond.toFixed(3)} pages/s` +
        ` → ours ${oursImagesPps.toFixed(3)} pages/s, ratio ${(oursImagesPps / n.pagesPerSecond).toFixed(2)}; CPU per image ${n.cpuSecondsPerPage.toFixed(3)} s native, ${oursCpu.toFixed(3)} s ours (ratio ${(n.cpuSecondsPerPage / oursCpu).toFixed(2)})`,
    );
    Object.assign(summary.native, { oursPagesPerSecondSameFiles: oursImagesPps });
  }
  if (longPdf) console.log(`long pdf   ${JSON.stringify(longPdf)}`);
  if (args.json) {
    await fs.writeFile(
      args.json,
      JSON.stringify(
        {
          summary,
          files: results,
          profiles,
          baseline: Object.fromEntries(baselineScores),
          native: Object.fromEntries(nativeScores),
        },
        null,
        2,
      ),
    );
    console.log(`wrote ${args.json}`);
  }
}

await main();
