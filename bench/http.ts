import fs from "node:fs/promises";
import { z } from "zod";
import { inLanes } from "../lib/async";
import { median, percentile } from "../tooling";
import { scoreText } from "./metrics";

interface HttpItem {
  file: string;
  name: string;
  truth: string;
}

interface HttpOptions {
  url: string;
  key: string;
  concurrency: number;
  json?: string;
}

const responseSchema = z.looseObject({
  extractedText: z.string().optional(),
  creditsUsed: z.number().optional(),
  error: z.object({ code: z.string() }).optional(),
});

/** Drive a running service: POST each document as base64 to /api/ocr/process with `concurrency` in flight. */
export async function runHttpBench(items: HttpItem[], options: HttpOptions): Promise<void> {
  const endpoint = new URL("/api/ocr/process", options.url).toString();
  const bodies = new Map<string, string>();
  for (const item of items) {
    bodies.set(item.name, JSON.stringify({ image: (await fs.readFile(item.file)).toString("base64") }));
  }
  const send = () => (item: HttpItem) =>
    fetch(endpoint, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": options.key },
      body: bodies.get(item.name)!,
    });
  const post = async (item: HttpItem) => {
    const t = performance.now();
    let response: Response;
    try {
      response = await send()(item);
    } catch (error) {
      // A keep-alive connection the server had already closed (EPIPE / ECONNRESET): once more on a new one.
      console.error(
        `${item.name}: ${error instanceof Error ? `${error.message} (${String((error.cause as Error | undefined)?.message ?? "")})` : String(error)}; retrying once`,
      );
      response = await send()(item);
    }
    const body = responseSchema.parse(await response.json());
    return { ms: performance.now() - t, status: response.status, body };
  };

  // Warm the service (workers, language data) before measuring.
  await post(items[0]!);
  const latencies: number[] = [];
  const single: Array<{ name: string; ms: number; cerFolded: number; status: number; pages: number }> = [];
  let failures = 0;
  for (const item of items) {
    const r = await post(item);
    latencies.push(r.ms);
    const text = r.body.extractedText ?? "";
    if (r.status !== 200) failures++;
    single.push({
      name: item.name,
      ms: r.ms,
      status: r.status,
      cerFolded: scoreText(text, item.truth).cerFolded,
      pages: r.body.creditsUsed ?? 0,
    });
  }
  const pages = single.reduce((a, r) => a + r.pages, 0);
  const started = performance.now();
  await inLanes(items, options.concurrency, async (item) => {
    const r = await post(item);
    if (r.status !== 200) failures++;
  });
  const seconds = (performance.now() - started) / 1000;
  const latencyMedianMs = median(latencies);
  const p90 = percentile(latencies, 90);
  for (const r of single)
    console.log(
      `${r.name.padEnd(50)} ${String(r.status).padStart(3)} ${r.cerFolded.toFixed(3)} ${r.ms.toFixed(0).padStart(6)} ms`,
    );
  const summary = {
    endpoint,
    documents: items.length,
    pages,
    failures,
    latencyMedianMs,
    latencyP90Ms: p90,
    pagesPerSecond: pages / seconds,
    concurrency: options.concurrency,
    meanCERFolded: single.reduce((a, r) => a + r.cerFolded, 0) / single.length,
  };
  console.log(
    `http       median ${latencyMedianMs.toFixed(0)} ms  p90 ${p90.toFixed(0)} ms (one at a time); ${summary.pagesPerSecond.toFixed(3)} pages/s with ${options.concurrency} in flight; mean CER cf ${summary.meanCERFolded.toFixed(3)}; ${failures} failures`,
  );
  if (options.json) await fs.writeFile(options.json, JSON.stringify({ summary, files: single }, null, 2));
}
