// What reads of an ended job make Redis keep, and what they cost the server (issue 39 points 11 and 14), on a built
// server: `SERVER_DIR=/path/to/checkout npx tsx --conditions=react-server bench/kept-bytes.ts` starts that checkout's
// `.next/standalone` on the test Redis (REDIS_URL, default 127.0.0.1:6379) under a prefix of its own (deleted at the
// end), with MAX_JOB_URL_BYTES=25000000 (so the account's cap is 50 MB), and (ONLY=pdf: the second only)
// - makes an ended text job of PAGES (default 200) pages of ~20 KB of boxed words (≈ 4 MB of text) in the store, then
//   reads it READS (default 60) times, each a page subset of its own (`pages=1-141` … `1-200`): Redis bytes kept for
//   the job's renderings and `used_memory` before/after, the server's peak RSS;
// - makes an ended 8-page job whose source PDF is PDF_MB (default 40) MB (each page drawing an image of an eighth of
//   it) and reads 4 page subsets of it as `format=pdf` at once: each read's time, the server's peak RSS, Redis bytes
//   kept, the server's main-thread and other threads' CPU seconds, the longest `/api/health` answer meanwhile.
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { performance } from "node:perf_hooks";
import path from "node:path";
import { PDFDocument } from "pdf-lib";
import { createClient } from "redis";
import { startStandalone } from "../tooling";
import { cpuDelta, cpuSnapshot } from "./procfs";

const REDIS_URL = process.env.REDIS_URL || "redis://127.0.0.1:6379";
const SERVER_DIR = path.resolve(process.env.SERVER_DIR ?? ".");
const prefix = `ocr:bench-kept:${randomBytes(5).toString("hex")}:`;
Object.assign(process.env, { REDIS_URL, REDIS_PREFIX: prefix, LOG_REQUESTS: "false", JOBS_RUNNER: "off" });
const { getStore } = await import("@/lib/store");
const { grantCredits } = await import("@/lib/credits");
const { createApiKey } = await import("@/lib/keys");
const { encodePage } = await import("@/lib/jobs/payload");

const PAGES = Number(process.env.PAGES ?? 200);
const READS = Number(process.env.READS ?? 60);
const PDF_MB = Number(process.env.PDF_MB ?? 40);
const MiB = 1024 * 1024;

const redis = createClient({ url: REDIS_URL, RESP: 2 });
await redis.connect();
const userId = `usr_bench${randomBytes(6).toString("hex")}`;
await grantCredits(getStore(), { userId, credits: 10_000 });
const { key } = await createApiKey(getStore(), { userId, name: "bench" });
const jobs = getStore().jobs;

function lines(pageNumber: number) {
  const out = [];
  for (let l = 0; l < 60; l++) {
    const ws = [];
    for (let w = 0; w < 50; w++) {
      const x = w / 50;
      const y = l / 60;
      ws.push({
        text: `w${pageNumber}x${l}y${w}`,
        confidence: 91.5,
        bbox: [x, y, x + 0.018, y + 0.012] as [number, number, number, number],
      });
    }
    out.push({
      text: ws.map((word) => word.text).join(" "),
      confidence: 91.5,
      bbox: [0, l / 60, 1, l / 60 + 0.012] as [number, number, number, number],
      words: ws,
    });
  }
  return out;
}

async function makeJob(pages: number, source: { bytes: Uint8Array; type: "pdf" | "png" }): Promise<string> {
  const jobId = `job_${randomBytes(16).toString("base64url")}`;
  const now = Date.now();
  const stored = await jobs.putSource(jobId, source.bytes, {
    chunkBytes: 4 * MiB - 1024,
    pendingTtlMs: 3_600_000,
    userId,
    maxAccountBytes: Number.MAX_SAFE_INTEGER,
  });
  if (!stored.ok) throw new Error("the account's job files are full");
  const day = new Date(now).toISOString().slice(0, 10);
  const created = await jobs.createJob(
    {
      id: jobId,
      userId,
      requestId: jobId,
      createdAt: now,
      deadline: now + 3_600_000,
      expiresAt: now + 7_200_000,
      fileType: source.type,
      inputSource: "base64",
      bytes: source.bytes.byteLength,
      sourceChunks: stored.chunks,
      pageCount: pages,
      selection: `1-${pages}`,
      pagesTotal: pages,
      creditsReserved: pages,
      format: "text",
      language: "eng",
    },
    {
      entry: {
        id: `led_${randomBytes(8).toString("hex")}`,
        at: new Date(now).toISOString(),
        reason: "ocr",
        requestId: jobId,
      },
      day,
      maxQueuedPages: 100_000,
      ttlMs: 3_600_000,
    },
  );
  if (!created.ok) throw new Error(`createJob: ${created.reason}`);
  for (let start = 1; start <= pages; start += 20) {
    const batch = [];
    for (let n = start; n < Math.min(pages + 1, start + 20); n++) {
      const ls = lines(n);
      const text = ls.map((line) => line.text).join("\n");
      const page = {
        number: n,
        width: 595,
        height: 842,
        source: "ocr" as const,
        engine: "tesseract" as const,
        rotation: 0 as const,
        skew: 0,
        confidence: 91.5,
        text,
        blocks: [{ text, confidence: 91.5, bbox: [0, 0, 1, 1] as [number, number, number, number], lines: ls }],
        lineStyles: [],
      };
      batch.push({
        page: n,
        payload: encodePage({ page, language: { langs: ["eng"], auto: false }, readBy: "bench", ms: 1 }),
      });
    }
    await jobs.storePages(jobId, batch, Date.now());
  }
  await jobs.endJob(jobId, {
    end: "finish",
    now: Date.now(),
    resultTtlMs: 3_600_000,
    entry: {
      id: `led_${randomBytes(8).toString("hex")}`,
      at: new Date().toISOString(),
      reason: "refund",
      requestId: jobId,
    },
    day,
  });
  return jobId;
}

/** Bytes Redis holds for a job's kept renderings, and how many renderings. */
async function kept(jobId: string): Promise<{ mb: number; renderings: number }> {
  let bytes = 0;
  let renderings = 0;
  for await (const keys of redis.scanIterator({ MATCH: `${prefix}job:${jobId}:render:*`, COUNT: 1000 }))
    for (const name of keys) {
      bytes += await redis.strLen(name);
      if (!/:\d+$/.test(name)) renderings++;
    }
  return { mb: Math.round(bytes / 1e5) / 10, renderings };
}

async function usedMemoryMb(): Promise<number> {
  return Math.round(Number((await redis.info("memory")).match(/^used_memory:(\d+)/m)![1]) / 1e5) / 10;
}

/** The server process's RSS in MiB, sampled every 25 ms until stopped: its peak. */
function peakRss(pid: number): { stop: () => number } {
  const rss = () => Number(/^VmRSS:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]) / 1024;
  let peak = rss();
  const timer = setInterval(() => (peak = Math.max(peak, rss())), 25);
  return {
    stop: () => {
      clearInterval(timer);
      return Math.round(Math.max(peak, rss()));
    },
  };
}

const server = await startStandalone({
  serverDir: SERVER_DIR,
  redisUrl: REDIS_URL,
  prefix,
  label: "bench-kept-",
  env: { JOBS_RUNNER: "off", LOG_REQUESTS: "false", MAX_JOB_URL_BYTES: "25000000", RATE_LIMIT_PER_MINUTE: "100000" },
});
const get = (p: string) => fetch(`${server.url}${p}`, { headers: { "x-api-key": key } });

try {
  console.log(`server: ${SERVER_DIR} (pid ${server.pid}); account cap 50 MB`);
  if (process.env.ONLY !== "pdf") await textReads();
  await pdfReads();
} finally {
  await server.stop();
  await getStore().close();
  let deleted = 0;
  for await (const keys of redis.scanIterator({ MATCH: `${prefix}*`, COUNT: 1000 }))
    if (keys.length > 0) deleted += await redis.del(keys);
  console.log(`deleted ${deleted} keys under ${prefix}`);
  redis.destroy();
}
process.exit(0);

async function textReads(): Promise<void> {
  const textJob = await makeJob(PAGES, { bytes: new Uint8Array(16), type: "png" });
  const usedBefore = await usedMemoryMb();
  const rss = peakRss(server.pid);
  const rssBefore = rss.stop();
  const textRss = peakRss(server.pid);
  const started = performance.now();
  const statuses = new Map<number, number>();
  for (let i = 0; i < READS; i++) {
    const last = PAGES - READS + 1 + i;
    const answer = await get(`/api/ocr/jobs/${textJob}/result?pages=1-${last}`);
    await answer.arrayBuffer();
    statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
  }
  const textMs = Math.round(performance.now() - started);
  const textKept = await kept(textJob);
  const usedAfter = await usedMemoryMb();
  console.log(
    `text job ${PAGES} pages, ${READS} reads of distinct page subsets: ${JSON.stringify(Object.fromEntries(statuses))} in ${textMs} ms; ` +
      `renderings kept ${textKept.renderings} = ${textKept.mb} MB (${(textKept.mb / READS).toFixed(2)} MB per read); ` +
      `Redis used_memory ${usedBefore} → ${usedAfter} MB; server RSS ${rssBefore} → peak ${textRss.stop()} MiB`,
  );
}

async function pdfReads(): Promise<void> {
  // Eight pages, each drawing an image of PDF_MB / 8 MB (incompressible), as a scan's pages do: a page subset's PDF
  // copies its pages' images.
  const doc = await PDFDocument.create();
  for (let n = 1; n <= 8; n++) {
    const page = doc.addPage([595, 842]);
    page.drawText(`PDF PAGE ${n}`, { x: 50, y: 780, size: 20 });
    const image = doc.context.flateStream(randomBytes(Math.round((PDF_MB * MiB) / 8)), {
      Type: "XObject",
      Subtype: "Image",
      Width: 1000,
      Height: 1000,
      ColorSpace: "DeviceGray",
      BitsPerComponent: 8,
    });
    page.node.newXObject("Im", doc.context.register(image));
  }
  const pdfBytes = await doc.save({ useObjectStreams: false });
  const pdfJob = await makeJob(8, { bytes: pdfBytes, type: "pdf" });
  const pdfRss = peakRss(server.pid);
  const pdfBefore = Math.round(
    Number(/^VmRSS:\s+(\d+)/m.exec(readFileSync(`/proc/${server.pid}/status`, "utf8"))![1]) / 1024,
  );
  // The server's main thread meanwhile: its CPU seconds, and the longest `/api/health` answer (another tenant's wait).
  const cpuBefore = cpuSnapshot(server.pid);
  let reading = true;
  let longestHealth = 0;
  const health = (async () => {
    while (reading) {
      const t = performance.now();
      await fetch(`${server.url}/api/health`)
        .then((answer) => answer.arrayBuffer())
        .catch(() => undefined);
      longestHealth = Math.max(longestHealth, performance.now() - t);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  })();
  const startedPdf = performance.now();
  const times = await Promise.all(
    ["1-2", "3-4", "5-6", "7-8"].map(async (pages) => {
      const t = performance.now();
      const answer = await get(`/api/ocr/jobs/${pdfJob}/result?format=pdf&pages=${pages}`);
      const bytes = (await answer.arrayBuffer()).byteLength;
      return `${pages}: ${answer.status} ${(bytes / 1e6).toFixed(1)} MB in ${Math.round(performance.now() - t)} ms`;
    }),
  );
  const allMs = Math.round(performance.now() - startedPdf);
  reading = false;
  await health;
  const cpuAfter = cpuSnapshot(server.pid);
  const cpu = cpuBefore && cpuAfter ? cpuDelta(cpuBefore, cpuAfter) : undefined;
  const pdfKept = await kept(pdfJob);
  console.log(
    `pdf job 8 pages, source ${(pdfBytes.byteLength / 1e6).toFixed(1)} MB, 4 page subsets at once: ${times.join("; ")} ` +
      `(all ${allMs} ms); server RSS ${pdfBefore} → peak ${pdfRss.stop()} MiB; ` +
      `renderings kept ${pdfKept.renderings} = ${pdfKept.mb} MB; server CPU s: main thread ` +
      `${cpu?.mainThreadSeconds.toFixed(2)}, other threads ${cpu?.otherThreadsSeconds.toFixed(2)}; ` +
      `longest /api/health meanwhile ${Math.round(longestHealth)} ms`,
  );
}
