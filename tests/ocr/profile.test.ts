import { afterAll, describe, expect, it } from "vitest";
import { characterErrorRate } from "@/bench/metrics";
import { extractDocument, render } from "@/lib/ocr";
import { OcrPool } from "@/lib/ocr/pool/pool";
import { profileStages, type StageProfile } from "@/lib/ocr/model/profile";
import { profiled, profiledAsync, startProfile, takeProfile } from "@/lib/ocr/model/profile";
import { degradedPrint, fixture } from "@/tests/support/ocr";
import { getEnv } from "@/lib/env";

// The bench's --profile: each OCR page's processor time per stage, measured in the engine process and sent back with
// the page only when asked for. Asserted: which stages a page went through and that they add up, never how long.

/** Burn about `ms` of this thread's processor time (the clock the profile reads). */
function spin(ms: number): void {
  const start = process.cpuUsage();
  let x = 0;
  while (true) {
    for (let i = 0; i < 10_000; i++) x += Math.sqrt(i);
    const { user, system } = process.cpuUsage(start);
    if ((user + system) / 1000 >= ms) break;
  }
  if (x < 0) throw new Error("unreachable");
}

const sumOfStages = (profile: StageProfile) => profileStages.reduce((sum, stage) => sum + (profile[stage] ?? 0), 0);

describe("stage profile", () => {
  it("charges each stage its own time, without the stages inside it; nothing is measured unless started", async () => {
    expect(profiled("decode", () => 7)).toBe(7);
    expect(takeProfile()).toBeUndefined();

    startProfile();
    profiled("text-size", () => {
      spin(30);
      profiled("rescale", () => spin(30));
    });
    await profiledAsync(
      "language-reread",
      async () => {
        spin(20);
        profiled("rescue", () => spin(20)); // inside a whole stage: charged to it
      },
      true,
    );
    const profile = takeProfile()!;
    expect(profile["text-size"]).toBeGreaterThanOrEqual(29);
    expect(profile["text-size"]).toBeLessThan(55); // its own 30 ms, not the 30 ms of the rescale inside it
    expect(profile.rescale).toBeGreaterThanOrEqual(29);
    expect(profile["language-reread"]).toBeGreaterThanOrEqual(39);
    expect(profile.rescue).toBeUndefined();
    expect(profile.total).toBeGreaterThanOrEqual(sumOfStages(profile) - 0.5);
    expect(takeProfile()).toBeUndefined();
  });

  describe("through the engine processes", { timeout: 300_000 }, () => {
    const pool = new OcrPool({
      size: 1,
      queueLimit: 16,
      maxJobsPerWorker: 50,
      createTimeoutMs: 60_000,
      engines: ["tesseract", "paddle"],
    });
    afterAll(() => pool.terminate());

    it("a clean page: decode, text size and Tesseract's first pass; no profile unless asked", async () => {
      const plain = await extractDocument(fixture("paragraph.png"), { env: getEnv(), pool, language: "eng" });
      expect(plain.pages[0]!.trace?.profile).toBeUndefined();
      const doc = await extractDocument(fixture("paragraph.png"), {
        env: getEnv(),
        pool,
        language: "eng",
        profile: true,
      });
      expect(render(doc, "text")).toBe(render(plain, "text"));
      const profile = doc.pages[0]!.trace!.profile!;
      expect(profile.decode).toBeGreaterThan(0);
      expect(profile["text-size"]).toBeGreaterThan(0);
      expect(profile["tesseract-first"]).toBeGreaterThan(0);
      expect(profile["paddle-detect"]).toBeUndefined();
      expect(profile["block-reread"]).toBeUndefined();
      expect(profile.total).toBeGreaterThanOrEqual(sumOfStages(profile) - 0.5);
      // Most of a clean page's time is Tesseract's wasm thread, which the process's clock includes.
      expect(profile["tesseract-first"]).toBeGreaterThan(profile["text-size"]!);
    });

    it("a noisy receipt read by both recognizers: PaddleOCR's stages, and Tesseract's deferred passes skipped", async () => {
      const lines = [
        "TOTAL AMOUNT DUE 42.50",
        "PAID BY CARD 1234",
        "THANK YOU FOR SHOPPING",
        "CASH 50.00 CHANGE 7.50",
        "ITEMS SOLD 3 QTY 5",
        "MEMBER POINTS EARNED 42",
        "PLEASE KEEP THIS RECEIPT",
      ];
      const bytes = degradedPrint(lines, {
        font: "mono",
        px: 18,
        shrink: 1,
        noise: 40,
        ink: 100,
        paper: 160,
        quality: 50,
      });
      const doc = await extractDocument(bytes, {
        env: getEnv(),
        pool,
        language: "eng",
        profile: true,
        deadline: Date.now() + 280_000,
      });
      const page = doc.pages[0]!;
      expect(page.engine).toBe("paddle");
      expect(characterErrorRate(render(doc, "text"), lines.join("\n"), true)).toBeLessThan(0.1);
      const profile = page.trace!.profile!;
      for (const stage of ["tesseract-first", "paddle-load", "paddle-detect", "paddle-recognize"] as const) {
        expect(profile[stage], stage).toBeGreaterThan(0);
      }
      expect(profile["block-reread"]).toBeUndefined();
      // tesseract.js's thread is stopped before PaddleOCR reads (the default): its heap and PaddleOCR's do not add up.
      // A native Tesseract keeps only its model, and has nothing to stop.
      if (pool.stats().tesseract?.kind === "wasm") expect(profile["tesseract-shed"]).toBeDefined();
      else expect(profile["tesseract-shed"]).toBeUndefined();
      expect(profile.total).toBeGreaterThanOrEqual(sumOfStages(profile) - 0.5);
    });

    it("keepTesseract (ocrSettings().keepTesseractForPaddle): Tesseract's thread stays through PaddleOCR, and the next page does not start one", async () => {
      const keeping = new OcrPool({
        size: 1,
        queueLimit: 16,
        maxJobsPerWorker: 50,
        createTimeoutMs: 60_000,
        engines: ["tesseract", "paddle"],
        keepTesseract: true,
      });
      try {
        const lines = [
          "TOTAL AMOUNT DUE 42.50",
          "PAID BY CARD 1234",
          "THANK YOU FOR SHOPPING",
          "CASH 50.00 CHANGE 7.50",
          "ITEMS SOLD 3 QTY 5",
          "MEMBER POINTS EARNED 42",
          "PLEASE KEEP THIS RECEIPT",
        ];
        const bytes = degradedPrint(lines, {
          font: "mono",
          px: 18,
          shrink: 1,
          noise: 40,
          ink: 100,
          paper: 160,
          quality: 50,
        });
        const read = () =>
          extractDocument(bytes, {
            env: getEnv(),
            pool: keeping,
            language: "eng",
            profile: true,
            deadline: Date.now() + 280_000,
          });
        const first = await read();
        expect(first.pages[0]!.engine).toBe("paddle");
        expect(first.pages[0]!.trace!.profile!["tesseract-shed"]).toBeUndefined();
        const second = await read();
        expect(render(second, "text")).toBe(render(first, "text"));
        expect(second.pages[0]!.trace!.profile!["tesseract-start"]).toBeUndefined();
      } finally {
        await keeping.terminate();
      }
    });
  });
});
