import { existsSync } from "node:fs";
import path from "node:path";
import { createCanvas, GlobalFonts } from "@napi-rs/canvas";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { characterErrorRate } from "@/bench/metrics";
import { extractDocument, render } from "@/lib/ocr";
import { OcrPool } from "@/lib/ocr/pool/pool";
import { getEnv } from "@/lib/env";

// The second recognizer through the real engine processes: a page goes to PaddleOCR when Tesseract's confidence is
// under the threshold (raised here so that a clean test page qualifies), the JSON names the engine, and two
// processes wanting PaddleOCR at once take turns (the pool's heavy slot) rather than deadlocking.

const RECEIPT = [
  "FRESH MART SDN BHD",
  "Milk 1L          4.50",
  "Bread            3.20",
  "Eggs (10)        6.90",
  "TOTAL           14.60",
  "CASH            20.00",
  "CHANGE           5.40",
  "Thank you and see you again",
  "Goods sold are not returnable",
];

function receiptPng(shift: number): Uint8Array {
  const canvas = createCanvas(900, 660);
  const ctx = canvas.getContext("2d");
  ctx.fillStyle = "#ffffff";
  ctx.fillRect(0, 0, 900, 660);
  ctx.fillStyle = "#111111";
  ctx.font = '30px "Second Reading Mono"';
  RECEIPT.forEach((line, i) => ctx.fillText(line, 60 + shift, 70 + i * 62));
  return new Uint8Array(canvas.encodeSync("png"));
}

let both: OcrPool;
let tesseractOnly: OcrPool;
beforeAll(() => {
  GlobalFonts.registerFromPath(path.resolve("tests/fixtures/fonts/LiberationMono-Regular.ttf"), "Second Reading Mono");
  both = new OcrPool({
    size: 2,
    queueLimit: 16,
    maxJobsPerWorker: 50,
    createTimeoutMs: 60_000,
    engines: ["tesseract", "paddle"],
    secondReadingBelow: 101,
  });
  tesseractOnly = new OcrPool({
    size: 1,
    queueLimit: 16,
    maxJobsPerWorker: 50,
    createTimeoutMs: 60_000,
    engines: ["tesseract"],
    secondReadingBelow: 101,
  });
});
afterAll(async () => {
  await Promise.all([both.terminate(), tesseractOnly.terminate()]);
});

describe("second reading", () => {
  it("reads a page Tesseract was unsure of with PaddleOCR too, and names the engine kept", async () => {
    // Two pages at once on two processes: both want PaddleOCR, one waits for the other's turn.
    const [a, b] = await Promise.all(
      [0, 8].map((shift) =>
        extractDocument(receiptPng(shift), {
          env: getEnv(),
          pool: both,
          language: "eng",
          deadline: Date.now() + 170_000,
        }),
      ),
    );
    for (const doc of [a!, b!]) {
      expect(doc.pages[0]!.engine).toBe("paddle");
      expect(doc.pages[0]!.trace?.second).toBe("paddle");
      expect(characterErrorRate(render(doc, "text"), RECEIPT.join("\n"), true)).toBeLessThan(0.05);
      const json = JSON.parse(render(doc, "json")) as { pages: Array<{ engine?: string; blocks: unknown[] }> };
      expect(json.pages[0]!.engine).toBe("paddle");
      expect(json.pages[0]!.blocks.length).toBeGreaterThan(0);
    }
  });

  it("stays with Tesseract when OCR_ENGINES leaves PaddleOCR out, or the page is not English", async () => {
    const doc = await extractDocument(receiptPng(0), {
      env: getEnv(),
      pool: tesseractOnly,
      language: "eng",
      deadline: Date.now() + 170_000,
    });
    expect(doc.pages[0]!.engine).toBe("tesseract");
    expect(doc.pages[0]!.trace?.second).toBeUndefined();
    const french = await extractDocument(receiptPng(0), {
      env: getEnv(),
      pool: both,
      language: "fra",
      deadline: Date.now() + 170_000,
    });
    expect(french.pages[0]!.engine).toBe("tesseract");
  });

  it("answers with Tesseract's reading when too little time is left before the deadline for a second one", async () => {
    const doc = await extractDocument(receiptPng(0), {
      env: getEnv(),
      pool: both,
      language: "eng",
      deadline: Date.now() + 9_000,
    });
    expect(doc.pages[0]!.engine).toBe("tesseract");
    expect(characterErrorRate(render(doc, "text"), RECEIPT.join("\n"), true)).toBeLessThan(0.1);
  });
});

/** The team's copy of PP-OCRv6 tiny (never committed): CI points OCR_MODEL_DIR at it; a user's clone has none. */
const V6_DIR = process.env.OCR_MODEL_DIR ?? path.resolve("../shared/models/ppocr-v6-tiny");
const FRENCH = [
  "Le garçon a mangé une pêche à l'hôtel cet été,",
  "puis il est allé à la bibliothèque près du théâtre",
  "où sa sœur lisait déjà un roman très célèbre.",
  "Ils sont rentrés à pied après le dîner.",
];

function frenchPng(): Uint8Array {
  const canvas = createCanvas(1200, 400);
  const ctx = canvas.getContext("2d");
  ctx.fillStyle = "#ffffff";
  ctx.fillRect(0, 0, 1200, 400);
  ctx.fillStyle = "#111111";
  ctx.font = '32px "Second Reading Mono"';
  FRENCH.forEach((line, i) => ctx.fillText(line, 40, 70 + i * 70));
  return new Uint8Array(canvas.encodeSync("png"));
}

describe.runIf(existsSync(path.join(V6_DIR, "ppocrv6_tiny_dict.txt")))(
  "PaddleOCR first (PP-OCRv6, OCR_MODEL_DIR)",
  () => {
    it("reads a clean French page alone, accents kept, without a Tesseract pass", async () => {
      const v6 = new OcrPool({
        size: 1,
        queueLimit: 16,
        maxJobsPerWorker: 50,
        createTimeoutMs: 60_000,
        engines: ["tesseract", "paddle"],
        modelDir: V6_DIR,
        // PaddleOCR first is off by default (second-reading.ts's PADDLE_FIRST_SURE); at 90, as measured.
        paddleFirstSure: 90,
      });
      try {
        const doc = await extractDocument(frenchPng(), {
          env: getEnv(),
          pool: v6,
          language: "fra",
          deadline: Date.now() + 170_000,
        });
        const page = doc.pages[0]!;
        expect(page.engine).toBe("paddle");
        // Tesseract's pass leaves its page segmentation mode in the trace; PaddleOCR alone leaves none.
        expect(page.trace?.psm).toBeUndefined();
        const text = render(doc, "text");
        expect(text).toContain("garçon");
        expect(characterErrorRate(text, FRENCH.join("\n"), true)).toBeLessThan(0.05);
      } finally {
        await v6.terminate();
      }
    });
  },
);
