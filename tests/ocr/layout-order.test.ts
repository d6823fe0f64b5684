import { describe, expect, it } from "vitest";
import { blockOf, lineOf, normalizeBox, ocrPageOf, type ExtractedPage, type OcrLine } from "@/lib/ocr/model/document";
import { orderReading } from "@/lib/ocr/engine/reading-order";

// The reading order (lib/ocr/engine/reading-order.ts) on pages built from boxes, one per kind of layout of the
// generated layout suite (scripts/make-layouts.ts): what Tesseract or PaddleOCR hand over for such pages, in the order
// they hand it over. Pixels on a 1700×2200 page, text 30 px high, words 14 px per character and a 12 px space apart.

const W = 1700;
const H = 2200;
const TEXT = 30;
const CHAR = 14;
const SPACE = 12;

interface Span {
  text: string;
  x: number;
}

/** A line of words from `x` at `y`; `spans` more runs of words on the same row (what a recognizer ran together). */
function line(text: string, x: number, y: number, ...spans: Span[]): OcrLine {
  const words = [{ text, x }, ...spans].flatMap((span) => {
    let left = span.x;
    return span.text.split(" ").map((word) => {
      const box = [left, y, left + CHAR * word.length, y + TEXT] as const;
      left += CHAR * word.length + SPACE;
      return { text: word, confidence: 90, bbox: normalizeBox(box, W, H) };
    });
  });
  return lineOf(words);
}

function page(blocks: OcrLine[][], engine: "tesseract" | "paddle" = "tesseract"): ExtractedPage {
  return ocrPageOf(
    { number: 1, width: W, height: H, engine },
    blocks.map((lines) => blockOf(lines)),
    blocks.map((lines) => lines.map(() => ({ size: TEXT }))),
  );
}

const words = (p: ExtractedPage) => p.text.split(/\s+/).filter(Boolean);
const textOf = (lines: OcrLine[]) => lines.flatMap((l) => l.text.split(" "));

/** `rows` lines of prose tagged `tag`, four words of five letters (~330 px wide), 44 px apart. */
function prose(tag: string, rows: number): string[] {
  return Array.from({ length: rows }, (_, i) => `${tag}${i}aa ${tag}${i}bb ${tag}${i}cc ${tag}${i}dd`);
}

describe("orderReading on the layout suite's kinds of page", () => {
  it("two columns under a title narrower than the page, a page number in the gutter: column after column", () => {
    // PaddleOCR: the title (ending past the gutter, under 60% of the page) closed every gap of the old projection,
    // and the page read straight across (CER 0.68 on the suite's two-column page).
    const title = line("A river and the towns along its wide banks", 120, 160);
    const wide = (tag: string) => prose(tag, 12).map((t, i) => `${t} ${tag}${i}ee ${tag}${i}ff`);
    const left = wide("L").map((t, i) => line(t, 120, 280 + 44 * i));
    const right = wide("R").map((t, i) => line(t, 680, 280 + 44 * i));
    const footer = line("12", 626, 2100);
    const rows = left.flatMap((l, i) => [right[i]!, l]);
    const ordered = orderReading(page([[title], rows, [footer]], "paddle"));
    expect(words(ordered)).toEqual([...textOf([title]), ...textOf(left), ...textOf(right), "12"]);
  });

  it("three columns whose rows a recognizer ran together across both gutters, spaces of the gutter's width", () => {
    const cols = ["A", "B", "C"].map((tag) => prose(tag, 10));
    const xs = [120, 470, 820];
    // PaddleOCR's lines: each row one line over the three columns, their word spaces 12 px, the gutters 34 px (too
    // narrow to cut the line at before the gutter was found).
    const rows = cols[0]!.map((_, i) =>
      line(cols[0]![i]!, xs[0]!, 300 + 44 * i, { text: cols[1]![i]!, x: xs[1]! }, { text: cols[2]![i]!, x: xs[2]! }),
    );
    const ordered = orderReading(page([rows], "paddle"));
    expect(words(ordered)).toEqual(cols.flat().flatMap((t) => t.split(" ")));
  });

  it("a running header over the columns is read first and a footer under one column last", () => {
    const header = [line("The Valley Review", 120, 60), line("Number 4", 1000, 60)];
    const title = line("Walking to the pass", 120, 160);
    const cols = ["A", "B", "C"].map((tag, c) => prose(tag, 10).map((t, i) => line(t, 120 + 400 * c, 300 + 44 * i)));
    const footer = line("Printed by the council", 540, 2100);
    // Tesseract's blocks and their order on the suite's three-column page: the footer read after the middle column
    // (under which it stands), the header's right part before the title.
    const ordered = orderReading(page([[header[0]!], [header[1]!], [title], cols[0]!, cols[1]!, [footer], cols[2]!]));
    expect(words(ordered)).toEqual([
      ...textOf(header),
      ...textOf([title]),
      ...textOf(cols.flat()),
      ...footer.text.split(" "),
    ]);
  });

  it("a column wrapped short beside a photograph (half its lines) is still a column", () => {
    // The magazine page: lines beside the photograph (more than half) fill under half the column, those under it all.
    const left = Array.from({ length: 16 }, (_, i) =>
      i < 9 ? line(`w${i}a w${i}b w${i}c`, 120, 300 + 44 * i) : line(prose("W", 16)[i]!, 120, 300 + 44 * i),
    );
    const right = prose("R", 16).map((t, i) => line(t, 520, 300 + 44 * i));
    const rows = left.flatMap((l, i) => [l, right[i]!]);
    const ordered = orderReading(page([rows], "paddle"));
    expect(words(ordered)).toEqual([...textOf(left), ...textOf(right)]);
  });

  it("a table of short cells with a wide gap between two of its columns reads row by row", () => {
    // Two-word cells joined two by two looked like running text on each side of the widest gap: the table was read
    // as two halves (CER 0.56 on the suite's table pages).
    const cells = [
      ["Long Meadow", "Bridge built", "Market day", "Inhabitants"],
      ["Upper Weir", "1803", "Monday", "960"],
      ["Hollow End", "1790", "Saturday", "2 207"],
      ["Stone Bridge", "1654", "Friday", "12 845"],
      ["Green Bank", "1688", "Thursday", "7 530"],
      ["Mill Ford", "1712", "Tuesday", "4 310"],
    ];
    const xs = [120, 420, 900, 1200];
    const rows = cells.map((row, r) => row.map((cell, c) => line(cell, xs[c]!, 300 + 80 * r)));
    const ordered = orderReading(page(rows, "paddle"));
    expect(ordered.blocks.flatMap((b) => b.lines.map((l) => l.text))).toEqual(cells.map((row) => row.join(" ")));
  });

  it("a gutter of line numbers joins each number to the line beside it", () => {
    // Tesseract reads the numbers as a block of their own, before the text: every number away from its line.
    const text = prose("T", 12).map((t, i) => line(t, 300, 200 + 68 * i));
    const numbers = text.map((_, i) => line(String(i + 1), i + 1 < 10 ? 176 : 162, 200 + 68 * i));
    const ordered = orderReading(page([numbers, text]));
    expect(ordered.blocks.flatMap((b) => b.lines.map((l) => l.text))).toEqual(text.map((l, i) => `${i + 1} ${l.text}`));
  });

  it("a form's labels and values, rows apart, read row by row: label, then its value", () => {
    // Labels of three words down the left, values of several beside them, a blank line or more between rows: each side
    // looked like a column of running text and the page was read as two columns, every label away from its value
    // (funsd/91355841 with PP-OCRv6: CER 0.110 → 0.648). Running text runs on from row to row.
    const fields = [
      ["Name of applicant:", "Margaret Hollis of Long Meadow"],
      ["Post office address:", "14 Mill Lane, Stonebridge"],
      ["Date of application:", "the third of April"],
      ["Goods to be sold:", "apples, cheese and bread"],
      ["Stall size requested:", "three metres by two"],
      ["Name of helper:", "Thomas Hollis, her brother"],
    ];
    const labels = fields.map(([label], i) => line(label!, 120, 300 + 120 * i));
    const values = fields.map(([, value], i) => line(value!, 560, 300 + 120 * i));
    for (const engine of ["tesseract", "paddle"] as const) {
      // Tesseract's blocks: labels, then values; PaddleOCR's: one box per field, top to bottom.
      const blocks = engine === "tesseract" ? [labels, values] : [labels.flatMap((l, i) => [values[i]!, l])];
      const ordered = orderReading(page(blocks, engine));
      expect(ordered.blocks.flatMap((b) => b.lines.map((l) => l.text))).toEqual(fields.map((f) => f.join(" ")));
    }
  });

  it("two columns with a paragraph break each are still read column after column", () => {
    // A blank line between paragraphs is one gap among many: the columns stay running text.
    const rows = (tag: string, x: number) => prose(tag, 12).map((t, i) => line(t, x, 300 + 44 * i + (i >= 6 ? 70 : 0)));
    const [left, right] = [rows("L", 120), rows("R", 680)];
    const ordered = orderReading(page([left.flatMap((l, i) => [l, right[i]!])], "paddle"));
    expect(words(ordered)).toEqual([...textOf(left), ...textOf(right)]);
  });

  it("a column of numbers with no lines beside them is not a gutter of line numbers", () => {
    // Numbers alone with nothing beside them: a list of figures, kept as they came.
    const numbers = Array.from({ length: 6 }, (_, i) => line(String(10 * (i + 1)), 120, 200 + 50 * i));
    const ordered = orderReading(page([numbers]));
    expect(words(ordered)).toEqual(["10", "20", "30", "40", "50", "60"]);
  });
});
