// The costly reads of issue 29 (point 3), measured in process: `tsx --conditions=react-server bench/result-reads.ts`.
//
// A finished job whose text is about 4 MB (200 pages of ~20 KB, every word with its box, as the engine stores them)
// is made in the test Redis (REDIS_URL, default 127.0.0.1:6379, a key prefix of its own, deleted afterwards). Then:
// - `GET /api/ocr/jobs/{id}/result` (the route handler) five times in a row: the main thread's time per read (the
//   event loop is blocked while a read renders: its wall time with nothing else running);
// - a JSON-RPC batch of 30 `tasks/result` for that job to `/api/mcp`: status, the reads it counted, the answer's size,
//   its time, and the process's peak RSS while it ran (sampled every 20 ms);
// - `GET …/result?format=pdf` of a one-page job whose source is a PDF of `PDF_MB` (default 60) MB: per read, and 4 at
//   once.
import { randomBytes } from "node:crypto";
import { performance } from "node:perf_hooks";
import { PDFDocument } from "pdf-lib";
import { createTestPrefix, deleteKeysWithPrefix, TEST_REDIS_URL } from "@/tests/support/redis";

const prefix = createTestPrefix("result-reads");
Object.assign(process.env, {
  REDIS_URL: TEST_REDIS_URL,
  REDIS_PREFIX: prefix,
  LOG_REQUESTS: "false",
  JOBS_RUNNER: "off",
});
const { getStore } = await import("@/lib/store");
const { grantCredits } = await import("@/lib/credits");
const { createApiKey } = await import("@/lib/keys");
const { encodePage } = await import("@/lib/jobs/payload");
const resultRoute = await import("@/app/api/ocr/jobs/[id]/result/route");
const mcpRoute = await import("@/app/api/mcp/route");

const PAGES = Number(process.env.PAGES ?? 200);
const PDF_MB = Number(process.env.PDF_MB ?? 60);
const userId = `usr_bench${randomBytes(6).toString("hex")}`;
await grantCredits(getStore(), { userId, credits: 10_000 });
const { key } = await createApiKey(getStore(), { userId, name: "bench" });
const jobs = getStore().jobs;

function words(pageNumber: number) {
  const lines = [];
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
    lines.push({
      text: ws.map((word) => word.text).join(" "),
      confidence: 91.5,
      bbox: [0, l / 60, 1, l / 60 + 0.012] as [number, number, number, number],
      words: ws,
    });
  }
  return lines;
}

async function makeJob(pages: number, source: { bytes: Uint8Array; type: "pdf" | "png" }): Promise<string> {
  const jobId = `job_${randomBytes(16).toString("base64url")}`;
  const now = Date.now();
  const stored = await jobs.putSource(jobId, source.bytes, {
    chunkBytes: 4 * 1024 * 1024,
    pendingTtlMs: 3_600_000,
    userId,
    maxAccountBytes: Number.MAX_SAFE_INTEGER,
  });
  if (!stored.ok) throw new Error("the account's job files are full");
  const sourceChunks = stored.chunks;
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
      sourceChunks,
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
      day: new Date(now).toISOString().slice(0, 10),
      maxQueuedPages: 100_000,
      ttlMs: 3_600_000,
    },
  );
  if (!created.ok) throw new Error(`createJob: ${created.reason}`);
  await jobs.startJob(jobId, now);
  for (let start = 1; start <= pages; start += 20) {
    const batch = [];
    for (let n = start; n < Math.min(pages + 1, start + 20); n++) {
      const lines = words(n);
      const text = lines.map((line) => line.text).join("\n");
      const page = {
        number: n,
        width: 2480,
        height: 3508,
        source: "ocr" as const,
        engine: "tesseract" as const,
        rotation: 0 as const,
        skew: 0,
        confidence: 91.5,
        text,
        blocks: [{ text, confidence: 91.5, bbox: [0, 0, 1, 1] as [number, number, number, number], lines }],
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
    day: new Date().toISOString().slice(0, 10),
  });
  return jobId;
}

/** The wall time of `run`, and the main thread's busy time during it (event-loop utilization's active time). */
async function timed<T>(run: () => Promise<T>): Promise<[T, number, number]> {
  const started = performance.now();
  const loop = performance.eventLoopUtilization();
  const value = await run();
  return [value, Math.round(performance.now() - started), Math.round(performance.eventLoopUtilization(loop).active)];
}

function peakRss(): { stop: () => number } {
  let peak = process.memoryUsage.rss();
  const timer = setInterval(() => (peak = Math.max(peak, process.memoryUsage.rss())), 20);
  return {
    stop: () => {
      clearInterval(timer);
      return Math.round(Math.max(peak, process.memoryUsage.rss()) / 1024 / 1024);
    },
  };
}

const BASE = "http://localhost:3000";
const get = (path: string) => new Request(`${BASE}${path}`, { headers: { "x-api-key": key } });

try {
  const textJob = await makeJob(PAGES, { bytes: new Uint8Array(16), type: "png" });
  console.log(`text job: ${PAGES} pages`);
  for (let i = 0; i < 5; i++) {
    const [response, ms, busy] = await timed(async () => {
      const answer = await resultRoute.GET(get(`/api/ocr/jobs/${textJob}/result`));
      return { status: answer.status, bytes: (await answer.arrayBuffer()).byteLength };
    });
    console.log(
      `REST text read ${i + 1}: ${response.status}, ${(response.bytes / 1e6).toFixed(1)} MB, ${ms} ms (main thread busy ${busy} ms)`,
    );
  }

  const batch = Array.from({ length: 30 }, (_, i) => ({
    jsonrpc: "2.0",
    id: i + 1,
    method: "tasks/result",
    params: { taskId: textJob },
  }));
  const rss = peakRss();
  const before = Math.round(process.memoryUsage.rss() / 1024 / 1024);
  const [answer, ms, busy] = await timed(async () => {
    const response = await mcpRoute.POST(
      new Request(`${BASE}/api/mcp`, {
        method: "POST",
        headers: {
          "x-api-key": key,
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          "mcp-protocol-version": "2025-11-25",
        },
        body: JSON.stringify(batch),
      }),
    );
    return {
      status: response.status,
      remaining: response.headers.get("ratelimit-remaining"),
      bytes: (await response.arrayBuffer()).byteLength,
    };
  });
  console.log(
    `MCP batch of 30 tasks/result: ${answer.status}, RateLimit-Remaining ${answer.remaining}, ${(answer.bytes / 1e6).toFixed(1)} MB, ${ms} ms (main thread busy ${busy} ms), RSS ${before} → peak ${rss.stop()} MB`,
  );

  // A one-page job whose source is a big PDF: one page of text, then a large embedded stream as padding.
  const doc = await PDFDocument.create();
  doc.addPage([595, 842]).drawText("PDF SOURCE 42", { x: 50, y: 780, size: 20 });
  const padding = doc.context.flateStream(randomBytes(PDF_MB * 1024 * 1024), {});
  doc.context.register(padding);
  const pdfBytes = await doc.save({ useObjectStreams: false });
  const pdfJob = await makeJob(1, { bytes: pdfBytes, type: "pdf" });
  console.log(`pdf job: 1 page, source ${(pdfBytes.byteLength / 1e6).toFixed(1)} MB`);
  for (let i = 0; i < 3; i++) {
    const [response, ms, busy] = await timed(async () => {
      const answer = await resultRoute.GET(get(`/api/ocr/jobs/${pdfJob}/result?format=pdf`));
      return { status: answer.status, bytes: (await answer.arrayBuffer()).byteLength };
    });
    console.log(
      `REST pdf read ${i + 1}: ${response.status}, ${(response.bytes / 1e6).toFixed(2)} MB, ${ms} ms (main thread busy ${busy} ms)`,
    );
  }
  const parallel = peakRss();
  const [times, all] = await timed(() =>
    Promise.all(
      Array.from({ length: 4 }, async () => {
        const [status, ms] = await timed(async () => {
          const answer = await resultRoute.GET(get(`/api/ocr/jobs/${pdfJob}/result?format=pdf`));
          await answer.arrayBuffer();
          return answer.status;
        });
        return `${status} in ${ms} ms`;
      }),
    ),
  );
  console.log(`REST pdf, 4 at once: ${times.join(", ")} (all ${all} ms), peak RSS ${parallel.stop()} MB`);
} finally {
  await getStore().close();
  await deleteKeysWithPrefix(prefix);
}
process.exit(0);
