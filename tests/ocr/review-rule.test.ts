import { describe, expect, it } from "vitest";
import { DISPUTED_SURE, REVIEW_BELOW, REVIEW_BELOW_PADDLE, markReview, needsReview } from "@/lib/ocr/model/document";

const box: [number, number, number, number] = [0, 0, 0.1, 0.1];
const word = (text: string, confidence: number, alternative?: string) => ({
  text,
  confidence,
  bbox: box,
  ...(alternative !== undefined && { alternative }),
});

describe("which words need a second look (review)", () => {
  it("holds each reader to its own confidence bar: PaddleOCR's runs higher than Tesseract's", () => {
    const between = (REVIEW_BELOW + REVIEW_BELOW_PADDLE) / 2;
    expect(needsReview(word("Total", between), "tesseract")).toBe(false);
    expect(needsReview(word("Total", between), "paddle")).toBe(true);
    expect(needsReview(word("Total", REVIEW_BELOW - 1), "tesseract")).toBe(true);
    expect(needsReview(word("Total", REVIEW_BELOW_PADDLE), "paddle")).toBe(false);
    // Punctuation alone is never worth a look.
    expect(needsReview(word("—", 10), "tesseract")).toBe(false);
  });

  it("marks a word the other reader read differently unless its reader was near certain of it", () => {
    expect(needsReview(word("18.00", DISPUTED_SURE - 1, "18.70"), "paddle")).toBe(true);
    expect(needsReview(word("18.00", DISPUTED_SURE, "18.70"), "paddle")).toBe(false);
    expect(needsReview(word("18.00", 99.5, "18.00"), "paddle")).toBe(false);
  });

  it("always marks a word whose ends the readers disagree on: the other reading holds it with more, or has a space", () => {
    expect(needsReview(word("XN.O)", 99.9, "(ALXN.O)"), "paddle")).toBe(true);
    expect(needsReview(word("270080", 99.9, "27 70080"), "paddle")).toBe(true);
  });

  it("marks OCR pages by their reader and never a PDF's own text", () => {
    const page = (source: "ocr" | "text-layer", engine: "tesseract" | "paddle") => ({
      source,
      engine,
      blocks: [
        {
          text: "Total",
          confidence: 84,
          bbox: box,
          lines: [
            {
              text: "Total",
              confidence: 84,
              bbox: box,
              words: [word("Total", (REVIEW_BELOW + REVIEW_BELOW_PADDLE) / 2)],
            },
          ],
        },
      ],
    });
    const marked = (p: ReturnType<typeof page>) => markReview(p).blocks[0]!.lines[0]!.words[0]!;
    expect(marked(page("ocr", "paddle"))).toMatchObject({ review: true });
    expect(marked(page("ocr", "tesseract"))).not.toHaveProperty("review");
    expect(marked(page("text-layer", "paddle"))).not.toHaveProperty("review");
  });
});
