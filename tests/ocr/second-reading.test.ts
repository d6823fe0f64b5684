import { describe, expect, it } from "vitest";
import type { BBox, ExtractedPage, OcrBlock } from "@/lib/ocr/model/document";
import type { PaddleReading, TextBox } from "@/lib/ocr/engine/paddle";
import type { PageReading, PreparedRaster } from "@/lib/ocr/engine/recognize";
import {
  chooseReading,
  confidentTesseractWords,
  KEEP_TESSERACT_ABOVE,
  MIN_GAP_HEIGHT_SHARE,
  PADDLE_FAIRLY_SURE,
  PADDLE_FIRST_COVERAGE,
  paddleSuffices,
  sideBySideText,
  PADDLE_MARGIN,
  PADDLE_SURE,
  paddlePageReading,
  SECOND_READING_BELOW_CONFIDENCE,
  SECOND_READING_MIN_WORDS,
  tesseractGaps,
  wantsSecondReading,
  lookalikesMended,
  PADDLE_WORD_SURE,
  withAlternatives,
} from "@/lib/ocr/engine/second-reading";
import { withOtherReading } from "@/lib/ocr/engine/paddle";
import { blockOf, lineOf, ocrPageOf, type OcrWord } from "@/lib/ocr/model/document";

function block(text: string[], bbox: BBox, confidence = 80): OcrBlock {
  const lines = text.map((line, i) => {
    const height = (bbox[3] - bbox[1]) / text.length;
    const lineBox: BBox = [bbox[0], bbox[1] + i * height, bbox[2], bbox[1] + (i + 1) * height];
    return {
      text: line,
      confidence,
      bbox: lineBox,
      words: line.split(" ").map((w) => ({ text: w, confidence, bbox: lineBox })),
    };
  });
  return { text: text.join("\n"), confidence, bbox, lines };
}

function reading(blocks: OcrBlock[], confidence: number, engine: "tesseract" | "paddle" = "tesseract"): PageReading {
  const page: ExtractedPage = {
    number: 1,
    width: 1000,
    height: 1000,
    source: "ocr",
    engine,
    confidence,
    text: blocks.map((b) => b.text).join("\n\n"),
    blocks,
    lineStyles: blocks.map((b) => b.lines.map(() => ({ size: 20 }))),
  };
  return { page, score: 0, psm: "3", coverage: 1 };
}

const receipt = ["TOTAL 12.50", "CASH 20.00", "CHANGE 7.50"];
/** A receipt long enough for its confidence to mean something (SECOND_READING_MIN_WORDS). */
const longReceipt = Array.from({ length: 8 }, (_, i) => `ITEM ${i + 1} 2.${i}0`);

describe("wantsSecondReading", () => {
  it("sends an English page Tesseract was unsure of", () => {
    expect(wantsSecondReading(reading([block(longReceipt, [0.1, 0.1, 0.9, 0.5])], 70), ["eng"])).toBe(true);
  });

  it("keeps pages Tesseract was sure of, non-English pages, empty pages and pages of a few words", () => {
    const sure = reading([block(longReceipt, [0.1, 0.1, 0.9, 0.5])], SECOND_READING_BELOW_CONFIDENCE);
    expect(wantsSecondReading(sure, ["eng"])).toBe(false);
    const french = reading([block(longReceipt, [0.1, 0.1, 0.9, 0.5])], 60);
    expect(wantsSecondReading(french, ["fra", "eng"])).toBe(false);
    expect(wantsSecondReading(reading([], 0), ["eng"])).toBe(false);
    const short = reading([block(receipt, [0.1, 0.1, 0.9, 0.3])], 60);
    expect(short.page.blocks[0]!.lines.flatMap((l) => l.words).length).toBeLessThan(SECOND_READING_MIN_WORDS);
    expect(wantsSecondReading(short, ["eng"])).toBe(false);
  });

  it("does not send a page Tesseract read as side-by-side columns (chooseReading would keep Tesseract's reading)", () => {
    const columns = reading(
      [block(longReceipt, [0.05, 0.1, 0.45, 0.9]), block(longReceipt, [0.55, 0.1, 0.95, 0.9])],
      70,
    );
    expect(wantsSecondReading(columns, ["eng"])).toBe(false);
  });
});

describe("wantsSecondReading with a recognizer that reads accents (PP-OCRv6)", () => {
  it("sends a French page Tesseract was unsure of", () => {
    const french = reading([block(longReceipt, [0.1, 0.1, 0.9, 0.5])], 60);
    expect(wantsSecondReading(french, ["fra", "eng"], { accents: true })).toBe(true);
    expect(wantsSecondReading(french, ["fra", "eng"], { accents: false })).toBe(false);
  });
});

describe("paddleSuffices: PaddleOCR's first reading stands alone", () => {
  const page = (blocks: OcrBlock[], confidence: number, coverage = 1): PageReading => ({
    ...reading(blocks, confidence, "paddle"),
    coverage,
  });
  const lines = Array.from({ length: 10 }, (_, i) => `Line ${i + 1} of running text here`);

  it("when sure of a page of one column that covers the page's text", () => {
    expect(paddleSuffices(page([block(lines, [0.1, 0.1, 0.9, 0.6])], 90), 90)).toBe(true);
  });

  it("not when unsure, when its words miss ink, on a short page, or on columns whose lines do not line up", () => {
    expect(paddleSuffices(page([block(lines, [0.1, 0.1, 0.9, 0.6])], 89), 90)).toBe(false);
    const missed = page([block(lines, [0.1, 0.1, 0.9, 0.6])], 99, PADDLE_FIRST_COVERAGE - 0.05);
    expect(paddleSuffices(missed, 90)).toBe(false);
    expect(paddleSuffices(page([block(receipt, [0.1, 0.1, 0.9, 0.3])], 99), 90)).toBe(false);
    // Two columns of ten lines, the right one's lines 0.6 of a line lower.
    const columns = page([block(lines, [0.05, 0.1, 0.45, 0.6]), block(lines, [0.55, 0.13, 0.95, 0.63])], 99);
    expect(sideBySideText(columns.page)).toBe(true);
    expect(paddleSuffices(columns, 90)).toBe(false);
  });

  it("a receipt's items and prices on shared rows are not columns", () => {
    const items = Array.from({ length: 10 }, (_, i) => `ITEM NUMBER ${i + 1}`);
    const prices = Array.from({ length: 10 }, (_, i) => `${i + 1}.50`);
    const rows = page([block(items, [0.05, 0.1, 0.5, 0.6]), block(prices, [0.7, 0.1, 0.9, 0.6])], 99);
    expect(sideBySideText(rows.page)).toBe(false);
    expect(paddleSuffices(rows, 90)).toBe(true);
  });
});

describe("chooseReading", () => {
  it("keeps PaddleOCR's reading of a single-column page", () => {
    const tesseract = reading([block(["T0TAL 12.5O", "CASH 2O.00", "CHANGE 7.50"], [0.1, 0.1, 0.9, 0.3])], 70);
    const paddle = reading([block(receipt, [0.1, 0.1, 0.9, 0.3], 95)], 95, "paddle");
    expect(chooseReading(tesseract, paddle).page.engine).toBe("paddle");
  });

  it("keeps Tesseract's reading of side-by-side columns (PaddleOCR reads across them)", () => {
    const left = block(["one two three", "four five six", "seven eight nine"], [0.05, 0.1, 0.45, 0.5]);
    const right = block(["alpha beta gamma", "delta epsilon zeta", "eta theta iota"], [0.55, 0.1, 0.95, 0.5]);
    const tesseract = reading([left, right], 70);
    const paddle = reading([block(["one two three alpha beta gamma"], [0.05, 0.1, 0.95, 0.5], 95)], 95, "paddle");
    expect(chooseReading(tesseract, paddle).page.engine).toBe("tesseract");
  });

  it("keeps PaddleOCR's reading only when PaddleOCR was sure of it, or fairly sure where Tesseract was lost", () => {
    const tesseract = (confidence: number) =>
      reading([block(["T0TAL 12.5O", "CASH 2O.00", "CHANGE 7.50"], [0.1, 0.1, 0.9, 0.3], confidence)], confidence);
    const paddle = (confidence: number) =>
      reading([block(receipt, [0.1, 0.1, 0.9, 0.3], confidence)], confidence, "paddle");
    expect(chooseReading(tesseract(75), paddle(PADDLE_SURE)).page.engine).toBe("paddle");
    expect(chooseReading(tesseract(75), paddle(PADDLE_SURE - 1)).page.engine).toBe("tesseract");
    // Tesseract lost (PADDLE_MARGIN below a fairly sure PaddleOCR).
    expect(chooseReading(tesseract(PADDLE_FAIRLY_SURE - PADDLE_MARGIN), paddle(PADDLE_FAIRLY_SURE)).page.engine).toBe(
      "paddle",
    );
    expect(
      chooseReading(tesseract(PADDLE_FAIRLY_SURE - PADDLE_MARGIN + 1), paddle(PADDLE_FAIRLY_SURE)).page.engine,
    ).toBe("tesseract");
    // Far surer than Tesseract, but not even fairly sure: a blurred print PaddleOCR misreads.
    expect(chooseReading(tesseract(30), paddle(PADDLE_FAIRLY_SURE - 1)).page.engine).toBe("tesseract");
  });

  it("does not count the words Tesseract made out of noise as text PaddleOCR missed", () => {
    const noise = block(["~ ;: ,. '' \\ ~~ ,,, :;", "'' ;; ~ .. ,; :: ~"], [0.1, 0.35, 0.9, 0.6], 20);
    const tesseract = reading([block(receipt, [0.1, 0.1, 0.9, 0.3], 60), noise, noise], 40);
    const paddle = reading([block(receipt, [0.1, 0.1, 0.9, 0.3], 95)], 95, "paddle");
    expect(chooseReading(tesseract, paddle).page.engine).toBe("paddle");
  });

  it("keeps Tesseract's reading when PaddleOCR read much less text (missed lines)", () => {
    const tesseract = reading([block(receipt, [0.1, 0.1, 0.9, 0.3])], 70);
    const paddle = reading([block(["TOTAL 12.50"], [0.1, 0.1, 0.9, 0.15], 99)], 99, "paddle");
    expect(chooseReading(tesseract, paddle).page.engine).toBe("tesseract");
  });
});

/** The raster both recognizers read: the crop (100, 50, 400×300) of a 1000×800 source, scaled 2×. */
const prepared = {
  crop: { x: 100, y: 50, width: 400, height: 300 },
  scale: 2,
  sourceWidth: 1000,
  sourceHeight: 800,
} as PreparedRaster;

describe("paddlePageReading", () => {
  const word = (text: string, box: [number, number, number, number], confidence = 90) => ({ text, confidence, box });
  // Detected boxes, each one line of the page (the engine's reading order groups them afterwards).
  const boxes = [
    { words: [word("Invoice", [0, 0, 140, 40]), word("No.", [160, 0, 220, 40])] },
    { words: [word("Date:", [0, 50, 100, 90], 80), word("2024-01-05", [120, 50, 300, 90], 60)] },
    // A gap of three line heights: a new block.
    { words: [word("Total", [0, 210, 100, 250]), word("12.50", [400, 210, 500, 250])] },
  ];
  const paddle: PaddleReading = { confidence: 90, lines: boxes, boxes };

  it("maps raster boxes back to the source page and normalizes them", () => {
    const { page } = paddlePageReading(paddle, prepared, 3);
    expect(page).toMatchObject({ number: 3, width: 1000, height: 800, source: "ocr", engine: "paddle" });
    const invoice = page.blocks[0]!.lines[0]!.words[0]!;
    // x: 0/2 + 100 = 100 → 0.1; y: 0/2 + 50 = 50 → 0.0625; x1: 140/2 + 100 = 170 → 0.17; y1: 40/2 + 50 = 70 → 0.0875.
    expect(invoice.bbox).toEqual([0.1, 0.0625, 0.17, 0.0875]);
    expect(invoice.confidence).toBe(90);
  });

  it("groups lines into blocks at large gaps, in reading order", () => {
    const { page, score } = paddlePageReading(paddle, prepared, 1);
    expect(page.blocks.map((b) => b.text)).toEqual(["Invoice No.\nDate: 2024-01-05", "Total 12.50"]);
    expect(page.text).toBe("Invoice No.\nDate: 2024-01-05\n\nTotal 12.50");
    expect(page.lineStyles.map((s) => s.length)).toEqual([2, 1]);
    // Character-weighted: (7·90 + 3·90 + 5·80 + 10·60 + 5·90 + 5·90) / 35.
    expect(page.confidence).toBeCloseTo(80, 0);
    expect(score).toBeGreaterThan(0);
  });

  it("gives an empty page for an empty reading", () => {
    const { page } = paddlePageReading({ confidence: 0, lines: [], boxes: [] }, prepared, 1);
    expect(page.blocks).toEqual([]);
    expect(page.text).toBe("");
  });
});

describe("confidentTesseractWords", () => {
  /** A Tesseract word at raster box `[x0, y0, x1, y1]`, stored normalized to the source as pages store it. */
  const word = (text: string, [x0, y0, x1, y1]: [number, number, number, number], confidence: number) => ({
    text,
    confidence,
    bbox: [(x0 / 2 + 100) / 1000, (y0 / 2 + 50) / 800, (x1 / 2 + 100) / 1000, (y1 / 2 + 50) / 800] as BBox,
  });
  const page = (words: ReturnType<typeof word>[]) => {
    const line = { text: words.map((w) => w.text).join(" "), confidence: 90, bbox: [0, 0, 1, 1] as BBox, words };
    return reading([{ text: line.text, confidence: 90, bbox: line.bbox, lines: [line] }], 80);
  };
  /** A detected horizontal line box from x0 to x1 between y0 and y1 (grown by PaddleOCR like a real one). */
  const box = (x0: number, y0: number, x1: number, y1: number): TextBox => ({
    cx: (x0 + x1) / 2,
    cy: (y0 + y1) / 2,
    w: x1 - x0,
    h: y1 - y0,
    angle: 0,
    x0,
    y0,
    x1,
    y1,
    score: 0.9,
  });

  it("gives a line's words, in raster pixels and left to right, when Tesseract read all of it with confidence", () => {
    const known = confidentTesseractWords(
      page([word("12.50", [300, 110, 400, 140], 95), word("TOTAL", [40, 110, 200, 140], 96)]),
      prepared,
    );
    const words = known(box(20, 100, 420, 150));
    expect(words?.map((w) => w.text)).toEqual(["TOTAL", "12.50"]);
    const [x0, y0, x1, y1] = words![0]!.box;
    expect([x0, y0, x1, y1].map((v) => Math.round(v))).toEqual([40, 110, 200, 140]);
  });

  it("leaves a line to PaddleOCR when one word is unsure, a word sticks out, the words miss part of it, or none is in it", () => {
    const unsure = confidentTesseractWords(
      page([word("TOTAL", [40, 110, 200, 140], 96), word("12.5O", [300, 110, 400, 140], KEEP_TESSERACT_ABOVE - 1)]),
      prepared,
    );
    expect(unsure(box(20, 100, 420, 150))).toBeUndefined();
    // Tesseract's word runs far past the detected line: it joined it with something else.
    const wide = confidentTesseractWords(page([word("TOTAL12.50CASH", [40, 110, 700, 140], 96)]), prepared);
    expect(wide(box(20, 100, 420, 150))).toBeUndefined();
    // Tesseract read only the first half of the line.
    const partial = confidentTesseractWords(page([word("TOTAL", [40, 110, 200, 140], 96)]), prepared);
    expect(partial(box(20, 100, 620, 150))).toBeUndefined();
    expect(partial(box(20, 300, 420, 350))).toBeUndefined();
  });

  it("tesseractGaps: the gaps between a box's Tesseract words, whatever their confidence, if wide enough to be spaces", () => {
    // A 50 px high box: gaps of at least MIN_GAP_HEIGHT_SHARE · 50 = 7.5 px count.
    expect(MIN_GAP_HEIGHT_SHARE * 50).toBe(7.5);
    const gaps = tesseractGaps(
      page([
        word("TAX", [40, 110, 100, 140], 41),
        word("INVOICE", [120, 110, 260, 140], 96),
        word("JAL", [280, 110, 330, 140], 60),
        word("AN", [334, 110, 370, 140], 60),
        word("ELSEWHERE", [40, 310, 200, 340], 90),
      ]),
      prepared,
    );
    const round = (list: [number, number][]) => list.map((gap) => gap.map((v) => Math.round(v)));
    expect(round(gaps(box(20, 100, 420, 150)))).toEqual([
      [100, 120],
      [260, 280],
    ]);
    expect(gaps(box(20, 200, 420, 250))).toEqual([]);
  });
});

describe("lookalikesMended: letters read for digits and digits for letters", () => {
  it("mends l, I, O, o inside a run of digits and 0, 1 between lower-case letters", () => {
    expect(lookalikesMended("l00100000056-Fried")).toBe("100100000056-Fried");
    expect(lookalikesMended("2O19")).toBe("2019");
    expect(lookalikesMended("c0ntre")).toBe("contre");
    expect(lookalikesMended("wi1l")).toBe("will");
  });

  it("leaves codes, ordinals, sizes, prices and short runs as read", () => {
    for (const word of ["SN0012", "1st", "A4", "O1", "RM10.00", "T0TAL", "Tota1", "l", "1O"]) {
      expect(lookalikesMended(word)).toBe(word);
    }
  });
});

describe("withAlternatives: where the two recognizers read a word differently", () => {
  const W = 1000;
  const H = 1000;
  /** Words of one line at y 100–130, each [text, x0, x1, confidence] in pixels. */
  const pageOf = (engine: "tesseract" | "paddle", words: Array<[string, number, number, number]>) => {
    const line = lineOf(
      words.map(([text, x0, x1, confidence]): OcrWord => ({
        text,
        confidence,
        bbox: [x0 / W, 100 / H, x1 / W, 130 / H],
      })),
    );
    return ocrPageOf({ number: 1, width: W, height: H, engine }, [blockOf([line])], [[{ size: 30 }]]);
  };
  const wordsOf = (page: ExtractedPage) => page.blocks.flatMap((b) => b.lines.flatMap((l) => l.words));

  it("gives a word the other reading where its letters or digits differ, not where only case or marks do", () => {
    const paddle = pageOf("paddle", [
      ["TOTAL:", 100, 180, 99],
      ["Tatal", 200, 260, 99],
      ["NI", 300, 320, 99],
      ["COTINE", 325, 400, 99],
      ["12.50", 500, 560, 99],
    ]);
    const tesseract = pageOf("tesseract", [
      ["Total", 102, 170, 80],
      ["Total", 202, 258, 80],
      ["NICOTINE", 300, 400, 80],
      ["12.50", 502, 558, 80],
    ]);
    const words = wordsOf(withAlternatives(paddle, tesseract));
    expect(words.map((w) => [w.text, w.alternative])).toEqual([
      ["TOTAL:", undefined],
      ["Tatal", "Total"],
      ["NI", "NICOTINE"],
      ["COTINE", "NICOTINE"],
      ["12.50", undefined],
    ]);
  });

  it("takes Tesseract's word where Tesseract was sure of it and PaddleOCR was not, PaddleOCR's as the alternative", () => {
    const paddle = pageOf("paddle", [
      ["DFINK", 100, 180, PADDLE_WORD_SURE - 10],
      ["Fe1", 200, 240, PADDLE_WORD_SURE + 2],
    ]);
    const tesseract = pageOf("tesseract", [
      ["DRINK", 102, 178, KEEP_TESSERACT_ABOVE],
      ["Ref:", 202, 238, KEEP_TESSERACT_ABOVE + 5],
    ]);
    const kept = withAlternatives(paddle, tesseract);
    expect(wordsOf(kept).map((w) => [w.text, w.alternative])).toEqual([
      ["DRINK", "DFINK"],
      ["Fe1", "Ref:"],
    ]);
    expect(kept.blocks[0]!.lines[0]!.text).toBe("DRINK Fe1");
    // Tesseract's reading kept: nothing taken from PaddleOCR's, only its alternatives.
    const other = withAlternatives(tesseract, paddle);
    expect(wordsOf(other).map((w) => [w.text, w.alternative])).toEqual([
      ["DRINK", "DFINK"],
      ["Ref:", "Fe1"],
    ]);
  });

  it("gives none where the other recognizer read nothing there", () => {
    const paddle = pageOf("paddle", [["Hello", 100, 180, 99]]);
    const tesseract = pageOf("tesseract", [["world", 600, 680, 99]]);
    expect(withAlternatives(paddle, tesseract)).toBe(paddle);
  });
});

describe("withOtherReading: PaddleOCR's first reading split again with Tesseract's", () => {
  it("splits words at Tesseract's gaps and keeps Tesseract's words of a box it was sure of, recognizing nothing", () => {
    const box = (y: number): TextBox => ({
      cx: 200,
      cy: y,
      w: 200,
      h: 40,
      angle: 0,
      x0: 100,
      y0: y - 20,
      x1: 300,
      y1: y + 20,
      score: 0.9,
    });
    const chars = [..."TAXINVOICE"].map((text, i) => ({ text, prob: 0.95, first: 2 * i, last: 2 * i, spaceBefore: 0 }));
    const first: PaddleReading = {
      lines: [],
      boxes: [],
      confidence: 95,
      readings: [
        { box: box(50), chars, frameWidth: 10 },
        { box: box(150), chars, frameWidth: 10 },
      ],
      space: 0.4,
    };
    const known = [{ text: "KNOWN", confidence: 96, box: [100, 130, 200, 170] as [number, number, number, number] }];
    const again = withOtherReading(first, {
      known: (b) => (b.cy === 150 ? known : undefined),
      gaps: () => [[100 + 5 * 10 - 4, 100 + 5 * 10 + 6]],
    });
    expect(again.boxes.map((l) => l.words.map((w) => w.text))).toEqual([["TAX", "INVOICE"], ["KNOWN"]]);
  });
});
