import { afterAll, describe, expect, it } from "vitest";
import { characterErrorRate } from "@/bench/metrics";
import { documentConfidence, extractDocument, openDocument, render } from "@/lib/ocr";
import type { ExtractedDocument } from "@/lib/ocr/model";
import { readImageInfo } from "@/lib/ocr/model/image-info";
import { TEXTS } from "@/scripts/make-fixtures";
import { createTestPool, expectOcrError, fixture, parsedJson } from "../support/ocr";
import { getEnv } from "@/lib/env";

const pool = createTestPool();
afterAll(() => pool.terminate());

/** Each fixture is read once (on first use) and every assertion below reuses the result. */
const results = new Map<string, Promise<ExtractedDocument>>();
function extracted(file: string): Promise<ExtractedDocument> {
  let result = results.get(file);
  if (!result) {
    result = extractDocument(fixture(file), { env: getEnv(), pool });
    results.set(file, result);
  }
  return result;
}

const PARAGRAPH = TEXTS.paragraph.join("\n");

interface ImageCase {
  file: string;
  truth: string;
  /** Stated bound on the character error rate (whitespace-normalized, case-sensitive). */
  maxCer: number;
  /** The upright size the page must report. */
  width: number;
  height: number;
}

// Bounds: the engine measured 0 on all of these except structured.png (0.035: OCR reads the round
// bullets as "«" and drops one space); the bounds leave room for a character or two of drift, no more.
const cases: ImageCase[] = [
  { file: "paragraph.png", truth: PARAGRAPH, maxCer: 0.02, width: 1500, height: 300 },
  { file: "paragraph.webp", truth: PARAGRAPH, maxCer: 0.02, width: 1500, height: 300 },
  { file: "paragraph.jpg", truth: PARAGRAPH, maxCer: 0.02, width: 1500, height: 300 },
  // Pixels stored turned, EXIF orientation says how to turn them back: gibberish unless applied.
  { file: "paragraph-exif3.jpg", truth: PARAGRAPH, maxCer: 0.02, width: 1500, height: 300 },
  { file: "paragraph-exif6.jpg", truth: PARAGRAPH, maxCer: 0.02, width: 1500, height: 300 },
  { file: "paragraph-exif8.jpg", truth: PARAGRAPH, maxCer: 0.02, width: 1500, height: 300 },
  // 11 px text: only readable after upscaling.
  { file: "small-text.png", truth: PARAGRAPH, maxCer: 0.05, width: 480, height: 80 },
  {
    file: "two-column.png",
    truth: [...TEXTS.columnLeft, ...TEXTS.columnRight].join("\n"),
    maxCer: 0.03,
    width: 1400,
    height: 760,
  },
  { file: "receipt.png", truth: TEXTS.receipt.join("\n"), maxCer: 0.05, width: 520, height: 560 },
  {
    file: "structured.png",
    truth: [TEXTS.heading, ...TEXTS.body, ...TEXTS.bullets].join("\n"),
    maxCer: 0.08,
    width: 1500,
    height: 480,
  },
  { file: "french.png", truth: TEXTS.french.join("\n"), maxCer: 0.03, width: 1700, height: 300 },
];

describe.each(cases)("$file", ({ file, truth, maxCer, width, height }) => {
  it(`character error rate < ${maxCer}`, async () => {
    const doc = await extracted(file);
    expect(characterErrorRate(render(doc, "text"), truth)).toBeLessThan(maxCer);
  });

  it("one page, number 1, source ocr, confidence in 0–100", async () => {
    const doc = await extracted(file);
    expect(doc.pageCount).toBe(1);
    expect(doc.pages).toHaveLength(1);
    const [page] = doc.pages;
    expect(page).toMatchObject({ number: 1, source: "ocr" });
    expect(page!.confidence).toBeGreaterThan(0);
    expect(page!.confidence).toBeLessThanOrEqual(100);
    expect(documentConfidence(doc)).toBeGreaterThan(0);
    expect(documentConfidence(doc)).toBeLessThanOrEqual(100);
  });

  it(`json: the public schema, boxes inside [0, 1], page size ${width}×${height} (upright)`, async () => {
    const doc = await extracted(file);
    const json = parsedJson(doc);
    expect(json.pages).toHaveLength(1);
    const [page] = json.pages;
    expect([page!.width, page!.height]).toEqual([width, height]);
    expect(page!.blocks.length).toBeGreaterThan(0);
    // Renderer-only hints stay out of the public document.
    expect(Object.keys(page!).sort()).toEqual([
      "blocks",
      "confidence",
      "engine",
      "height",
      "number",
      "rotation",
      "skew",
      "source",
      "text",
      "width",
    ]);
    // Words are the text: every line's text is its words.
    for (const block of page!.blocks)
      for (const line of block.lines) expect(line.text).toBe(line.words.map((w) => w.text).join(" "));
  });

  it("text: one page, no form feed; it is the page's text", async () => {
    const doc = await extracted(file);
    const text = render(doc, "text");
    expect(text).not.toContain("\f");
    expect(text).toBe(doc.pages[0]!.text);
  });
});

describe("EXIF orientation", () => {
  it("an orientation-6 JPEG is stored 300×1500 and reported upright as 1500×300", async () => {
    const bytes = fixture("paragraph-exif6.jpg");
    const stored = readImageInfo(bytes, "jpeg");
    const page = (await extracted("paragraph-exif6.jpg")).pages[0]!;
    expect([page.width, page.height]).toEqual([stored.height, stored.width]);
  });

  it("every rotation reads like the upright PNG, with boxes in the same places", async () => {
    const upright = (await extracted("paragraph.png")).pages[0]!;
    for (const file of ["paragraph-exif3.jpg", "paragraph-exif6.jpg", "paragraph-exif8.jpg"]) {
      const page = (await extracted(file)).pages[0]!;
      expect(characterErrorRate(page.text, upright.text)).toBeLessThan(0.02);
      const first = page.blocks[0]!.lines[0]!.words[0]!.bbox;
      const expected = upright.blocks[0]!.lines[0]!.words[0]!.bbox;
      first.forEach((v, i) => expect(Math.abs(v - expected[i]!)).toBeLessThan(0.02));
    }
  });
});

describe("layout", () => {
  it("two-column.png: the left column is read before the right one", async () => {
    const text = render(await extracted("two-column.png"), "text");
    const leftEnd = text.indexOf("luck with frost");
    const rightStart = text.indexOf("Rivers carry water");
    expect(text.indexOf("Apples grow")).toBeGreaterThanOrEqual(0);
    expect(leftEnd).toBeGreaterThan(0);
    expect(rightStart).toBeGreaterThan(leftEnd);
    // Interleaved lines (left, right, left, …) would be far off this bound.
    const interleaved = TEXTS.columnLeft.flatMap((line, i) => [line, TEXTS.columnRight[i]!]).join("\n");
    const leftThenRight = [...TEXTS.columnLeft, ...TEXTS.columnRight].join("\n");
    expect(characterErrorRate(text, leftThenRight)).toBeLessThan(0.03);
    expect(characterErrorRate(interleaved, leftThenRight)).toBeGreaterThan(0.3);
  });

  it("two-column.png: the boxes of the right column's words lie right of the left column's", async () => {
    const page = parsedJson(await extracted("two-column.png")).pages[0]!;
    const words = page.blocks.flatMap((b) => b.lines.flatMap((l) => l.words));
    const apples = words.find((w) => w.text === "Apples")!;
    const rivers = words.find((w) => w.text === "Rivers")!;
    expect(apples.bbox[0]).toBeLessThan(0.1); // drawn at x = 40 of 1400
    expect(rivers.bbox[0]).toBeGreaterThan(0.45); // drawn at x = 720 of 1400
    expect(Math.abs(apples.bbox[1] - rivers.bbox[1])).toBeLessThan(0.02); // same first line
  });

  it("receipt.png: every line is there, amounts included", async () => {
    const text = render(await extracted("receipt.png"), "text");
    for (const amount of ["1.29", "2.15", "3.40", "6.84", "10.00", "3.16"]) expect(text).toContain(amount);
    expect(text).toContain("TOTAL");
  });

  it("structured.png → markdown: the heading, the paragraph and one `- ` item per bullet", async () => {
    const markdown = render(await extracted("structured.png"), "markdown");
    expect(markdown).toMatch(/^#{1,6} Quarterly Report$/m);
    const items = markdown.match(/^- .*$/gm) ?? [];
    expect(items).toHaveLength(TEXTS.bullets.length);
    TEXTS.bullets.forEach((bullet, i) => expect(characterErrorRate(items[i]!.slice(2), bullet)).toBeLessThan(0.1));
    // The body is a paragraph between the heading and the list, not a heading itself.
    expect(markdown.indexOf("Quarterly Report")).toBeLessThan(markdown.indexOf("Sales grew"));
    expect(markdown.indexOf("Sales grew")).toBeLessThan(markdown.indexOf(items[0]!));
    expect(markdown).not.toMatch(/^#+ .*Sales grew/m);
  });

  it("paragraph.png → markdown: one plain paragraph, no heading, no list", async () => {
    const markdown = render(await extracted("paragraph.png"), "markdown");
    expect(markdown).not.toMatch(/^(#|- |\d+\. )/m);
    expect(characterErrorRate(markdown, PARAGRAPH)).toBeLessThan(0.02);
  });
});

describe("language", () => {
  it("french.png with default options keeps its accents (automatic language)", async () => {
    const text = render(await extracted("french.png"), "text");
    for (const word of ["présent", "utilisé", "vérité", "générale", "élèves", "école", "très", "leçon"]) {
      expect(text).toContain(word);
    }
  });

  it("paragraph.png stays English: nothing made French of it", async () => {
    expect(render(await extracted("paragraph.png"), "text")).toContain("recognition turns pictures");
  });

  it("an explicit language is used as asked", async () => {
    const doc = await extractDocument(fixture("french.png"), { env: getEnv(), pool, language: "fra" });
    const text = render(doc, "text");
    expect(characterErrorRate(text, TEXTS.french.join("\n"))).toBeLessThan(0.03);
    expect(text).toContain("élèves");
  });

  it("an unknown language → unsupported_language from openDocument, before any work", async () => {
    const error = await expectOcrError(
      openDocument(fixture("paragraph.png"), { env: getEnv(), pool, language: "xyz" }),
      "unsupported_language",
    );
    expect(error.message).toContain("eng");
  });
});

describe("openDocument on images", () => {
  it("an image is one page, selected and charged as one", async () => {
    const doc = await openDocument(fixture("paragraph.webp"), { env: getEnv(), pool });
    expect({ type: doc.type, pageCount: doc.pageCount, selectedPages: doc.selectedPages }).toEqual({
      type: "webp",
      pageCount: 1,
      selectedPages: [1],
    });
    await doc.close();
  });

  it('pages: "1" is fine on an image; any other page → bad_page_list', async () => {
    const ok = await openDocument(fixture("paragraph.png"), { env: getEnv(), pool, pages: "1" });
    expect(ok.selectedPages).toEqual([1]);
    await ok.close();
    await expectOcrError(openDocument(fixture("paragraph.png"), { env: getEnv(), pool, pages: "2" }), "bad_page_list");
  });

  it("a pixel limit below the image's size → image_too_large from openDocument", async () => {
    await expectOcrError(
      openDocument(fixture("paragraph.png"), { env: getEnv(), pool, limits: { maxImagePixels: 1500 * 300 - 1 } }),
      "image_too_large",
    );
    const exact = await openDocument(fixture("paragraph.png"), {
      env: getEnv(),
      pool,
      limits: { maxImagePixels: 1500 * 300 },
    });
    expect(exact.pageCount).toBe(1);
    await exact.close();
  });

  it("a deadline already passed → deadline", async () => {
    const doc = await openDocument(fixture("paragraph.png"), { env: getEnv(), pool });
    await expectOcrError(doc.extract({ deadline: Date.now() - 1 }), "deadline");
    await doc.close();
  });
});
