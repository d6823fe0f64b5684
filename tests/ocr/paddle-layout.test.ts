import { describe, expect, it } from "vitest";
import type { DecodedChar } from "@/lib/ocr/engine/paddle/decode";
import type { TextBox } from "@/lib/ocr/engine/paddle/detect";
import { readingOrder, type Gap } from "@/lib/ocr/engine/paddle/layout";

// Word spaces in PaddleOCR's reading: from its space class, and from the word gaps Tesseract saw in the same box.

/** A box 10 px per frame wide, its left end at x = 100, its characters one per frame with a blank frame between. */
function boxOf(text: string, spaces: Record<number, number> = {}, angle = 0) {
  const frames = text.length * 2;
  const w = frames * 10;
  const box: TextBox = { cx: 100 + w / 2, cy: 50, w, h: 40, angle, x0: 100, y0: 30, x1: 100 + w, y1: 70, score: 0.9 };
  const chars: DecodedChar[] = [...text].map((ch, i) => ({
    text: ch,
    prob: 0.95,
    first: 2 * i,
    last: 2 * i,
    spaceBefore: spaces[i] ?? 0,
  }));
  return { box, chars, frameWidth: 10 };
}

/** Raster x of the boundary before character `i` of boxOf (the blank frame between i − 1 and i). */
const before = (i: number) => 100 + (2 * i - 0.5) * 10;

function words(reading: ReturnType<typeof boxOf> & { gaps?: Gap[] }): string[] {
  return readingOrder([reading]).flatMap((line) => line.words.map((w) => w.text));
}

describe("PaddleOCR word spaces", () => {
  it("splits where the space class scored, and nowhere else without gaps", () => {
    expect(words(boxOf("TAXINVOICE"))).toEqual(["TAXINVOICE"]);
    expect(words(boxOf("TAXINVOICE", { 3: 0.4 }))).toEqual(["TAX", "INVOICE"]);
    expect(words(boxOf("TAXINVOICE", { 3: 0.05 }))).toEqual(["TAXINVOICE"]);
  });

  it("splits at the character boundary nearest the middle of each gap another reading saw", () => {
    const gap: Gap = [before(3) - 4, before(3) + 6];
    expect(words({ ...boxOf("TAXINVOICE"), gaps: [gap] })).toEqual(["TAX", "INVOICE"]);
    const two: Gap[] = [
      [before(5) - 3, before(5) + 3],
      [before(8) - 2, before(8) + 8],
    ];
    expect(words({ ...boxOf("BAHRUJOHOR81200"), gaps: two })).toEqual(["BAHRU", "JOH", "OR81200"]);
  });

  it("adds no second space where the space class already split inside the gap", () => {
    // The gap's middle is nearest the boundary before "I", but the space class split before "N", also inside it.
    const reading = { ...boxOf("TAXINVOICE", { 4: 0.3 }), gaps: [[before(3) - 2, before(3) + 12]] as Gap[] };
    expect(words(reading)).toEqual(["TAXI", "NVOICE"]);
  });

  it("never parts a word before a closing mark or after an opening one", () => {
    // The space class scores a little before a full stop, and a gap seen in the ink lands a frame off.
    expect(words(boxOf("CORP.", { 4: 0.6 }))).toEqual(["CORP."]);
    expect(words(boxOf("(S)X", { 1: 0.6 }))).toEqual(["(S)X"]);
    // The gap between "C." and "D." nearest the boundary before the full stop: the next boundary inside it is taken.
    expect(words({ ...boxOf("C.D."), gaps: [[before(1) - 2, before(2) + 12]] })).toEqual(["C.", "D."]);
  });

  it("ignores a gap that lies beyond the characters", () => {
    expect(words({ ...boxOf("TOTAL"), gaps: [[400, 420]] })).toEqual(["TOTAL"]);
  });

  it("measures gaps along a slanted box", () => {
    const slanted = boxOf("TAXINVOICE", {}, 0.05);
    const { box } = slanted;
    // The boundary before "I" lies 55 px along the box from its left end; on the centre line that is cx + (55 − w/2)·cos.
    const x = box.cx + (before(3) - 100 - box.w / 2) * Math.cos(0.05);
    expect(words({ ...slanted, gaps: [[x - 3, x + 3]] })).toEqual(["TAX", "INVOICE"]);
  });
});
