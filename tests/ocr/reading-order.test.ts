import { describe, expect, it } from "vitest";
import { blockOf, lineOf, normalizeBox, ocrPageOf, type ExtractedPage, type OcrLine } from "@/lib/ocr/model/document";
import { orderReading } from "@/lib/ocr/engine/reading-order";

// The reading order over line boxes (lib/ocr/engine/reading-order.ts), on pages built from boxes: what a recognizer
// hands over. Pixels on a 1000×1400 page, text 20 px high.

const W = 1000;
const H = 1400;
const TEXT = 20;

/** A line of words set from `x` at `y`, each word 9 px per character and a 9 px space apart. */
function line(text: string, x: number, y: number): OcrLine {
  let left = x;
  const words = text.split(" ").map((word) => {
    const box = [left, y, left + 9 * word.length, y + TEXT] as const;
    left += 9 * (word.length + 1);
    return { text: word, confidence: 90, bbox: normalizeBox(box, W, H) };
  });
  return lineOf(words);
}

/** A page of blocks, each a list of lines, in the order a recognizer gave them. */
function page(blocks: OcrLine[][], engine: "tesseract" | "paddle" = "tesseract"): ExtractedPage {
  return ocrPageOf(
    { number: 1, width: W, height: H, engine },
    blocks.map((lines) => blockOf(lines)),
    blocks.map((lines) => lines.map(() => ({ size: TEXT }))),
  );
}

const words = (p: ExtractedPage) => p.text.split(/\s+/).filter(Boolean);

/** A column of prose: `rows` lines of five words each starting at `x`, from `top`, 30 px apart. */
function column(tag: string, x: number, top: number, rows: number): OcrLine[] {
  return Array.from({ length: rows }, (_, i) =>
    line(`${tag}${i}a ${tag}${i}b ${tag}${i}c ${tag}${i}d ${tag}${i}e`, x, top + 30 * i),
  );
}

describe("orderReading", () => {
  it("reads two columns of running text one after the other, though the recognizer gave them row by row", () => {
    const left = column("L", 50, 200, 8);
    const right = column("R", 540, 200, 8);
    // Row by row: what PaddleOCR's boxes (or Tesseract's paragraphs cut at aligned breaks) give.
    const interleaved = left.flatMap((l, i) => [l, right[i]!]);
    const ordered = orderReading(page([interleaved], "paddle"));
    expect(words(ordered)).toEqual([...left, ...right].flatMap((l) => l.text.split(" ")));
    expect(ordered.blocks.map((b) => b.lines.length)).toEqual([8, 8]);
    expect(ordered.lineStyles.map((s) => s.length)).toEqual([8, 8]);
  });

  it("cuts lines a recognizer ran across the gutter (Tesseract, when the columns' lines stand in the same rows)", () => {
    const left = column("L", 50, 200, 6);
    const right = column("R", 540, 200, 6);
    // One line per row, its words from both columns, its baseline from end to end.
    const across = left.map((l, i) => {
      const joined = lineOf([...l.words, ...right[i]!.words]);
      return {
        ...joined,
        baseline: [joined.bbox[0], joined.bbox[3], joined.bbox[2], joined.bbox[3]] as OcrLine["bbox"],
      };
    });
    const ordered = orderReading(page([across]));
    expect(words(ordered)).toEqual([...left, ...right].flatMap((l) => l.text.split(" ")));
    const first = ordered.blocks[0]!.lines[0]!;
    expect(first.text).toBe(left[0]!.text);
    expect(first.baseline).toEqual([first.bbox[0], first.bbox[3], first.bbox[2], first.bbox[3]]);
  });

  it("reads a title over both columns first, a caption across them in its place, then each column's stretch", () => {
    const title = line("A title over both columns of this page set wide across the whole width", 50, 100);
    const upperLeft = column("A", 50, 200, 5);
    const upperRight = column("B", 540, 200, 5);
    const caption = line("Figure 1: a caption that runs across both of the columns below the top part", 50, 400);
    const lowerLeft = column("C", 50, 460, 5);
    const lowerRight = column("D", 540, 460, 5);
    const rows = [
      title,
      ...upperLeft.flatMap((l, i) => [l, upperRight[i]!]),
      caption,
      ...lowerLeft.flatMap((l, i) => [l, lowerRight[i]!]),
    ];
    const ordered = orderReading(page(rows.map((l) => [l])));
    const expected = [title, ...upperLeft, ...upperRight, caption, ...lowerLeft, ...lowerRight];
    expect(words(ordered)).toEqual(expected.flatMap((l) => l.text.split(" ")));
  });

  it("reads a receipt's items and prices row by row, each row one line, although whitespace runs between them", () => {
    const items = ["FRIED NOODLE SET", "PORK RICE", "VEGETABLE SOUP BOWL", "ICED TEA", "TOTAL AMOUNT", "CASH"];
    const prices = ["2.00", "2.70", "1.10", "1.50", "7.30", "10.00"];
    // Tesseract's blocks of such a page: the item column, then the price column.
    const itemLines = items.map((text, i) => line(text, 50, 200 + 30 * i));
    const priceLines = prices.map((text, i) => line(text, 700, 200 + 30 * i));
    const ordered = orderReading(page([itemLines, priceLines]));
    expect(ordered.text.split("\n").filter(Boolean)).toEqual(items.map((item, i) => `${item} ${prices[i]}`));
  });

  it("reads a form's labels and values across, and keeps a single column's lines as they were", () => {
    const labels = ["Name:", "Date:", "Amount:", "Signed:"].map((text, i) => line(text, 50, 200 + 40 * i));
    const values = ["Jane Smith", "2/26/98", "$ 58,500", "J. Smith"].map((text, i) => line(text, 300, 200 + 40 * i));
    const form = orderReading(page([labels, values]));
    expect(form.text.replace(/\n+/g, " | ")).toBe(
      "Name: Jane Smith | Date: 2/26/98 | Amount: $ 58,500 | Signed: J. Smith",
    );

    const single = page([column("P", 50, 200, 4), column("Q", 50, 340, 3)]);
    const same = orderReading(single);
    expect(same.text).toBe(single.text);
    expect(same.blocks.map((b) => b.lines.length)).toEqual([4, 3]);
  });

  it("does not swap the lines of a slightly skewed column (tall boxes overlapping the next line's)", () => {
    const lines = Array.from({ length: 6 }, (_, i) => {
      const l = line(`line${i} with several words in it set wide`, 50, 200 + 22 * i);
      // A skewed line's box grows taller and overlaps its neighbours vertically.
      return { ...l, bbox: [l.bbox[0], l.bbox[1] - 0.012, l.bbox[2], l.bbox[3] + 0.012] as OcrLine["bbox"] };
    });
    const ordered = orderReading(page([lines]));
    expect(ordered.text).toBe(lines.map((l) => l.text).join("\n"));
  });

  it("keeps the words, their boxes and confidences, and the page's confidence", () => {
    const source = page([column("L", 50, 200, 4), column("R", 540, 200, 4)].map((c) => c));
    const ordered = orderReading(source);
    const all = (p: ExtractedPage) =>
      p.blocks.flatMap((b) => b.lines.flatMap((l) => l.words)).sort((a, b) => a.text.localeCompare(b.text));
    expect(all(ordered)).toEqual(all(source));
    expect(ordered.confidence).toBe(source.confidence);
  });
});
