import { PDFDocument } from "pdf-lib";
import { afterAll, describe, expect, it } from "vitest";
import { characterErrorRate } from "@/bench/metrics";
import { extractDocument, openDocument, render } from "@/lib/ocr";
import { isOcrError, type OcrError, type OcrErrorCode } from "@/lib/ocr/model";
import { handWrittenPdf, TEXTS } from "@/scripts/make-fixtures";
import { createTestPool, expectOcrError, fixture, ocrErrorOf, parsedJson, seededRandom } from "../support/ocr";
import { getEnv } from "@/lib/env";

const pool = createTestPool();
afterAll(() => pool.terminate());

// Tests in this file run in order: the last one checks that the pool and the process survived the rest.

describe("hostile files end in the right OcrError", () => {
  const cases: Array<[file: string, code: OcrErrorCode]> = [
    ["hostile/empty.bin", "empty_file"],
    ["hostile/random.bin", "unsupported_type"],
    ["hostile/gif.gif", "unsupported_type"],
    ["hostile/html.html", "unsupported_type"],
    ["hostile/truncated.png", "unreadable"],
    ["hostile/truncated-header.png", "unreadable"],
    ["hostile/truncated.jpg", "unreadable"],
    ["hostile/truncated.pdf", "unreadable"],
    ["hostile/not-really.pdf", "unreadable"],
    ["hostile/encrypted.pdf", "encrypted"],
    ["hostile/huge-header.png", "image_too_large"],
    ["hostile/bomb.png", "image_too_large"],
    // 12000×12000 behind a 64×64 frame header, alone and inside a PDF whose image dictionary says 64×64.
    ["hostile/smuggled.jpg", "image_too_large"],
    ["hostile/smuggled-jpeg.pdf", "image_too_large"],
    // The inflate bomb's 1 GiB content stream, spelled so the first pre-check did not see a Flate stream.
    ["hostile/inflate-bomb-image-subtype.pdf", "stream_too_large"],
    ["hostile/inflate-bomb-escaped-name.pdf", "stream_too_large"],
    ["hostile/inflate-bomb-indirect-filter.pdf", "stream_too_large"],
    ["hostile/inflate-bomb-hex-chain.pdf", "stream_too_large"],
  ];

  it.each(cases)("%s → %s", async (file, code) => {
    await expectOcrError(extractDocument(fixture(file), { env: getEnv(), pool }), code);
  });

  it.each([["hostile/huge-header.png"], ["hostile/bomb.png"], ["hostile/smuggled.jpg"]])(
    "%s is refused by openDocument itself, from the header, before any decoding",
    async (file) => {
      const error = await expectOcrError(openDocument(fixture(file), { env: getEnv(), pool }), "image_too_large");
      expect(error.message).toMatch(/megapixels/);
    },
  );

  it("the bomb is refused for its pixel count only: with a higher limit it opens (and is not decoded here)", async () => {
    const opened = await openDocument(fixture("hostile/bomb.png"), {
      env: getEnv(),
      pool,
      limits: { maxImagePixels: 100_000_000 },
    });
    expect(opened.pageCount).toBe(1);
    await opened.close();
  });

  it.each([
    ["hostile/empty.bin"],
    ["hostile/random.bin"],
    ["hostile/gif.gif"],
    ["hostile/html.html"],
    ["hostile/truncated-header.png"],
    ["hostile/truncated.pdf"],
    ["hostile/not-really.pdf"],
    ["hostile/encrypted.pdf"],
  ])("%s is refused by openDocument already (nothing to charge for)", async (file) => {
    await ocrErrorOf(openDocument(fixture(file), { env: getEnv(), pool }));
  });
});

/** A minimal PDF written by hand: a catalog and the given page tree root. */
function handWrittenPagesPdf(pagesDict: string): Uint8Array {
  return handWrittenPdf(["<< /Type /Catalog /Pages 2 0 R >>", pagesDict]);
}

// hostile/zero-pages.pdf is not used: pdf-lib's save() adds a blank page to an empty document unless told
// not to (addDefaultPage), so that file holds one blank page. These are PDFs with really no pages.
describe("PDFs without pages → unreadable from openDocument", () => {
  it("pdf-lib, saved without its default page", async () => {
    const bytes = await (await PDFDocument.create()).save({ addDefaultPage: false });
    await expectOcrError(openDocument(bytes, { env: getEnv(), pool }), "unreadable");
  });

  it("hand-written: /Count 0, no kids", async () => {
    await expectOcrError(
      openDocument(handWrittenPagesPdf("<< /Type /Pages /Kids [] /Count 0 >>"), { env: getEnv(), pool }),
      "unreadable",
    );
  });

  it("hand-written: a page count that lies (/Count 3, no kids)", async () => {
    await expectOcrError(
      openDocument(handWrittenPagesPdf("<< /Type /Pages /Kids [] /Count 3 >>"), { env: getEnv(), pool }),
      "unreadable",
    );
  });

  it("a blank page is not an error: one page, no text", async () => {
    const pdf = await PDFDocument.create();
    pdf.addPage([612, 792]);
    const doc = await extractDocument(await pdf.save(), { env: getEnv(), pool });
    expect(doc.pages).toHaveLength(1);
    expect(doc.pages[0]!.text.trim()).toBe("");
    parsedJson(doc);
  });
});

/** Flip 1–8 bytes in the middle half of a file. */
function mutate(bytes: Uint8Array, seed: number): Uint8Array {
  const random = seededRandom(seed);
  const out = bytes.slice();
  const flips = 1 + Math.floor(random() * 8);
  for (let i = 0; i < flips; i++) {
    const at = Math.floor(bytes.length * (0.25 + random() * 0.5));
    out[at] = out[at]! ^ (1 + Math.floor(random() * 255));
  }
  return out;
}

/** Engine codes that blame the document (the API answers them with a 4xx). */
const DOCUMENT_FAULTS: OcrErrorCode[] = [
  "empty_file",
  "unsupported_type",
  "unreadable",
  "encrypted",
  "image_too_large",
  "stream_too_large",
  "too_many_pages",
  "out_of_memory",
  "too_complex",
];

describe("mutated files: either a result or an OcrError, never anything else", () => {
  const seeds = Array.from({ length: 10 }, (_, i) => i + 1);
  const cases = ["small-text.png", "born-digital.pdf"].flatMap((file) => seeds.map((seed) => [file, seed] as const));

  it.each(cases)("%s, seed %i", async (file, seed) => {
    const bytes = mutate(fixture(file), seed);
    try {
      const doc = await extractDocument(bytes, { env: getEnv(), pool, deadline: Date.now() + 45_000 });
      expect(doc.pages.length).toBeGreaterThan(0);
      parsedJson(doc);
      expect(typeof render(doc, "markdown")).toBe("string");
    } catch (error) {
      expect(isOcrError(error)).toBe(true);
      // A corrupt file is the sender's problem (4xx), not an engine failure, a deadline or a busy engine.
      expect(DOCUMENT_FAULTS).toContain((error as OcrError).code);
    }
  });
});

describe("afterwards", () => {
  it("the same pool still reads paragraph.png correctly", async () => {
    const doc = await extractDocument(fixture("paragraph.png"), { env: getEnv(), pool });
    expect(characterErrorRate(render(doc, "text"), TEXTS.paragraph.join("\n"))).toBeLessThan(0.02);
    expect(pool.stats().workers).toBeGreaterThanOrEqual(1);
  });
});
