import { loadImage } from "@napi-rs/canvas";
import { beforeAll, describe, expect, it } from "vitest";
import { drawGrey, type GreyRaster } from "@/lib/ocr/engine/raster";
import { chooseScale, parseTsv } from "@/lib/ocr/engine/recognize";
import { analyzeInk, flattenMargins, glyphCoverage, otsuThreshold } from "@/lib/ocr/engine/text-size";
import { makesLines } from "@/lib/ocr/engine/orientation";
import { blankSheetPhoto, fixture } from "../support/ocr";

async function raster(file: string): Promise<GreyRaster> {
  const image = await loadImage(Buffer.from(fixture(file)));
  return drawGrey(image, image.width, image.height);
}

function blank(width: number, height: number, value = 255): GreyRaster {
  return { width, height, data: new Uint8Array(width * height).fill(value) };
}

describe("otsuThreshold", () => {
  it("splits a bimodal histogram between its modes", () => {
    const data = new Uint8Array(1000);
    data.fill(30, 0, 200); // ink
    data.fill(220, 200); // paper
    const t = otsuThreshold(data);
    expect(t).toBeGreaterThanOrEqual(30);
    expect(t).toBeLessThan(220);
  });

  it("works whichever class is larger", () => {
    const data = new Uint8Array(1000);
    data.fill(40, 0, 900);
    data.fill(200, 900);
    const t = otsuThreshold(data);
    expect(t).toBeGreaterThanOrEqual(40);
    expect(t).toBeLessThan(200);
  });
});

describe("analyzeInk on generated pages", () => {
  const rasters = new Map<string, GreyRaster>();
  beforeAll(async () => {
    for (const file of ["paragraph.png", "small-text.png", "two-column.png", "receipt.png"])
      rasters.set(file, await raster(file));
  });
  const get = (file: string) => rasters.get(file)!;

  it.each([
    // 36 px Liberation Sans: x-height ≈ 19 px, capitals ≈ 26 px
    ["paragraph.png", 15, 30],
    // 11 px text: the upscaling path
    ["small-text.png", 3, 9],
    // 30 px text
    ["two-column.png", 12, 26],
    ["receipt.png", 15, 30],
  ] as const)("%s: text height in [%i, %i] px", (file, min, max) => {
    const { textHeight } = analyzeInk(get(file));
    expect(textHeight).not.toBeNull();
    expect(textHeight!).toBeGreaterThanOrEqual(min);
    expect(textHeight!).toBeLessThanOrEqual(max);
  });

  it("small text measures much smaller than the same text at 36 px", () => {
    const small = analyzeInk(get("small-text.png")).textHeight!;
    const large = analyzeInk(get("paragraph.png")).textHeight!;
    expect(small).toBeLessThan(10);
    expect(large / small).toBeGreaterThan(2);
  });

  it("finds glyphs, a small ink ratio and a content box inside the page", () => {
    const r = get("paragraph.png");
    const analysis = analyzeInk(r);
    expect(analysis.glyphs.length).toBeGreaterThan(50);
    expect(analysis.inkRatio).toBeGreaterThan(0.005);
    expect(analysis.inkRatio).toBeLessThan(0.2);
    const box = analysis.content!;
    expect(box).not.toBeNull();
    expect(box.x0).toBeGreaterThanOrEqual(30); // the text starts at x = 40
    expect(box.x1).toBeLessThan(r.width);
    expect(box.y0).toBeGreaterThan(0);
    expect(box.y1).toBeLessThan(r.height);
  });

  it("white text on black measures like black on white", () => {
    const r = get("paragraph.png");
    const inverted: GreyRaster = { width: r.width, height: r.height, data: r.data.map((v) => 255 - v) };
    const normal = analyzeInk(r).textHeight!;
    const negative = analyzeInk(inverted).textHeight!;
    expect(Math.abs(normal - negative)).toBeLessThanOrEqual(2);
  });

  it("a blank page has no text height and no ink", () => {
    const analysis = analyzeInk(blank(300, 200));
    expect(analysis).toMatchObject({ textHeight: null, glyphs: [], inkRatio: 0, content: null });
  });

  it("a grey page inside white margins (a photo turned, its corners filled white): the glyphs on the grey are found", () => {
    // One threshold splits the three tones between the margins and the paper: the margins become the ink and touch the
    // border, so there are no glyphs and the page would be taken for blank.
    const r = get("paragraph.png");
    const framed: GreyRaster = { width: r.width, height: r.height, data: new Uint8Array(r.data.length) };
    const margin = Math.round(r.width * 0.2);
    for (let y = 0; y < r.height; y++) {
      for (let x = 0; x < r.width; x++) {
        const i = y * r.width + x;
        // Paper 150, ink as drawn (dark): the page's own tones mapped into 0–150; white beyond a diagonal corner cut.
        const inCorner = x + y < margin || r.width - 1 - x + (r.height - 1 - y) < margin || x < margin / 4;
        framed.data[i] = inCorner ? 255 : Math.round((r.data[i]! * 150) / 255);
      }
    }
    expect(analyzeInk({ ...framed, data: framed.data.map((v) => (v === 255 ? 255 : 150)) }, makesLines).glyphs).toEqual(
      [],
    ); // no text: nothing found
    expect(analyzeInk(framed).glyphs.length).toBeLessThan(10); // without a test of text, no second split
    const analysis = analyzeInk(framed, makesLines);
    const plain = analyzeInk(r);
    expect(analysis.glyphs.length).toBeGreaterThan(plain.glyphs.length * 0.8);
    expect(Math.abs(analysis.textHeight! - plain.textHeight!)).toBeLessThanOrEqual(2);
    expect(analysis.ink).toMatchObject({ dark: true });
    expect(analysis.ink!.threshold).toBeLessThan(150);
    // The white margins are read as the paper's grey: one threshold then splits ink from paper again.
    expect(analysis.margins).toMatchObject({ light: true });
    expect(analysis.margins!.paper).toBeGreaterThanOrEqual(140);
    expect(analysis.margins!.paper).toBeLessThanOrEqual(150);
    const flat = flattenMargins({ ...framed, data: framed.data.slice() }, analysis.margins);
    expect(flat.data.filter((v) => v > analysis.margins!.threshold).length).toBe(0);
    expect(analyzeInk(flat, makesLines).margins).toBeUndefined();
    expect(analyzeInk(r).margins).toBeUndefined();
  });

  it("a blank grey sheet inside white margins stays without glyphs: its grain split again makes specks, not lines", () => {
    // A photographed blank sheet (grey 150, grain ±15) turned onto white: split again, the grain gives ~150 glyph-sized
    // specks; they make no lines, so the page stays as the first split saw it (blank, no OCR of noise).
    const photo = blankSheetPhoto();
    const r = drawGrey(photo, 1100, 800);
    expect(analyzeInk(r, () => true).glyphs.length).toBeGreaterThan(50); // what the grain gives when anything is taken
    expect(analyzeInk(r, makesLines).glyphs.length).toBeLessThan(10);
  });

  it("a blank page lit unevenly, with dust, stays without glyphs: the second splits cut the lighting, not text", () => {
    const r = blank(600, 400);
    for (let y = 0; y < 400; y++)
      for (let x = 0; x < 600; x++) r.data[y * 600 + x] = 200 + Math.round((50 * (x + y)) / 1000);
    for (const [x, y] of [
      [100, 100],
      [300, 250],
      [500, 60],
    ] as const)
      r.data[y * 600 + x] = r.data[y * 600 + x + 1] = 90;
    expect(analyzeInk(r, makesLines)).toMatchObject({ glyphs: [], textHeight: null });
  });

  it("a frame around the page and a rule are not glyphs", () => {
    const r = blank(400, 300);
    for (let x = 0; x < 400; x++) {
      r.data[x] = 0;
      r.data[299 * 400 + x] = 0;
      r.data[150 * 400 + x] = 0; // a rule
    }
    for (let y = 0; y < 300; y++) {
      r.data[y * 400] = 0;
      r.data[y * 400 + 399] = 0;
    }
    expect(analyzeInk(r).glyphs).toEqual([]);
  });

  it("glyphCoverage: no word boxes cover nothing; one box over the page covers everything", () => {
    const r = get("paragraph.png");
    const analysis = analyzeInk(r);
    expect(glyphCoverage(analysis, [], r.width, r.height)).toBe(0);
    expect(glyphCoverage(analysis, [{ x0: 0, y0: 0, x1: r.width - 1, y1: r.height - 1 }], r.width, r.height)).toBe(1);
    // A box over the left quarter of the page covers some of the glyphs, not all.
    const half = glyphCoverage(analysis, [{ x0: 0, y0: 0, x1: r.width / 4, y1: r.height - 1 }], r.width, r.height);
    expect(half).toBeGreaterThan(0.1);
    expect(half).toBeLessThan(0.9);
  });
});

describe("chooseScale", () => {
  it.each([
    // [text height px, width, height, expected]
    ["unknown text height", null, 2000, 1000, 1],
    ["normal text", 20, 2000, 1000, 1],
    ["at the lower edge of the comfortable band", 13, 2000, 1000, 1],
    ["at the upper edge", 48, 2000, 1000, 1],
    ["small text: up to a 22 px target", 11, 500, 100, 2],
    ["tiny text: capped at 3×", 4, 500, 100, 3],
    ["huge text: down to the target", 88, 4000, 3000, 0.25],
  ] as const)("%s: %j px on %i×%i → %d", (_name, textHeight, width, height, expected) => {
    expect(chooseScale(textHeight, width, height)).toBeCloseTo(expected, 5);
  });

  it("small text scales up (> 1) but never past 3", () => {
    for (const h of [12, 10, 8, 6, 5, 3, 1]) {
      const scale = chooseScale(h, 800, 600);
      expect(scale).toBeGreaterThan(1);
      expect(scale).toBeLessThanOrEqual(3);
    }
  });

  it("huge text scales down (< 1)", () => {
    for (const h of [49, 60, 120, 400]) expect(chooseScale(h, 4000, 4000)).toBeLessThan(1);
  });

  it("a large page with small text is capped by the pixel budget handed to Tesseract", () => {
    const scale = chooseScale(8, 6000, 6000);
    expect(scale).toBeLessThan(22 / 8);
    expect(6000 * 6000 * scale * scale).toBeLessThanOrEqual(36_000_001);
  });
});

describe("parseTsv", () => {
  // level page block par line word left top width height conf text
  const rows = [
    "level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext",
    "1\t1\t0\t0\t0\t0\t0\t0\t1000\t500\t-1\t",
    "2\t1\t1\t0\t0\t0\t100\t50\t600\t100\t-1\t",
    "3\t1\t1\t1\t0\t0\t100\t50\t600\t100\t-1\t",
    "4\t1\t1\t1\t1\t0\t100\t50\t600\t40\t-1\t",
    "5\t1\t1\t1\t1\t1\t100\t50\t200\t40\t90\tHello",
    "5\t1\t1\t1\t1\t2\t350\t50\t350\t40\t60\tworld!",
    "4\t1\t1\t1\t2\t0\t100\t110\t300\t40\t-1\t",
    "5\t1\t1\t1\t2\t1\t100\t110\t300\t40\t80\tAgain",
    "2\t1\t2\t0\t0\t0\t100\t300\t950\t300\t-1\t",
    "3\t1\t2\t1\t0\t0\t100\t300\t950\t300\t-1\t",
    "4\t1\t2\t1\t1\t0\t100\t300\t950\t30\t-1\t",
    "5\t1\t2\t1\t1\t1\t100\t300\t100\t30\t95\tSecond",
    "5\t1\t2\t1\t1\t2\t250\t300\t50\t30\t-1\t ",
    "5\t1\t2\t1\t1\t3\t900\t300\t150\t30\t30\tedge",
    "",
  ];
  const tsv = rows.join("\n");
  const { page, score, wordBoxes } = parseTsv(tsv, { number: 2, width: 1000, height: 500 });

  it("builds blocks (Tesseract paragraphs) → lines → words, skipping empty words and non-word rows", () => {
    expect(page.number).toBe(2);
    expect(page.source).toBe("ocr");
    expect([page.width, page.height]).toEqual([1000, 500]);
    expect(page.blocks.map((b) => b.lines.map((l) => l.words.map((w) => w.text)))).toEqual([
      [["Hello", "world!"], ["Again"]],
      [["Second", "edge"]],
    ]);
    expect(page.blocks.map((b) => b.text)).toEqual(["Hello world!\nAgain", "Second edge"]);
    expect(page.text).toBe("Hello world!\nAgain\n\nSecond edge");
    expect(wordBoxes).toHaveLength(5);
  });

  it("normalizes boxes to the page (clamped to [0, 1]) and unions them upwards", () => {
    const [hello, world] = page.blocks[0]!.lines[0]!.words;
    expect(hello!.bbox).toEqual([0.1, 0.1, 0.3, 0.18]);
    expect(world!.bbox).toEqual([0.35, 0.1, 0.7, 0.18]);
    expect(page.blocks[0]!.lines[0]!.bbox).toEqual([0.1, 0.1, 0.7, 0.18]);
    expect(page.blocks[0]!.bbox).toEqual([0.1, 0.1, 0.7, 0.3]);
    const edge = page.blocks[1]!.lines[0]!.words[1]!;
    expect(edge.bbox).toEqual([0.9, 0.6, 1, 0.66]); // 900 + 150 > 1000: clamped
  });

  it("confidence is the character-weighted mean of word confidences, at every level", () => {
    const [line1, line2] = page.blocks[0]!.lines;
    expect(line1!.confidence).toBeCloseTo((90 * 5 + 60 * 6) / 11, 1);
    expect(line2!.confidence).toBe(80);
    expect(page.blocks[0]!.confidence).toBeCloseTo((90 * 5 + 60 * 6 + 80 * 5) / 16, 1);
    expect(page.blocks[1]!.confidence).toBeCloseTo((95 * 6 + 30 * 4) / 10, 1);
    expect(page.confidence).toBeCloseTo((90 * 5 + 60 * 6 + 80 * 5 + 95 * 6 + 30 * 4) / 26, 1);
  });

  it("scores only credible words (confidence ≥ 40) by characters", () => {
    expect(score).toBeCloseTo((5 * 90 + 6 * 60 + 5 * 80 + 6 * 95) / 100, 5);
  });

  it("line styles carry each line's glyph size in source pixels", () => {
    expect(page.lineStyles).toEqual([[{ size: 40 }, { size: 40 }], [{ size: 30 }]]);
  });

  it("maps raster boxes back to source pixels (scale and crop undone)", () => {
    const scaled = parseTsv(tsv, {
      number: 1,
      width: 500,
      height: 250,
      toSource: ([x0, y0, x1, y1]) => [x0 / 2, y0 / 2, x1 / 2, y1 / 2],
    });
    expect(scaled.page.blocks[0]!.lines[0]!.words[0]!.bbox).toEqual([0.1, 0.1, 0.3, 0.18]);
    expect(scaled.wordBoxes[0]).toEqual([50, 25, 150, 45]);
    expect(scaled.page.lineStyles[0]![0]!.size).toBe(20);
  });

  it("clamps confidences into 0–100 and survives junk rows", () => {
    const odd = parseTsv(
      ["5\t1\t1\t1\t1\t1\t0\t0\t10\t10\t250\tA", "garbage", "5\t1", "5\t1\t1\t1\t1\t2\t20\t0\t10\t10\t-5\tB"].join(
        "\n",
      ),
      {
        number: 1,
        width: 100,
        height: 100,
      },
    );
    expect(odd.page.blocks[0]!.lines[0]!.words.map((w) => w.confidence)).toEqual([100, 0]);
    expect(odd.page.confidence).toBe(50);
  });

  it("empty TSV → an empty page with confidence 0", () => {
    const empty = parseTsv("", { number: 1, width: 10, height: 10 });
    expect(empty.page).toMatchObject({ text: "", blocks: [], confidence: 0 });
  });
});
