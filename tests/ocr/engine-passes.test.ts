import path from "node:path";
import { createCanvas, GlobalFonts } from "@napi-rs/canvas";
import { afterAll, describe, expect, it } from "vitest";
import { characterErrorRate } from "@/bench/metrics";
import { makeTextPdf } from "@/bench/long-pdf";
import { extractDocument, OcrPool, render } from "@/lib/ocr";
import { PARALLEL_TEXT_MIN_PAGES } from "@/lib/ocr/pdf-text-workers";
import { createTestPool } from "@/tests/support/ocr";

const pools: OcrPool[] = [];
afterAll(async () => {
  await Promise.all(pools.map((p) => p.terminate()));
});

describe("long PDFs: text layers read on several threads", () => {
  it("gives exactly the document the calling thread gives", async () => {
    const pages = PARALLEL_TEXT_MIN_PAGES + 6;
    const bytes = await makeTextPdf(pages);
    // Two workers engage the threads; one keeps everything on the calling thread.
    const two = new OcrPool({ size: 2, queueLimit: 4, maxJobsPerWorker: 10, createTimeoutMs: 60_000 });
    const one = new OcrPool({ size: 1, queueLimit: 4, maxJobsPerWorker: 10, createTimeoutMs: 60_000 });
    pools.push(two, one);
    const limits = { maxPdfPages: pages };
    const threaded = await extractDocument(bytes, { pool: two, limits });
    const local = await extractDocument(bytes, { pool: one, limits });
    expect(threaded.pages).toHaveLength(pages);
    expect(threaded.pages.every((p) => p.source === "text-layer")).toBe(true);
    expect(render(threaded, "json")).toBe(render(local, "json"));
    expect(render(threaded, "markdown")).toBe(render(local, "markdown"));
    // A page selection keeps its order and numbers.
    const some = await extractDocument(bytes, { pool: two, limits, pages: `2-${PARALLEL_TEXT_MIN_PAGES + 2}` });
    expect(some.pages.map((p) => p.number)).toEqual(Array.from({ length: PARALLEL_TEXT_MIN_PAGES + 1 }, (_, i) => i + 2));
  });
});

describe("a degraded print (faint, noisy, small, heavily compressed)", () => {
  it("is still read: low confidence triggers a second, larger reading and the better one is kept", async () => {
    GlobalFonts.registerFromPath(path.resolve("tests/fixtures/fonts/LiberationSans-Regular.ttf"), "Degraded Sans");
    const lines = ["TOTAL AMOUNT DUE 42.50", "PAID BY CARD 1234", "THANK YOU FOR SHOPPING"];
    const canvas = createCanvas(560, 150);
    const ctx = canvas.getContext("2d");
    ctx.fillStyle = "#d8d8d8";
    ctx.fillRect(0, 0, 560, 150);
    ctx.fillStyle = "#8a8a8a";
    ctx.font = '16px "Degraded Sans"';
    lines.forEach((line, i) => ctx.fillText(line, 12, 35 + i * 40));
    const pixels = ctx.getImageData(0, 0, 560, 150);
    let seed = 42;
    for (let i = 0; i < pixels.data.length; i += 4) {
      seed = (seed * 1664525 + 1013904223) >>> 0;
      const noise = ((seed >>> 24) / 255 - 0.5) * 30;
      for (let c = 0; c < 3; c++) pixels.data[i + c] = Math.max(0, Math.min(255, pixels.data[i + c]! + noise));
    }
    ctx.putImageData(pixels, 0, 0);
    const small = createCanvas(336, 90);
    small.getContext("2d").drawImage(canvas, 0, 0, 336, 90);
    const pool = createTestPool();
    pools.push(pool);
    const doc = await extractDocument(small.toBuffer("image/jpeg", 45), { pool });
    const page = doc.pages[0]!;
    expect(page.confidence).toBeLessThan(80);
    expect(page.trace?.passes).toBeGreaterThanOrEqual(2);
    expect(characterErrorRate(page.text, lines.join("\n"), true)).toBeLessThan(0.1);
  });
});
