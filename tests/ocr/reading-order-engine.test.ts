import { afterAll, describe, expect, it } from "vitest";
import { characterErrorRate } from "@/bench/metrics";
import { extractDocument, render } from "@/lib/ocr";
import { loadPaddle } from "@/lib/ocr/engine/paddle";
import { decodeImage, releaseSource } from "@/lib/ocr/engine/raster";
import { orderReading } from "@/lib/ocr/engine/reading-order";
import { prepareRaster } from "@/lib/ocr/engine/recognize";
import { paddlePageReading } from "@/lib/ocr/engine/second-reading";
import { createTestPool } from "@/tests/support/ocr";
import { TABLE_ROWS, tablePage, TWO_COLUMN_ACROSS, TWO_COLUMN_TEXT, twoColumnPage } from "@/tests/support/layout";
import { getEnv } from "@/lib/env";

// Reading order on generated pages, whichever recognizer read them: two columns of running text under a title, their
// lines standing in the same rows (Tesseract ran each row across both columns: CER 0.65 before the reading-order step,
// every word right), and a table read row by row.

const pool = createTestPool();
afterAll(() => pool.terminate());

describe("reading order", () => {
  it("Tesseract's reading of a two-column page comes out column by column", async () => {
    const text = render(await extractDocument(twoColumnPage(), { env: getEnv(), pool }), "text");
    expect(characterErrorRate(text, TWO_COLUMN_TEXT)).toBeLessThan(0.02);
    expect(characterErrorRate(text, TWO_COLUMN_ACROSS)).toBeGreaterThan(0.3);
  });

  it("PaddleOCR's reading of the same page too (its boxes, ordered by the same step)", async () => {
    const image = await decodeImage(twoColumnPage(), "png", 50_000_000);
    const recognizer = await loadPaddle();
    try {
      const prepared = prepareRaster(image.source, image.width, image.height);
      const reading = await recognizer.read(prepared.raster);
      const { page } = paddlePageReading(reading, prepared, 1);
      const text = orderReading(page).text;
      expect(characterErrorRate(text, TWO_COLUMN_TEXT, true)).toBeLessThan(0.06);
      expect(characterErrorRate(text, TWO_COLUMN_ACROSS, true)).toBeGreaterThan(0.3);
    } finally {
      await recognizer.release();
      releaseSource(image.source);
    }
  });

  it("a table reads row by row, each row one line", async () => {
    const doc = await extractDocument(tablePage(), { env: getEnv(), pool });
    const lines = doc.pages[0]!.blocks.flatMap((b) => b.lines.map((l) => l.text));
    expect(lines).toEqual(TABLE_ROWS.map((row) => row.join(" ")));
  });
});
