import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { createCanvas, GlobalFonts } from "@napi-rs/canvas";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { characterErrorRate, wordF1 } from "@/bench/metrics";
import { loadPaddle, type PaddleReading, type PaddleRecognizer } from "@/lib/ocr/engine/paddle";
import { drawGrey, type GreyRaster } from "@/lib/ocr/engine/raster";
import { recognizerInUse, recognizerModel } from "@/lib/ocr/model/recognizer-model";

const LINES = [
  "Invoice 2024-117 for Acme Supplies Ltd.",
  "Total: $12.50 (incl. tax)",
  "Paid by card ending 4821 on 3 March.",
  "Thank you for shopping with us!",
];

/** Black text on white, `fontPx` high, one line every 2·`fontPx` from y = 60; optionally turned by `degrees`. */
function renderLines(lines: string[], width: number, height: number, fontPx: number, degrees = 0): GreyRaster {
  const canvas = createCanvas(width, height);
  const ctx = canvas.getContext("2d");
  ctx.fillStyle = "#ffffff";
  ctx.fillRect(0, 0, width, height);
  ctx.translate(width / 2, height / 2);
  ctx.rotate((degrees * Math.PI) / 180);
  ctx.translate(-width / 2, -height / 2);
  ctx.fillStyle = "#111111";
  ctx.font = `${fontPx}px "Paddle Test Sans"`;
  lines.forEach((line, i) => ctx.fillText(line, 40, 60 + i * fontPx * 2));
  return drawGrey(canvas, width, height);
}

function text(reading: PaddleReading): string {
  return reading.lines.map((line) => line.words.map((w) => w.text).join(" ")).join("\n");
}

let paddle: PaddleRecognizer;
beforeAll(async () => {
  GlobalFonts.registerFromPath(path.resolve("tests/fixtures/fonts/LiberationSans-Regular.ttf"), "Paddle Test Sans");
  paddle = await loadPaddle();
});
afterAll(async () => {
  await paddle.release();
});

describe("PaddleOCR recognizer", () => {
  it("reads a rendered English paragraph: words spaced, lines in order, boxes on the page, confidences 0–100", async () => {
    const raster = renderLines(LINES, 900, 300, 28);
    const reading = await paddle.read(raster);
    const got = text(reading);
    // Measured: CER 0 and word F1 1 (Liberation Sans 28 px); the bounds leave room for model or platform drift.
    expect(characterErrorRate(got, LINES.join("\n"), true)).toBeLessThan(0.05);
    expect(wordF1(got, LINES.join("\n"))).toBeGreaterThan(0.85);
    expect(reading.lines).toHaveLength(LINES.length);
    expect(reading.lines[1]!.words.map((w) => w.text)).toContain("$12.50");

    const words = reading.lines.flatMap((line) => line.words);
    for (const word of words) {
      const [x0, y0, x1, y1] = word.box;
      expect(x0).toBeGreaterThanOrEqual(0);
      expect(y0).toBeGreaterThanOrEqual(0);
      expect(x1).toBeLessThanOrEqual(raster.width);
      expect(y1).toBeLessThanOrEqual(raster.height);
      expect(x1).toBeGreaterThan(x0);
      expect(y1).toBeGreaterThan(y0);
      expect(word.confidence).toBeGreaterThanOrEqual(0);
      expect(word.confidence).toBeLessThanOrEqual(100);
    }
    expect(reading.confidence).toBeGreaterThan(50);
    expect(reading.confidence).toBeLessThanOrEqual(100);
    // Reading order: lines top to bottom, words left to right, each word box over its own line.
    reading.lines.forEach((line, i) => {
      const baseline = 60 + i * 56;
      for (const w of line.words) expect(w.box[1] < baseline && w.box[3] > baseline - 20).toBe(true);
      const xs = line.words.map((w) => w.box[0]);
      expect(xs).toEqual([...xs].sort((a, b) => a - b));
    });
    // The first word starts where it was drawn (x = 40), within a character.
    expect(Math.abs(reading.lines[0]!.words[0]!.box[0] - 40)).toBeLessThan(20);
  });

  it("reads the same page scanned at a slight angle", async () => {
    const reading = await paddle.read(renderLines(LINES, 900, 300, 28, 1.5));
    expect(characterErrorRate(text(reading), LINES.join("\n"), true)).toBeLessThan(0.05);
    expect(reading.lines).toHaveLength(LINES.length);
  });

  it("finds nothing on a blank page", async () => {
    const raster: GreyRaster = { width: 800, height: 600, data: new Uint8Array(800 * 600).fill(255) };
    const reading = await paddle.read(raster);
    expect(reading.lines).toEqual([]);
    expect(reading.confidence).toBe(0);
  });

  it("detects a tall page in strips: lines across the strips' seams are found once and read whole", async () => {
    // 1280 rows at the detector's scale: strips of 448 rows meet at rows 448 and 896. Each line's glyphs (32 px)
    // straddle a seam, or lie just above or below one.
    const canvas = createCanvas(900, 1280);
    const ctx = canvas.getContext("2d");
    ctx.fillStyle = "#ffffff";
    ctx.fillRect(0, 0, 900, 1280);
    ctx.fillStyle = "#111111";
    ctx.font = '32px "Paddle Test Sans"';
    const baselines = [120, 430, 462, 500, 880, 910, 1200];
    const lines = baselines.map((_, i) => LINES[i % LINES.length]!.replace(/\d/g, String(i)));
    lines.forEach((line, i) => ctx.fillText(line, 40, baselines[i]!));
    const reading = await paddle.read(drawGrey(canvas, 900, 1280));
    expect(reading.lines).toHaveLength(lines.length);
    expect(characterErrorRate(text(reading), lines.join("\n"), true)).toBeLessThan(0.05);
  });

  it("detects on a downscaled copy of a large page and still reads from full resolution", async () => {
    const raster = renderLines(LINES, 2400, 900, 28);
    const reading = await paddle.read(raster, { detectMaxSide: 1280 });
    expect(characterErrorRate(text(reading), LINES.join("\n"), true)).toBeLessThan(0.05);
    for (const word of reading.lines.flatMap((line) => line.words)) expect(word.box[2]).toBeLessThanOrEqual(2400);
  });

  it("keeps the words a caller already knows for a detected line and recognizes only the others", async () => {
    const raster = renderLines(LINES, 900, 300, 28);
    const seen: number[] = [];
    const reading = await paddle.read(raster, {
      known: (box) => {
        seen.push(box.cy);
        // The second line (baseline 116) is "known" with words of its own; the others are recognized.
        if (box.y0 > 80 && box.y1 < 140)
          return [{ text: "KNOWN", confidence: 97, box: [box.x0, box.y0, box.x1, box.y1] }];
        return undefined;
      },
    });
    expect(seen).toHaveLength(LINES.length);
    const lines = text(reading).split("\n");
    expect(lines[1]).toBe("KNOWN");
    expect(
      characterErrorRate([lines[0], lines[2], lines[3]].join("\n"), [LINES[0], LINES[2], LINES[3]].join("\n"), true),
    ).toBeLessThan(0.05);
  });
});

describe("the recognizer's model (OCR_MODEL_DIR)", () => {
  it("is the npm PP-OCRv4 fallback without a directory, or with one that holds no model (saying why)", () => {
    expect(recognizerModel().name).toBe("PP-OCRv4");
    expect(recognizerModel().latinAccents).toBe(false);
    const empty = mkdtempSync(path.join(os.tmpdir(), "ocr-models-"));
    try {
      const model = recognizerModel(empty);
      expect(model.name).toBe("PP-OCRv4");
      expect(model.note).toMatch(/holds no/);
      expect(recognizerInUse(["tesseract", "paddle"], empty)).toEqual({ name: "PP-OCRv4", note: model.note });
      expect(recognizerInUse(["tesseract"], empty)).toBeNull();
    } finally {
      rmSync(empty, { recursive: true });
    }
  });

  it("is the directory's recognizer, named from its file, with accents when it is not a v4 model", () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "ocr-models-"));
    try {
      writeFileSync(path.join(dir, "PP-OCRv6_tiny_rec_fp16.onnx"), "");
      writeFileSync(path.join(dir, "ppocrv6_tiny_dict.txt"), "a\n");
      const model = recognizerModel(dir);
      expect(model).toMatchObject({ name: "PP-OCRv6_tiny", latinAccents: true });
      expect(model.recognizer).toBe(path.join(dir, "PP-OCRv6_tiny_rec_fp16.onnx"));
      expect(recognizerInUse(["tesseract", "paddle"], dir)).toEqual({ name: "PP-OCRv6_tiny" });
    } finally {
      rmSync(dir, { recursive: true });
    }
  });
});

/** The team's copy of PP-OCRv6 tiny (never committed): CI points OCR_MODEL_DIR at it; a user's clone has none. */
const V6_DIR = process.env.OCR_MODEL_DIR ?? path.resolve("../shared/models/ppocr-v6-tiny");

describe.runIf(existsSync(path.join(V6_DIR, "ppocrv6_tiny_dict.txt")))("PP-OCRv6 tiny (OCR_MODEL_DIR)", () => {
  it("reads French with its accents, which the v4 fallback drops", async () => {
    const french = ["Le garçon a mangé à l'hôtel cet été.", "Où est la bibliothèque ? Très près."];
    const raster = renderLines(french, 900, 200, 28);
    const v6 = await loadPaddle(V6_DIR);
    try {
      expect(v6.name).toBe("PP-OCRv6_tiny");
      const got = text(await v6.read(raster));
      // Measured: CER 0 with PP-OCRv6 tiny; PP-OCRv4 reads "garcon", "mange", "hotel" (CER ~0.08).
      expect(characterErrorRate(got, french.join("\n"), true)).toBeLessThan(0.03);
      expect(got).toContain("garçon");
    } finally {
      await v6.release();
    }
  });
});
