import { afterAll, describe, expect, it } from "vitest";
import { characterErrorRate } from "@/bench/metrics";
import { extractDocument, render } from "@/lib/ocr";
import { OcrPool } from "@/lib/ocr/pool/pool";
import type { ExtractedDocument } from "@/lib/ocr/model";
import { decodeImage, releaseSource } from "@/lib/ocr/engine/raster";
import { prepareRaster } from "@/lib/ocr/engine/recognize";
import { DEFAULT_TESSERACT_LIBRARY, loadLibtesseract, NativeTesseract } from "@/lib/ocr/engine/tesseract-native";
import { TEXTS } from "@/scripts/make-fixtures";
import { degradedPrint, expectOcrError, fixture } from "@/tests/support/ocr";
import { getEnv } from "@/lib/env";

// OCR_TESSERACT: the engine reads with the system's libtesseract where it loads (CI installs libtesseract5, so the
// engine tier runs on it) and with tesseract.js otherwise. Here the same pages go through both, and through a pool
// pointed at a library that does not exist.

const native = await loadLibtesseract(DEFAULT_TESSERACT_LIBRARY).then(
  () => true,
  (error: unknown) => {
    // CI installs the library: there, its absence is a failure, not a skip.
    if (process.env.CI) throw error;
    return false;
  },
);

const pools: OcrPool[] = [];
afterAll(async () => {
  await Promise.all(pools.map((pool) => pool.terminate()));
});

function pool(tesseract: "auto" | "native" | "wasm", tesseractLibrary?: string): OcrPool {
  const created = new OcrPool({
    size: 1,
    queueLimit: 16,
    maxJobsPerWorker: 50,
    createTimeoutMs: 60_000,
    tesseract,
    ...(tesseractLibrary && { tesseractLibrary }),
  });
  pools.push(created);
  return created;
}

const PARAGRAPH = TEXTS.paragraph.join("\n");
const COLUMNS = [...TEXTS.columnLeft, ...TEXTS.columnRight].join("\n");
const RECEIPT = TEXTS.receipt.join("\n");
const CASES = [
  { file: "paragraph.png", truth: PARAGRAPH },
  { file: "two-column.png", truth: COLUMNS },
  { file: "receipt.png", truth: RECEIPT },
];

function words(doc: ExtractedDocument) {
  return doc.pages.flatMap((p) => p.blocks.flatMap((b) => b.lines.flatMap((l) => l.words)));
}

describe.runIf(native)("native libtesseract against tesseract.js", () => {
  const auto = pool("auto");
  const wasm = pool("wasm");

  it("auto loads the native library, and says so", async () => {
    await auto.warm();
    expect(auto.stats().tesseract).toMatchObject({ kind: "native", version: expect.stringMatching(/^5\./) });
    await wasm.warm();
    expect(wasm.stats().tesseract).toEqual({ kind: "wasm" });
  });

  it.each(CASES)("$file: the same text, words, boxes, confidences and baselines on both", async ({ file, truth }) => {
    const [a, b] = await Promise.all([
      extractDocument(fixture(file), { env: getEnv(), pool: auto }),
      extractDocument(fixture(file), { env: getEnv(), pool: wasm }),
    ]);
    const nativeText = render(a, "text");
    const wasmText = render(b, "text");
    expect(characterErrorRate(nativeText, truth)).toBeLessThan(0.05);
    expect(characterErrorRate(wasmText, truth)).toBeLessThan(0.05);
    expect(characterErrorRate(nativeText, wasmText)).toBeLessThanOrEqual(0.01);
    const [na, wa] = [words(a), words(b)];
    expect(na.length).toBeGreaterThan(5);
    expect(Math.abs(na.length - wa.length)).toBeLessThanOrEqual(1);
    // Word for word (the same reading), boxes within a pixel or two of the page and confidences within a few points.
    const pairs = na.filter((w, i) => wa[i]?.text === w.text).map((w) => [w, wa[na.indexOf(w)]!] as const);
    expect(pairs.length).toBeGreaterThanOrEqual(na.length - 2);
    for (const [n, w] of pairs) {
      for (let k = 0; k < 4; k++) expect(Math.abs(n.bbox[k]! - w.bbox[k]!)).toBeLessThan(0.01);
      expect(Math.abs(n.confidence - w.confidence)).toBeLessThan(15);
    }
    const baselines = (doc: ExtractedDocument) => doc.pages[0]!.blocks.flatMap((bl) => bl.lines.map((l) => l.baseline));
    expect(baselines(a).every((line) => line !== undefined)).toBe(true);
    expect(baselines(b).every((line) => line !== undefined)).toBe(true);
    expect(a.pages[0]!.engine).toBe("tesseract");
  });

  it("a weak page gets the same further passes (block re-read, 1.5× rescue) on both", async () => {
    const lines = ["TOTAL AMOUNT DUE 42.50", "PAID BY CARD 1234", "THANK YOU FOR SHOPPING"];
    const [a, b] = await Promise.all(
      [auto, wasm].map((p) => extractDocument(degradedPrint(lines), { env: getEnv(), pool: p })),
    );
    for (const doc of [a!, b!]) {
      expect(doc.pages[0]!.trace?.passes).toBeGreaterThanOrEqual(2);
      expect(characterErrorRate(doc.pages[0]!.text, lines.join("\n"), true)).toBeLessThan(0.1);
    }
  });
});

describe.runIf(native)("one libtesseract instance (NativeTesseract)", () => {
  async function raster(file: string) {
    const image = await decodeImage(fixture(file), "png", 50_000_000);
    try {
      return prepareRaster(image.source, image.width, image.height).raster;
    } finally {
      releaseSource(image.source);
    }
  }
  const job = (
    image: Awaited<ReturnType<typeof raster>>,
    params: Record<string, string> = {},
    deadline = Date.now() + 60_000,
  ) => ({
    image,
    langs: ["eng"],
    params: { tessedit_pageseg_mode: "3", user_defined_dpi: "300", debug_file: "/dev/null", ...params },
    deadline,
    pixels: image.width * image.height,
  });
  const tsvWords = (tsv: string) =>
    tsv
      .split("\n")
      .filter((row) => row.startsWith("5\t"))
      .map((row) => row.split("\t").slice(11).join("\t"));

  it("a job's parameters hold for that job only, and an unknown parameter is an engine error", async () => {
    const reader = new NativeTesseract(await loadLibtesseract(DEFAULT_TESSERACT_LIBRARY), { queueLimit: 4 });
    try {
      const page = await raster("paragraph.png");
      const digits = await reader.recognizeOutput(job(page, { tessedit_char_whitelist: "0123456789." }));
      expect(tsvWords(digits.tsv).join(" ")).not.toMatch(/[a-z]/i);
      const after = await reader.recognizeOutput({ ...job(page), hocr: true });
      expect(characterErrorRate(tsvWords(after.tsv).join(" "), TEXTS.paragraph.join(" "))).toBeLessThan(0.02);
      expect(after.hocr).toMatch(/class='ocr_line'[^>]*baseline/);
      await expectOcrError(reader.recognizeOutput(job(page, { no_such_parameter_here: "1" })), "engine_failed");
      expect(
        characterErrorRate(
          tsvWords((await reader.recognizeOutput(job(page))).tsv).join(" "),
          TEXTS.paragraph.join(" "),
        ),
      ).toBeLessThan(0.02);
    } finally {
      await reader.terminate();
    }
  });

  it("a job past its deadline is answered `deadline`, waiting or running, and the instance reads on", async () => {
    const reader = new NativeTesseract(await loadLibtesseract(DEFAULT_TESSERACT_LIBRARY), { queueLimit: 4 });
    try {
      const columns = await raster("two-column.png");
      await reader.warm(["eng"]);
      const running = reader.recognizeOutput(job(columns, {}, Date.now() + 30));
      const waiting = reader.recognizeOutput(job(columns, {}, Date.now() + 60));
      await expectOcrError(running, "deadline");
      await expectOcrError(waiting, "deadline");
      await expectOcrError(reader.recognizeOutput(job(columns, {}, Date.now() - 1)), "deadline");
      const words = tsvWords((await reader.recognizeOutput(job(columns))).tsv).join(" ");
      expect(characterErrorRate(words, COLUMNS.replace(/\n/g, " "))).toBeLessThan(0.03);
    } finally {
      await reader.terminate();
    }
  });
});

describe("a library that does not load", () => {
  it("auto falls back to tesseract.js, says why, and reads the page", async () => {
    const fallback = pool("auto", "libtesseract-not-here.so.0");
    const doc = await extractDocument(fixture("paragraph.png"), { env: getEnv(), pool: fallback });
    expect(characterErrorRate(render(doc, "text"), PARAGRAPH)).toBeLessThan(0.02);
    const tesseract = fallback.stats().tesseract;
    expect(tesseract?.kind).toBe("wasm");
    expect(tesseract?.note).toMatch(/libtesseract-not-here\.so\.0/);
  });

  it("native refuses to read rather than fall back", async () => {
    const strict = pool("native", "libtesseract-not-here.so.0");
    await expectOcrError(extractDocument(fixture("paragraph.png"), { env: getEnv(), pool: strict }), "engine_failed");
  });
});
