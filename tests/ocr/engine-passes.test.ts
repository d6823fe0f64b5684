import { afterAll, describe, expect, it } from "vitest";
import { characterErrorRate } from "@/bench/metrics";
import { PDFDocument, StandardFonts } from "pdf-lib";
import { extractDocument, render } from "@/lib/ocr";
import { OcrPool } from "@/lib/ocr/pool/pool";
import { TEXTS } from "@/scripts/make-fixtures";
import { createTestPool, degradedPrint, fixture } from "@/tests/support/ocr";
import { getEnv } from "@/lib/env";

const pools: OcrPool[] = [];
afterAll(async () => {
  await Promise.all(pools.map((p) => p.terminate()));
});

describe("blank pages", () => {
  it("a blank PDF page between a text page and a scan reads as empty text, the others as usual", async () => {
    const pdf = await PDFDocument.create();
    const font = await pdf.embedFont(StandardFonts.Helvetica);
    pdf
      .addPage([612, 792])
      .drawText("A page with a real text layer on it, long enough to count.", { x: 72, y: 700, size: 12, font });
    pdf.addPage([612, 792]); // blank
    const scan = await pdf.embedPng(fixture("paragraph.png"));
    pdf.addPage([612, 792]).drawImage(scan, { x: 36, y: 500, width: 540, height: 108 });
    const pool = createTestPool();
    pools.push(pool);
    const doc = await extractDocument(await pdf.save(), { env: getEnv(), pool });
    expect(doc.pages.map((p) => p.source)).toEqual(["text-layer", "text-layer", "ocr"]);
    expect(doc.pages[1]!.text).toBe("");
    expect(doc.pages[1]!.blocks).toEqual([]);
    expect(characterErrorRate(doc.pages[2]!.text, TEXTS.paragraph.join("\n"))).toBeLessThan(0.02);
    expect(render(doc, "text").split("\f")).toHaveLength(3);
  });
});

describe("a degraded print (faint, noisy, small, heavily compressed)", () => {
  it("is still read: low confidence triggers a second, larger reading and the better one is kept", async () => {
    const lines = ["TOTAL AMOUNT DUE 42.50", "PAID BY CARD 1234", "THANK YOU FOR SHOPPING"];
    const pool = createTestPool();
    pools.push(pool);
    const doc = await extractDocument(degradedPrint(lines), { env: getEnv(), pool });
    const page = doc.pages[0]!;
    expect(page.confidence).toBeLessThan(80);
    expect(page.trace?.passes).toBeGreaterThanOrEqual(2);
    expect(characterErrorRate(page.text, lines.join("\n"), true)).toBeLessThan(0.1);
  });
});
