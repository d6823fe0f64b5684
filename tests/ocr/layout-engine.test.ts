import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { characterErrorRate } from "@/bench/metrics";
import { LAYOUT_CER_TARGET } from "@/bench/layouts";
import { extractDocument, render } from "@/lib/ocr";
import { loadPaddle } from "@/lib/ocr/engine/paddle";
import { decodeImage, releaseSource } from "@/lib/ocr/engine/raster";
import { orderReading } from "@/lib/ocr/engine/reading-order";
import { prepareRaster } from "@/lib/ocr/engine/recognize";
import { paddlePageReading } from "@/lib/ocr/engine/second-reading";
import { generateLayouts } from "@/scripts/make-layouts";
import { createTestPool } from "@/tests/support/ocr";
import { getEnv } from "@/lib/env";

// Pages of the generated layout suite (scripts/make-layouts.ts; all of it: `npm run bench -- --layouts`) read by the
// real engine, their text held to the suite's bound on order-sensitive CER (plain CER over the whole text in order).
// A few pages only: the whole suite is the bench's.

const pool = createTestPool();
afterAll(() => pool.terminate());

let files: Map<string, string>;
beforeAll(() => {
  files = new Map(generateLayouts().map((file) => [file.replace(/^.*\/|\.png$/g, ""), file]));
});

const bytesOf = (name: string) => new Uint8Array(readFileSync(files.get(name)!));
const truthOf = (name: string) => readFileSync(files.get(name)!.replace(/\.png$/, ".gt.txt"), "utf8");

describe("the layout suite read by the engine", () => {
  it.each(["three-columns", "magazine", "table-ruled", "form"])("%s in reading order", async (name) => {
    const text = render(await extractDocument(bytesOf(name), { env: getEnv(), pool }), "text");
    expect(characterErrorRate(text, truthOf(name))).toBeLessThanOrEqual(LAYOUT_CER_TARGET);
  });

  it("PaddleOCR's readings of a three-column page, a table and a form, in reading order", async () => {
    // Its boxes: a title narrower than the page over the gutters, rows run across two columns, padded boxes standing
    // into the gutter, a table's two-word cells (CER 0.50 and 0.56 before the gutter was found from the words); a
    // form's labels and values, each side taken for a column of text (CER 0.47 before running text had to run on).
    // The recognizer CI reads with (OCR_MODEL_DIR: PP-OCRv6), else the npm PP-OCRv4.
    const recognizer = await loadPaddle(process.env.OCR_MODEL_DIR || undefined);
    try {
      for (const name of ["three-columns", "table-unruled", "form"]) {
        const image = await decodeImage(bytesOf(name), "png", 50_000_000);
        try {
          const prepared = prepareRaster(image.source, image.width, image.height);
          const { page } = paddlePageReading(await recognizer.read(prepared.raster), prepared, 1);
          expect(characterErrorRate(orderReading(page).text, truthOf(name)), name).toBeLessThanOrEqual(
            LAYOUT_CER_TARGET,
          );
        } finally {
          releaseSource(image.source);
        }
      }
    } finally {
      await recognizer.release();
    }
  });
});
