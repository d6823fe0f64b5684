import { PDFDocument } from "pdf-lib";
import { afterAll, describe, expect, it } from "vitest";
import { characterErrorRate } from "@/bench/metrics";
import { ApiError, type ErrorCode } from "@/lib/errors";
import { extractDocument, openDocument, render } from "@/lib/ocr";
import { handWrittenPdf, TEXTS } from "@/scripts/make-fixtures";
import { apiErrorOf, createTestPool, expectApiError, fixture, parsedJson, seededRandom } from "../support/ocr";

const pool = createTestPool();
afterAll(() => pool.terminate());

// Tests in this file run in order: the last one checks that the pool and the process survived the rest.

describe("hostile files end in the right ApiError", () => {
  const cases: Array<[file: string, code: ErrorCode, status: number]> = [
    ["hostile/empty.bin", "invalid_request", 400],
    ["hostile/random.bin", "unsupported_media_type", 415],
    ["hostile/gif.gif", "unsupported_media_type", 415],
    ["hostile/html.html", "unsupported_media_type", 415],
    ["hostile/truncated.png", "unreadable_document", 422],
    ["hostile/truncated-header.png", "unreadable_document", 422],
    ["hostile/truncated.jpg", "unreadable_document", 422],
    ["hostile/truncated.pdf", "unreadable_document", 422],
    ["hostile/not-really.pdf", "unreadable_document", 422],
    ["hostile/encrypted.pdf", "unreadable_document", 422],
    ["hostile/huge-header.png", "payload_too_large", 413],
    ["hostile/bomb.png", "payload_too_large", 413],
  ];

  it.each(cases)("%s → %s %i", async (file, code, status) => {
    await expectApiError(extractDocument(fixture(file), { pool }), code, status);
  });

  it.each([["hostile/huge-header.png"], ["hostile/bomb.png"]])(
    "%s is refused by openDocument itself, from the header, before any decoding",
    async (file) => {
      const error = await expectApiError(openDocument(fixture(file), { pool }), "payload_too_large", 413);
      expect(error.message).toMatch(/megapixels/);
    },
  );

  it("the bomb is refused for its pixel count only: with a higher limit it opens (and is not decoded here)", async () => {
    const opened = await openDocument(fixture("hostile/bomb.png"), { pool, limits: { maxImagePixels: 100_000_000 } });
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
    await apiErrorOf(openDocument(fixture(file), { pool }));
  });
});

/** A minimal PDF written by hand: a catalog and the given page tree root. */
function handWrittenPagesPdf(pagesDict: string): Uint8Array {
  return handWrittenPdf(["<< /Type /Catalog /Pages 2 0 R >>", pagesDict]);
}

// hostile/zero-pages.pdf is not used: pdf-lib's save() adds a blank page to an empty document unless told
// not to (addDefaultPage), so that file holds one blank page. These are PDFs with really no pages.
describe("PDFs without pages → 422 unreadable_document from openDocument", () => {
  it("pdf-lib, saved without its default page", async () => {
    const bytes = await (await PDFDocument.create()).save({ addDefaultPage: false });
    await expectApiError(openDocument(bytes, { pool }), "unreadable_document", 422);
  });

  it("hand-written: /Count 0, no kids", async () => {
    await expectApiError(openDocument(handWrittenPagesPdf("<< /Type /Pages /Kids [] /Count 0 >>"), { pool }), "unreadable_document", 422);
  });

  it("hand-written: a page count that lies (/Count 3, no kids)", async () => {
    await expectApiError(openDocument(handWrittenPagesPdf("<< /Type /Pages /Kids [] /Count 3 >>"), { pool }), "unreadable_document", 422);
  });

  it("a blank page is not an error: one page, no text", async () => {
    const pdf = await PDFDocument.create();
    pdf.addPage([612, 792]);
    const doc = await extractDocument(await pdf.save(), { pool });
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

describe("mutated files: either a result or an ApiError, never anything else", () => {
  const seeds = Array.from({ length: 10 }, (_, i) => i + 1);
  const cases = ["small-text.png", "born-digital.pdf"].flatMap((file) => seeds.map((seed) => [file, seed] as const));

  it.each(cases)("%s, seed %i", async (file, seed) => {
    const bytes = mutate(fixture(file), seed);
    try {
      const doc = await extractDocument(bytes, { pool, deadline: Date.now() + 45_000 });
      expect(doc.pages.length).toBeGreaterThan(0);
      parsedJson(doc);
      expect(typeof render(doc, "markdown")).toBe("string");
    } catch (error) {
      expect(error).toBeInstanceOf(ApiError);
      // A corrupt file is the sender's problem (4xx), not an engine failure.
      expect((error as ApiError).code).not.toBe("internal_error");
      expect((error as ApiError).status).toBeLessThan(500);
    }
  });
});

describe("afterwards", () => {
  it("the same pool still reads paragraph.png correctly", async () => {
    const doc = await extractDocument(fixture("paragraph.png"), { pool });
    expect(characterErrorRate(render(doc, "text"), TEXTS.paragraph.join("\n"))).toBeLessThan(0.02);
    expect(pool.stats().workers).toBeGreaterThanOrEqual(1);
  });
});
