import { afterAll, describe, expect, it } from "vitest";
import { characterErrorRate } from "@/bench/metrics";
import { extractDocument, OcrPool, render } from "@/lib/ocr";
import { decodeImage, releaseSource } from "@/lib/ocr/raster";
import { prepareRaster, recognizeRaster, retryReading, type PageReading, type RecognizeContext } from "@/lib/ocr/recognize";
import { TesseractPool } from "@/lib/ocr/tesseract-pool";
import { degradedPrint, fixture } from "@/tests/support/ocr";

// A page PaddleOCR will read too does not pay for Tesseract's block re-read and rescue pass first: recognizeRaster
// leaves them to the caller, who runs retryReading only when it keeps Tesseract's reading after all.

const LINES = ["TOTAL AMOUNT DUE 42.50", "PAID BY CARD 1234", "THANK YOU FOR SHOPPING"];

const tesseract = new TesseractPool({ size: 1, queueLimit: 16, maxJobsPerWorker: 50, createTimeoutMs: 60_000 });
const pools: OcrPool[] = [];
afterAll(async () => {
  await Promise.all([tesseract.terminate(), ...pools.map((pool) => pool.terminate())]);
});

async function prepared(bytes: Uint8Array, type: "jpeg" | "png") {
  const image = await decodeImage(bytes, type, 50_000_000);
  return { prepared: prepareRaster(image.source, image.width, image.height), release: () => releaseSource(image.source) };
}

function context(deferRetries?: RecognizeContext["deferRetries"]): RecognizeContext {
  return { pool: tesseract, langs: ["eng"], deadline: Date.now() + 60_000, deferRetries };
}

describe("deferred Tesseract passes", () => {
  it("a weak page's further passes wait for the caller, and retryReading gives what recognizeRaster would have", async () => {
    const { prepared: raster, release } = await prepared(degradedPrint(LINES), "jpeg");
    try {
      const asked: PageReading[] = [];
      const first = await recognizeRaster(raster, 1, context((reading) => (asked.push(reading), true)));
      expect(asked).toHaveLength(1);
      expect(first.retriesDeferred).toBe(true);
      expect(first.page.trace?.passes).toBe(1);
      expect(first.page.confidence).toBeLessThan(80);

      const retried = await retryReading(raster, first, 1, context());
      expect(retried.retriesDeferred).toBeUndefined();
      expect(retried.page.trace?.passes).toBeGreaterThanOrEqual(2);
      const direct = await recognizeRaster(raster, 1, context());
      expect(direct.retriesDeferred).toBeUndefined();
      expect(retried.page.text).toBe(direct.page.text);
      expect(retried.page.trace).toEqual(direct.page.trace);
      expect(characterErrorRate(retried.page.text, LINES.join("\n"), true)).toBeLessThan(0.1);
    } finally {
      release();
    }
  });

  it("the caller is not asked about a page that needs no further pass, nor can it stop the passes by declining", async () => {
    const clean = await prepared(fixture("paragraph.png"), "png");
    try {
      let asked = 0;
      const reading = await recognizeRaster(clean.prepared, 1, context(() => (asked++, true)));
      expect(asked).toBe(0);
      expect(reading.retriesDeferred).toBeUndefined();
      expect(reading.page.trace?.passes).toBe(1);
    } finally {
      clean.release();
    }
    const weak = await prepared(degradedPrint(LINES), "jpeg");
    try {
      const reading = await recognizeRaster(weak.prepared, 1, context(() => false));
      expect(reading.retriesDeferred).toBeUndefined();
      expect(reading.page.trace?.passes).toBeGreaterThanOrEqual(2);
    } finally {
      weak.release();
    }
  });

  it("through the engine: a weak page PaddleOCR reads too is read once by Tesseract, and PaddleOCR's reading kept", async () => {
    // Enough words for a second reading (SECOND_READING_MIN_WORDS), all of them faint, noisy and small: Tesseract alone
    // reads it with confidence under 80 and rescues it with a larger pass.
    const lines = [...LINES, "CASH 50.00 CHANGE 7.50", "ITEMS SOLD 3 QTY 5", "MEMBER POINTS EARNED 42", "PLEASE KEEP THIS RECEIPT"];
    const both = new OcrPool({ size: 1, queueLimit: 16, maxJobsPerWorker: 50, createTimeoutMs: 60_000, engines: ["tesseract", "paddle"] });
    const only = new OcrPool({ size: 1, queueLimit: 16, maxJobsPerWorker: 50, createTimeoutMs: 60_000, engines: ["tesseract"] });
    pools.push(both, only);
    const bytes = degradedPrint(lines, { shrink: 0.55 });
    const [withPaddle, alone] = await Promise.all([
      extractDocument(bytes, { pool: both, language: "eng", deadline: Date.now() + 120_000 }),
      extractDocument(bytes, { pool: only, language: "eng", deadline: Date.now() + 120_000 }),
    ]);
    const truth = lines.join("\n");
    expect(alone.pages[0]!.engine).toBe("tesseract");
    expect(alone.pages[0]!.trace?.passes).toBeGreaterThanOrEqual(2);
    expect(characterErrorRate(render(alone, "text"), truth, true)).toBeLessThan(0.1);
    const page = withPaddle.pages[0]!;
    expect(page.engine).toBe("paddle");
    expect(page.trace?.second).toBe("paddle");
    expect(page.trace?.passes).toBe(1);
    // PaddleOCR reads this small synthetic print less well than Tesseract's rescued reading (run-together words).
    expect(characterErrorRate(render(withPaddle, "text"), truth, true)).toBeLessThan(0.3);
  });
});
