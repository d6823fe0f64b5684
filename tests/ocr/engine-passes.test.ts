import path from "node:path";
import { createCanvas, GlobalFonts } from "@napi-rs/canvas";
import { afterAll, describe, expect, it } from "vitest";
import { characterErrorRate } from "@/bench/metrics";
import { PDFDocument, StandardFonts } from "pdf-lib";
import { extractDocument, OcrPool, render } from "@/lib/ocr";
import { TEXTS } from "@/scripts/make-fixtures";
import { createTestPool, fixture } from "@/tests/support/ocr";

const pools: OcrPool[] = [];
afterAll(async () => {
  await Promise.all(pools.map((p) => p.terminate()));
});

describe("blank pages", () => {
  it("a blank PDF page between a text page and a scan reads as empty text, the others as usual", async () => {
    const pdf = await PDFDocument.create();
    const font = await pdf.embedFont(StandardFonts.Helvetica);
    pdf.addPage([612, 792]).drawText("A page with a real text layer on it, long enough to count.", { x: 72, y: 700, size: 12, font });
    pdf.addPage([612, 792]); // blank
    const scan = await pdf.embedPng(fixture("paragraph.png"));
    pdf.addPage([612, 792]).drawImage(scan, { x: 36, y: 500, width: 540, height: 108 });
    const pool = createTestPool();
    pools.push(pool);
    const doc = await extractDocument(await pdf.save(), { pool });
    expect(doc.pages.map((p) => p.source)).toEqual(["text-layer", "text-layer", "ocr"]);
    expect(doc.pages[1]!.text).toBe("");
    expect(doc.pages[1]!.blocks).toEqual([]);
    expect(characterErrorRate(doc.pages[2]!.text, TEXTS.paragraph.join("\n"))).toBeLessThan(0.02);
    expect(render(doc, "text").split("\f")).toHaveLength(3);
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
