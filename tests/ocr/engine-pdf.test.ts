import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { characterErrorRate } from "@/bench/metrics";
import { documentConfidence, extractDocument, openDocument, render } from "@/lib/ocr";
import type { ExtractedDocument } from "@/lib/ocr/model";
import { TEXTS } from "@/scripts/make-fixtures";
import { createTestPool, expectOcrError, fixture, parsedJson } from "../support/ocr";
import { getEnv } from "@/lib/env";

const pool = createTestPool();
afterAll(() => pool.terminate());

const pageTruth = (i: number) => {
  const p = TEXTS.pdfPages[i]!;
  return [p.heading, ...p.body].join("\n");
};
const BORN_DIGITAL_TRUTH = TEXTS.pdfPages.map((_, i) => pageTruth(i)).join("\n\n");
const PARAGRAPH = TEXTS.paragraph.join("\n");
/** US Letter (612×792 pt) at 300 DPI: the size PDF pages are reported (and rendered for OCR) at. */
const LETTER_300DPI = [2550, 3300];

describe("born-digital.pdf: read from its text layer", () => {
  let doc: ExtractedDocument;
  beforeAll(async () => {
    doc = await extractDocument(fixture("born-digital.pdf"), { env: getEnv(), pool });
  });

  it("3 pages, numbered 1–3, all text-layer, confidence 100", () => {
    expect(doc.pageCount).toBe(3);
    expect(doc.pages.map((p) => p.number)).toEqual([1, 2, 3]);
    expect(doc.pages.map((p) => p.source)).toEqual(["text-layer", "text-layer", "text-layer"]);
    expect(doc.pages.map((p) => p.confidence)).toEqual([100, 100, 100]);
    expect(documentConfidence(doc)).toBe(100);
  });

  it("character error rate ≈ 0, for the document and for each page", () => {
    expect(characterErrorRate(render(doc, "text"), BORN_DIGITAL_TRUTH)).toBeLessThan(0.005);
    doc.pages.forEach((page, i) => expect(characterErrorRate(page.text, pageTruth(i))).toBeLessThan(0.005));
  });

  it("text: the pages joined by form feeds", () => {
    const parts = render(doc, "text").split("\f");
    expect(parts).toEqual(doc.pages.map((p) => p.text));
  });

  it("markdown: a heading per page, pages separated by \\n\\n---\\n\\n", () => {
    const markdown = render(doc, "markdown");
    const pages = markdown.split("\n\n---\n\n");
    expect(pages).toHaveLength(3);
    TEXTS.pdfPages.forEach((p, i) => {
      expect(pages[i]).toMatch(new RegExp(`^#{1,6} ${p.heading}$`, "m"));
      // The body is not a heading: 11 pt against the 24 pt heading.
      for (const line of p.body) expect(pages[i]).not.toMatch(new RegExp(`^#+ .*${line.slice(0, 12)}`, "m"));
      expect(characterErrorRate(pages[i]!.replace(/^#+ /gm, ""), pageTruth(i))).toBeLessThan(0.005);
    });
  });

  it("json: the public schema, boxes inside [0, 1], pages at 300 DPI", () => {
    const json = parsedJson(doc);
    for (const page of json.pages) {
      expect([page.width, page.height]).toEqual(LETTER_300DPI);
      expect(page.source).toBe("text-layer");
      for (const block of page.blocks) {
        expect(block.confidence).toBe(100);
        for (const line of block.lines) for (const word of line.words) expect(word.confidence).toBe(100);
      }
    }
  });

  it("boxes are where the PDF drew the text (y measured from the top)", () => {
    const page = parsedJson(doc).pages[0]!;
    const words = page.blocks.flatMap((b) => b.lines.flatMap((l) => l.words));
    const heading = words.find((w) => w.text === "Introduction")!;
    const body = words.find((w) => w.text === "This")!;
    // Drawn at x = 72 pt of 612; heading baseline at y = 700 pt from the bottom of 792, body at 660.
    expect(heading.bbox[0]).toBeCloseTo(72 / 612, 2);
    const headingBaseline = (792 - 700) / 792;
    expect(heading.bbox[1]).toBeLessThan(headingBaseline);
    expect(heading.bbox[3]).toBeGreaterThan(headingBaseline - 0.005);
    expect(body.bbox[1]).toBeGreaterThan(heading.bbox[3] - 0.005);
    expect(body.bbox[0]).toBeCloseTo(72 / 612, 2);
  });
});

describe("born-digital.pdf: page selection and limits", () => {
  it('pages: "2" → only page 2, numbered 2; selectedPages [2]', async () => {
    const opened = await openDocument(fixture("born-digital.pdf"), { env: getEnv(), pool, pages: "2" });
    try {
      expect({ type: opened.type, pageCount: opened.pageCount, selectedPages: opened.selectedPages }).toEqual({
        type: "pdf",
        pageCount: 3,
        selectedPages: [2],
      });
      const doc = await opened.extract();
      expect(doc.pageCount).toBe(3);
      expect(doc.pages.map((p) => p.number)).toEqual([2]);
      expect(characterErrorRate(render(doc, "text"), pageTruth(1))).toBeLessThan(0.005);
      expect(render(doc, "text")).not.toContain("\f");
    } finally {
      await opened.close();
    }
  });

  it('pages: "2-3" → pages 2 and 3', async () => {
    const doc = await extractDocument(fixture("born-digital.pdf"), { env: getEnv(), pool, pages: "2-3" });
    expect(doc.pages.map((p) => p.number)).toEqual([2, 3]);
    expect(characterErrorRate(render(doc, "text"), `${pageTruth(1)}\n${pageTruth(2)}`)).toBeLessThan(0.005);
    expect(render(doc, "markdown").split("\n\n---\n\n")).toHaveLength(2);
  });

  it('pages: "3,1" → pages 1 and 3, in document order', async () => {
    const doc = await extractDocument(fixture("born-digital.pdf"), { env: getEnv(), pool, pages: "3,1" });
    expect(doc.pages.map((p) => p.number)).toEqual([1, 3]);
    expect(doc.pages[1]!.text).toContain("Results");
  });

  it("limits.maxPdfPages counts work: 2 on the 3-page born-digital PDF fits (a text-layer page counts 0.1)", async () => {
    const opened = await openDocument(fixture("born-digital.pdf"), { env: getEnv(), pool, limits: { maxPdfPages: 2 } });
    expect(opened.selectedPages).toEqual([1, 2, 3]);
    await opened.close();
  });

  it("limits.maxPdfPages: 2 on a 3-page scan → too_many_pages from openDocument, before any OCR", async () => {
    const error = await expectOcrError(
      openDocument(fixture("scanned-3.pdf"), { env: getEnv(), pool, limits: { maxPdfPages: 2 } }),
      "too_many_pages",
    );
    expect(error.message).toMatch(/more than 2 pages of work/);
  });

  it("limits.maxPdfPages: 0.1 × the pages in all is the page cap: 3 pages of text with a limit of 0.2 (2 pages in all) → too_many_pages", async () => {
    await expectOcrError(
      openDocument(fixture("born-digital.pdf"), { env: getEnv(), pool, limits: { maxPdfPages: 0.2 } }),
      "too_many_pages",
    );
  });

  it('limits.maxPdfPages: 2 with pages "1-2" is within the limit', async () => {
    const opened = await openDocument(fixture("born-digital.pdf"), {
      env: getEnv(),
      pool,
      pages: "1-2",
      limits: { maxPdfPages: 2 },
    });
    expect(opened.selectedPages).toEqual([1, 2]);
    await opened.close();
  });

  it.each([["4"], ["2-5"], ["1,9"]])(
    "pages: %j beyond the document → bad_page_list from openDocument",
    async (pages) => {
      const error = await expectOcrError(
        openDocument(fixture("born-digital.pdf"), { env: getEnv(), pool, pages }),
        "bad_page_list",
      );
      expect(error.message).toContain("3 pages");
    },
  );

  it("pages: garbage → bad_page_list", async () => {
    await expectOcrError(
      openDocument(fixture("born-digital.pdf"), { env: getEnv(), pool, pages: "first" }),
      "bad_page_list",
    );
  });

  it("a deadline already passed → deadline", async () => {
    const opened = await openDocument(fixture("born-digital.pdf"), { env: getEnv(), pool });
    try {
      await expectOcrError(opened.extract({ deadline: Date.now() - 1 }), "deadline");
    } finally {
      await opened.close();
    }
  });
});

describe("scanned.pdf: an image-only page is rendered and OCR'd", () => {
  let doc: ExtractedDocument;
  beforeAll(async () => {
    doc = await extractDocument(fixture("scanned.pdf"), { env: getEnv(), pool });
  });

  it("one page, source ocr, confidence in 0–100", () => {
    expect(doc.pages.map((p) => [p.number, p.source])).toEqual([[1, "ocr"]]);
    expect(doc.pages[0]!.confidence).toBeGreaterThan(0);
    expect(doc.pages[0]!.confidence).toBeLessThanOrEqual(100);
  });

  it("character error rate < 0.02", () => {
    expect(characterErrorRate(render(doc, "text"), PARAGRAPH)).toBeLessThan(0.02);
  });

  it("json: schema, boxes in [0, 1] of the whole page (the text sits in its top part)", () => {
    const page = parsedJson(doc).pages[0]!;
    expect([page.width, page.height]).toEqual(LETTER_300DPI);
    const words = page.blocks.flatMap((b) => b.lines.flatMap((l) => l.words));
    // The scan is placed 36 pt from the left of 612 and is 540 pt wide; its text is in its upper half.
    expect(Math.min(...words.map((w) => w.bbox[0]))).toBeGreaterThan(36 / 612);
    expect(Math.max(...words.map((w) => w.bbox[3]))).toBeLessThan(0.25);
  });
});

describe("mixed.pdf: a text page and a scanned page", () => {
  let doc: ExtractedDocument;
  beforeAll(async () => {
    doc = await extractDocument(fixture("mixed.pdf"), { env: getEnv(), pool });
  });

  it("sources [text-layer, ocr]", () => {
    expect(doc.pages.map((p) => p.source)).toEqual(["text-layer", "ocr"]);
    expect(doc.pages.map((p) => p.number)).toEqual([1, 2]);
  });

  it("page 1 exactly from its text layer, page 2 by OCR within its bound", () => {
    expect(doc.pages[0]!.confidence).toBe(100);
    expect(characterErrorRate(doc.pages[0]!.text, pageTruth(0))).toBeLessThan(0.005);
    expect(characterErrorRate(doc.pages[1]!.text, PARAGRAPH)).toBeLessThan(0.02);
    expect(doc.pages[1]!.confidence).toBeLessThanOrEqual(100);
  });

  it("text has one form feed; markdown one separator; json passes the schema", () => {
    expect(render(doc, "text").split("\f")).toHaveLength(2);
    expect(render(doc, "markdown").split("\n\n---\n\n")).toHaveLength(2);
    expect(parsedJson(doc).pages.map((p) => p.source)).toEqual(["text-layer", "ocr"]);
  });

  it("document confidence is the character-weighted mean: between the OCR page's and 100", () => {
    const confidence = documentConfidence(doc);
    expect(confidence).toBeGreaterThanOrEqual(doc.pages[1]!.confidence);
    expect(confidence).toBeLessThanOrEqual(100);
  });

  it('pages: "2" reads only the scanned page', async () => {
    const only = await extractDocument(fixture("mixed.pdf"), { env: getEnv(), pool, pages: "2" });
    expect(only.pages.map((p) => [p.number, p.source])).toEqual([[2, "ocr"]]);
    expect(characterErrorRate(render(only, "text"), PARAGRAPH)).toBeLessThan(0.02);
  });
});
