import path from "node:path";
import { createCanvas, GlobalFonts, type Canvas } from "@napi-rs/canvas";
import { afterAll, describe, expect, it } from "vitest";
import { characterErrorRate } from "@/bench/metrics";
import { extractDocument, render } from "@/lib/ocr";
import type { ExtractedDocument } from "@/lib/ocr/model";
import { blockOf, lineOf, ocrPageOf, type ExtractedPage } from "@/lib/ocr/model/document";
import { renderMarkdown } from "@/lib/ocr/render/markdown";
import { estimateLineDirection, judgeUprightness } from "@/lib/ocr/engine/orientation";
import { drawTurned, turnGlyphs, turnRaster } from "@/lib/ocr/engine/turned-raster";
import {
  boxFromTurned,
  boxToTurned,
  pageAsRead,
  pageAsSent,
  pageTurn,
  toTurned,
  type Quarter,
} from "@/lib/ocr/model/page-turn";
import { decodeImage, releaseSource, toPgm } from "@/lib/ocr/engine/raster";
import { flipBand } from "@/lib/ocr/engine/page-pipeline";
import { parseTsv, prepareRaster, recognizeRaster } from "@/lib/ocr/engine/recognize";
import { straightenRaster, turnTo } from "@/lib/ocr/engine/straighten";
import { TesseractPool } from "@/lib/ocr/engine/tesseract-pool";
import { blankSheetPhoto, createTestPool, parsedJson } from "../support/ocr";
import { getEnv } from "@/lib/env";

const pool = createTestPool();
afterAll(() => pool.terminate());

GlobalFonts.registerFromPath(path.resolve("tests/fixtures/fonts/LiberationSans-Regular.ttf"), "Orientation Sans");

/** Mixed case, as letters and reports are: the glyphs can tell which way up. */
const LETTER = [
  "Dear customer, thank you for your order of the",
  "garden tools. The hedge shears and the spade",
  "shipped today by parcel post and should reach",
  "you within three working days. Please keep this",
  "letter with your receipt for any future returns.",
];
/** All capitals and digits, as receipts are: only a reading can tell which way up. */
const RECEIPT = [
  "CORNER GROCERY STORE",
  "FRESH MILK 1L 1.29",
  "WHOLE BREAD 2.15",
  "RED APPLES 1KG 3.40",
  "TOTAL DUE 6.84",
];
/** A long receipt: 14 lines, each different. */
const FADED_LINES = Array.from(
  { length: 14 },
  (_, i) => `${RECEIPT[i % RECEIPT.length]} ${(i * 7.31).toFixed(2)} ITEM ${1000 + i * 37}`,
);

/** FADED_LINES as a thermal receipt prints them: small bold capitals, letters touching, and specks of `noise` strength. */
function fadedReceipt(noise: number): Canvas {
  const receipt = createCanvas(520, 40 + FADED_LINES.length * 22);
  const ctx = receipt.getContext("2d");
  ctx.fillStyle = "#ffffff";
  ctx.fillRect(0, 0, receipt.width, receipt.height);
  ctx.fillStyle = "#000000";
  ctx.font = 'bold 11px "Orientation Sans"';
  ctx.letterSpacing = "-0.6px";
  FADED_LINES.forEach((line, i) => ctx.fillText(line, 16, 30 + i * 22));
  let seed = 11;
  const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  const pixels = ctx.getImageData(0, 0, receipt.width, receipt.height);
  for (let i = 0; i < pixels.data.length; i += 4) {
    const v = Math.max(0, Math.min(255, pixels.data[i]! + (random() - 0.5) * noise));
    pixels.data[i] = pixels.data[i + 1] = pixels.data[i + 2] = v;
  }
  ctx.putImageData(pixels, 0, 0);
  return receipt;
}

interface Drawn {
  canvas: Canvas;
  /** Where `word` was drawn, pixels of the upright page. */
  wordBox: [number, number, number, number];
}

/** The upright page: `lines` in 30 px sans, and the box of `word` (first occurrence) as drawn. */
function uprightPage(lines: readonly string[], word: string): Drawn {
  const px = 30;
  const canvas = createCanvas(900, 80 + lines.length * 50);
  const ctx = canvas.getContext("2d");
  ctx.fillStyle = "#ffffff";
  ctx.fillRect(0, 0, canvas.width, canvas.height);
  ctx.fillStyle = "#000000";
  ctx.font = `${px}px "Orientation Sans"`;
  let wordBox: [number, number, number, number] | null = null;
  lines.forEach((line, i) => {
    const y = 60 + i * 50;
    ctx.fillText(line, 40, y);
    const at = line.indexOf(word);
    if (at >= 0 && !wordBox) {
      const x0 = 40 + ctx.measureText(line.slice(0, at)).width;
      const m = ctx.measureText(word);
      wordBox = [x0, y - m.actualBoundingBoxAscent, x0 + m.width, y + m.actualBoundingBoxDescent];
    }
  });
  if (!wordBox) throw new Error(`"${word}" is not on the page`);
  return { canvas, wordBox };
}

/** The page as a caller sends it: the upright page turned clockwise by `rotation` + `skew` degrees, as a PNG. */
function sent(
  drawn: Drawn,
  rotation: Quarter,
  skew: number,
): { png: Uint8Array; wordBox: [number, number, number, number]; width: number; height: number } {
  const turn = pageTurn(rotation, skew, drawn.canvas.width, drawn.canvas.height);
  const canvas = drawTurned(drawn.canvas, turn);
  // The drawn word's box, carried onto the turned page (its four corners, then their bounding box).
  const [x0, y0, x1, y1] = drawn.wordBox;
  const corners = [toTurned(turn, x0, y0), toTurned(turn, x1, y0), toTurned(turn, x0, y1), toTurned(turn, x1, y1)];
  const xs = corners.map((c) => c[0]);
  const ys = corners.map((c) => c[1]);
  const png = new Uint8Array(canvas.toBuffer("image/png"));
  const result = {
    png,
    wordBox: [Math.min(...xs), Math.min(...ys), Math.max(...xs), Math.max(...ys)] as [number, number, number, number],
    width: canvas.width,
    height: canvas.height,
  };
  releaseSource(canvas);
  return result;
}

function overlap(a: readonly number[], b: readonly number[]): number {
  const w = Math.max(0, Math.min(a[2]!, b[2]!) - Math.max(a[0]!, b[0]!));
  const h = Math.max(0, Math.min(a[3]!, b[3]!) - Math.max(a[1]!, b[1]!));
  const area = (r: readonly number[]) => (r[2]! - r[0]!) * (r[3]! - r[1]!);
  return (w * h) / (area(a) + area(b) - w * h);
}

describe("page turns: geometry", () => {
  it.each([
    [0, 0],
    [90, 0],
    [180, 0],
    [270, 0],
    [0, 7],
    [90, -3],
    [270, 9.5],
  ] as Array<[Quarter, number]>)(
    "rotation %i, skew %d: a word's box goes to the page as sent and back",
    (rotation, skew) => {
      const turn = pageTurn(rotation, skew, 1200, 800);
      const box: [number, number, number, number] = [300, 200, 520, 236];
      const back = boxToTurned(turn, boxFromTurned(turn, box));
      for (let i = 0; i < 4; i++) expect(back[i]).toBeCloseTo(box[i]!, 6);
    },
  );

  it("quarter turns swap the sides and land pixel on pixel", () => {
    expect(pageTurn(90, 0, 1200, 800)).toMatchObject({ turnedWidth: 800, turnedHeight: 1200 });
    const turn = pageTurn(90, 0, 1200, 800);
    // The top-left pixel of the page as sent is the top-right one once turned clockwise.
    expect(toTurned(turn, 0.5, 0.5)).toEqual([799.5, 0.5]);
  });

  it.each([90, 180, 270] as const)("a quarter turn of %i° moves pixels without resampling them", (rotation) => {
    const canvas = createCanvas(7, 5);
    const ctx = canvas.getContext("2d");
    const image = ctx.createImageData(7, 5);
    for (let i = 0; i < 35; i++) image.data.set([i * 7, 255 - i * 7, (i * 31) % 256, 255], i * 4);
    ctx.putImageData(image, 0, 0);
    const turned = drawTurned(canvas, pageTurn(rotation, 0, 7, 5));
    const pixels = turned.getContext("2d").getImageData(0, 0, turned.width, turned.height).data;
    for (let y = 0; y < 5; y++) {
      for (let x = 0; x < 7; x++) {
        const [tx, ty] = rotation === 90 ? [4 - y, x] : rotation === 180 ? [6 - x, 4 - y] : [y, 6 - x];
        expect(pixels[(ty * turned.width + tx) * 4]).toBe(image.data[(y * 7 + x) * 4]);
      }
    }
  });

  it("pageAsSent then pageAsRead gives back the page as read (lines, words and boxes)", () => {
    const words = (y: number) => [
      { text: "Hello", confidence: 90, bbox: [0.1, y, 0.3, y + 0.05] as [number, number, number, number] },
      { text: "world", confidence: 80, bbox: [0.35, y, 0.6, y + 0.05] as [number, number, number, number] },
    ];
    const turn = pageTurn(270, 4, 1000, 1400);
    const read: ExtractedPage = ocrPageOf(
      { number: 1, width: turn.turnedWidth, height: turn.turnedHeight, engine: "tesseract" },
      [blockOf([lineOf(words(0.2)), lineOf(words(0.3))])],
      [[{ size: 20 }, { size: 20 }]],
    );
    const asSent = pageAsSent(read, turn);
    expect(asSent).toMatchObject({ width: 1000, height: 1400, rotation: 270, skew: 4, text: read.text });
    const again = pageAsRead(asSent);
    expect([again.width, again.height]).toEqual([read.width, read.height]);
    const flat = (p: ExtractedPage) => p.blocks.flatMap((b) => b.lines.flatMap((l) => l.words.map((w) => w.bbox)));
    flat(again).forEach((bbox, i) => bbox.forEach((v, k) => expect(v).toBeCloseTo(flat(read)[i]![k]!, 3)));
  });
});

describe("page turns: what the glyphs say (no OCR)", () => {
  const drawn = uprightPage(LETTER, "parcel");
  it.each([
    [0, 0, 0],
    [90, 0, 270],
    [180, 0, 180],
    [270, 0, 90],
    [0, 3, 0],
    [0, -7, 0],
    [180, 7, 180],
    [90, -3, 270],
  ] as Array<[Quarter, number, Quarter]>)(
    "a letter turned %i° and skewed %d° is turned back by %i°",
    async (rotation, skew, expected) => {
      const turn = pageTurn(rotation, skew, drawn.canvas.width, drawn.canvas.height);
      const page = drawTurned(drawn.canvas, turn);
      const straight = await straightenRaster(
        page,
        page.width,
        page.height,
        prepareRaster(page, page.width, page.height),
      );
      expect(straight.turn.rotation).toBe(expected);
      expect(Math.abs(straight.turn.skew + skew)).toBeLessThan(0.5);
      if (straight.turned) releaseSource(straight.turned);
      releaseSource(page);
    },
  );

  it.each([2.6, -4.3, 6.8])(
    "a faded receipt of capitals and digits skewed %d° has its tilt measured to 0.15° (its ink pixels refine the glyph boxes' estimate: 0.2–0.4° off)",
    async (skew) => {
      // Small capitals and digits, as receipts print: the glyph boxes' edges alone put such tilts up to 0.7° off.
      const receipt = fadedReceipt(160);
      const page = drawTurned(receipt, pageTurn(0, skew, receipt.width, receipt.height));
      const straight = await straightenRaster(
        page,
        page.width,
        page.height,
        prepareRaster(page, page.width, page.height),
      );
      expect(Math.abs(straight.turn.skew + skew)).toBeLessThanOrEqual(0.15);
      for (const source of [page, receipt, straight.turned]) if (source) releaseSource(source);
    },
  );

  it.each([90, 180, 270] as const)(
    "a page turned %i° is read from the upright page's raster, pixel for pixel",
    async (rotation) => {
      // Small print, so that the raster is scaled up by a fractional factor (where scaling a turned copy of the page
      // drew other pixels than scaling the page itself), sent as PNG as a caller would.
      const small = createCanvas(700, 160);
      const ctx = small.getContext("2d");
      ctx.fillStyle = "#ffffff";
      ctx.fillRect(0, 0, small.width, small.height);
      ctx.fillStyle = "#000000";
      ctx.font = '16px "Orientation Sans"';
      LETTER.forEach((line, i) => ctx.fillText(line, 12, 24 + i * 28));
      const decode = async (canvas: Canvas) => decodeImage(new Uint8Array(canvas.toBuffer("image/png")), "png", 1e8);
      const upright = await decode(small);
      const turnedCanvas = drawTurned(small, pageTurn(rotation, 0, small.width, small.height));
      const page = await decode(turnedCanvas);
      const reference = prepareRaster(upright.source, upright.width, upright.height);
      expect(reference.scale % 1, `scale ${reference.scale}`).not.toBe(0);
      const straight = await straightenRaster(
        page.source,
        page.width,
        page.height,
        prepareRaster(page.source, page.width, page.height),
      );
      expect(straight.turn.rotation).toBe((360 - rotation) % 360);
      const { raster } = straight.prepared;
      expect([raster.width, raster.height]).toEqual([reference.raster.width, reference.raster.height]);
      let differing = 0;
      for (let i = 0; i < raster.data.length; i++) if (raster.data[i] !== reference.raster.data[i]) differing++;
      expect(differing).toBe(0);
      for (const source of [upright.source, page.source, turnedCanvas, small, straight.turned])
        if (source) releaseSource(source);
    },
  );

  it.each([90, 180, 270] as const)(
    "a tilted page sent turned %i° is straightened from the raster the same page sent upright gets",
    async (rotation) => {
      // The letter tilted 3° (a scan a little askew), then sent as it is and turned by a quarter: the estimate on the
      // glyphs turned upright and the skew drawn from the quarter-turned image give the upright sending's raster.
      const tilted = drawTurned(drawn.canvas, pageTurn(0, 3, drawn.canvas.width, drawn.canvas.height));
      const decode = async (canvas: Canvas) => decodeImage(new Uint8Array(canvas.toBuffer("image/png")), "png", 1e8);
      const upright = await decode(tilted);
      const sideways = drawTurned(tilted, pageTurn(rotation, 0, tilted.width, tilted.height));
      const page = await decode(sideways);
      const read = async (image: Awaited<ReturnType<typeof decode>>) =>
        straightenRaster(
          image.source,
          image.width,
          image.height,
          prepareRaster(image.source, image.width, image.height),
        );
      const reference = await read(upright);
      const straight = await read(page);
      expect(reference.turn).toMatchObject({ rotation: 0 });
      expect(Math.abs(reference.turn.skew + 3)).toBeLessThan(0.5);
      expect(straight.turn).toMatchObject({ rotation: (360 - rotation) % 360, skew: reference.turn.skew });
      const a = reference.prepared.raster;
      const b = straight.prepared.raster;
      expect([b.width, b.height], JSON.stringify([reference.turn, straight.turn])).toEqual([a.width, a.height]);
      let differing = 0;
      for (let i = 0; i < a.data.length; i++) if (a.data[i] !== b.data[i]) differing++;
      expect(differing).toBe(0);
      for (const source of [upright.source, page.source, tilted, sideways, straight.turned])
        if (source) releaseSource(source);
    },
  );

  it("an upright, straight page is not redrawn", async () => {
    const first = prepareRaster(drawn.canvas, drawn.canvas.width, drawn.canvas.height);
    const straight = await straightenRaster(drawn.canvas, drawn.canvas.width, drawn.canvas.height, first);
    expect(straight).toMatchObject({ verdict: "upright", turn: { rotation: 0, skew: 0 } });
    expect(straight.prepared).toBe(first);
    expect(straight.turned).toBeUndefined();
  });

  it("capitals and digits alone leave it unsure (the reading decides)", () => {
    const receipt = uprightPage(RECEIPT, "MILK");
    const prepared = prepareRaster(receipt.canvas, receipt.canvas.width, receipt.canvas.height);
    const direction = estimateLineDirection(prepared.analysis.glyphs, prepared.analysis.textHeight);
    expect(direction).toMatchObject({ quarter: 0 });
    const upsideDown = turnGlyphs(prepared.analysis.glyphs, 180, prepared.raster.width, prepared.raster.height);
    expect(judgeUprightness(upsideDown, prepared.analysis.textHeight).verdict).not.toBe("upright");
  });
});

describe("page turns: read by the engine", () => {
  const letter = uprightPage(LETTER, "parcel");
  const truth = LETTER.join("\n");
  const cases: Array<{ rotation: Quarter; skew: number; expected: Quarter }> = [
    { rotation: 90, skew: 0, expected: 270 },
    { rotation: 180, skew: 0, expected: 180 },
    { rotation: 270, skew: 0, expected: 90 },
    { rotation: 0, skew: 7, expected: 0 },
    { rotation: 0, skew: -7, expected: 0 },
    { rotation: 180, skew: 3, expected: 180 },
  ];
  const results = new Map<string, Promise<ExtractedDocument>>();
  const read = (key: string, png: Uint8Array) => {
    let result = results.get(key);
    if (!result)
      results.set(key, (result = extractDocument(png, { env: getEnv(), pool, deadline: Date.now() + 120_000 })));
    return result;
  };

  it.each(cases)(
    "turned $rotation° and skewed $skew°: read as upright (CER < 0.03), rotation $expected",
    async ({ rotation, skew, expected }) => {
      const page = sent(letter, rotation, skew);
      const doc = await read(`${rotation}/${skew}`, page.png);
      expect(characterErrorRate(render(doc, "text"), truth)).toBeLessThan(0.03);
      const [json] = parsedJson(doc).pages;
      expect(json!.rotation).toBe(expected);
      expect(Math.abs(json!.skew + skew)).toBeLessThan(0.6);
      // The page is reported at the size it was sent, and the word's box lands on the word as drawn on it.
      expect([json!.width, json!.height]).toEqual([page.width, page.height]);
      const word = json!.blocks.flatMap((b) => b.lines.flatMap((l) => l.words)).find((w) => w.text === "parcel");
      expect(word).toBeDefined();
      const [x0, y0, x1, y1] = word!.bbox;
      const box = [x0 * page.width, y0 * page.height, x1 * page.width, y1 * page.height];
      expect(overlap(box, page.wordBox)).toBeGreaterThan(0.5);
      // Markdown still sees the lines as they read.
      expect(characterErrorRate(renderMarkdown(doc), truth)).toBeLessThan(0.05);
    },
  );

  it("an upright page reports rotation 0 and skew 0", async () => {
    const page = sent(letter, 0, 0);
    const [json] = parsedJson(await read("0/0", page.png)).pages;
    expect(json).toMatchObject({ rotation: 0, skew: 0, width: page.width, height: page.height });
  });

  it("a long faded receipt sent upside down: a band of it read upside down decides, then the page is turned", async () => {
    const receipt = fadedReceipt(160);
    const png = new Uint8Array(
      drawTurned(receipt, pageTurn(180, 0, receipt.width, receipt.height)).toBuffer("image/png"),
    );
    const doc = await read("faded/180", png);
    expect(parsedJson(doc).pages[0]!.rotation).toBe(180);
    expect(doc.pages[0]!.trace?.orientation).toContain("flipped by a reading (a band of it first)");
    expect(characterErrorRate(render(doc, "text"), FADED_LINES.join("\n"))).toBeLessThan(0.15);
    releaseSource(receipt);
  });

  const tesseract = new TesseractPool({ size: 1, queueLimit: 16, maxJobsPerWorker: 50, createTimeoutMs: 60_000 });
  afterAll(() => tesseract.terminate());

  it("the band checked upside down holds the middle third of the page's lines, and the upright reading's score on them", async () => {
    const receipt = fadedReceipt(0);
    const prepared = prepareRaster(receipt, receipt.width, receipt.height);
    const reading = await recognizeRaster(prepared, 1, {
      pool: tesseract,
      langs: ["eng"],
      deadline: Date.now() + 60_000,
    });
    const flipped = await turnTo(receipt, pageTurn(180, 0, receipt.width, receipt.height));
    const band = flipBand(flipped.prepared, reading)!;
    expect(band).not.toBeNull();
    // The band turned back upright reads the middle lines, and none of the first or last three.
    const upright = turnRaster(band.prepared.raster, 180);
    const tsv = await tesseract.recognize({
      image: toPgm(upright),
      langs: ["eng"],
      params: { tessedit_pageseg_mode: "6" },
      deadline: Date.now() + 60_000,
      pixels: upright.width * upright.height,
    });
    const text = parseTsv(tsv, { number: 1, width: upright.width, height: upright.height }).page.text;
    // Each line ends in its own "ITEM 1xxx".
    for (const line of FADED_LINES.slice(5, 9)) expect(text).toContain(line.slice(-9));
    for (const line of [...FADED_LINES.slice(0, 3), ...FADED_LINES.slice(-3)])
      expect(text).not.toContain(line.slice(-9));
    const lines = reading.page.blocks.flatMap((b) => b.lines);
    expect(band.uprightScore).toBeGreaterThan(0);
    expect(band.uprightScore).toBeLessThan(reading.score * 0.6);
    expect(lines.length).toBeGreaterThanOrEqual(12);
    // A band with too little text to compare (a logo, a barcode) leaves the decision to the whole page.
    const sparse = {
      ...reading,
      page: {
        ...reading.page,
        blocks: reading.page.blocks.map((b) => ({
          ...b,
          lines: b.lines.map((l) => ({ ...l, words: l.words.map((w) => ({ ...w, text: "|" })) })),
        })),
      },
    };
    expect(flipBand(flipped.prepared, sparse)).toBeNull();
    releaseSource(receipt);
  });

  it("an upside-down receipt (capitals only) is turned by its reading", async () => {
    const receipt = uprightPage(RECEIPT, "MILK");
    const page = sent(receipt, 180, 0);
    const doc = await read("receipt/180", page.png);
    expect(characterErrorRate(render(doc, "text"), RECEIPT.join("\n"))).toBeLessThan(0.05);
    expect(parsedJson(doc).pages[0]!.rotation).toBe(180);
  });
});

/** LETTER in dark ink on paper of grey `paper` filling a 1000×420 frame (a phone photo's tones), tilted `degrees`. */
function greyLetter(paper: number, degrees: number): Canvas {
  const canvas = createCanvas(1000, 420);
  const ctx = canvas.getContext("2d");
  ctx.fillStyle = `rgb(${paper}, ${paper}, ${paper})`;
  ctx.fillRect(0, 0, canvas.width, canvas.height);
  ctx.translate(canvas.width / 2, canvas.height / 2);
  ctx.rotate((degrees * Math.PI) / 180);
  ctx.fillStyle = "rgb(20, 20, 20)";
  ctx.font = `30px "Orientation Sans"`;
  LETTER.forEach((line, i) => ctx.fillText(line, -430, -100 + i * 50));
  return canvas;
}

describe("page turns: a photographed page (grey paper to the edges of the frame)", () => {
  it("straightened, its uncovered corners take the paper's grey, not white: the text is still found and read", async () => {
    // A phone photo's paper is grey (~120 here) and fills the frame; straightening uncovers corners. White corners made
    // the text-size analysis's one threshold split corners from paper, not ink from paper: no glyphs, read as blank.
    const canvas = greyLetter(120, 6);
    const png = new Uint8Array(canvas.toBuffer("image/png"));
    releaseSource(canvas);
    const doc = await extractDocument(png, { env: getEnv(), pool, deadline: Date.now() + 120_000 });
    expect(characterErrorRate(render(doc, "text"), LETTER.join("\n"))).toBeLessThan(0.05);
    const [json] = parsedJson(doc).pages;
    expect(json!.skew).toBeLessThan(-5);
  });

  it("a blank grey sheet photographed and turned onto white stays blank: its grain is not read as text", async () => {
    const photo = blankSheetPhoto();
    const doc = await extractDocument(new Uint8Array(photo.toBuffer("image/png")), {
      env: getEnv(),
      pool,
      deadline: Date.now() + 120_000,
    });
    expect(render(doc, "text")).toBe("");
    expect(doc.pages[0]!.trace?.psm).toBe("blank");
    releaseSource(photo);
  });

  it("a grey photo turned by an editor that filled the corners white is read, not taken for blank", async () => {
    // Three tones (white corners, grey paper, dark ink): the analysis's first threshold splits corners from paper.
    const page = greyLetter(130, 0);
    const turned = createCanvas(1060, 560);
    const ctx = turned.getContext("2d");
    ctx.fillStyle = "#ffffff";
    ctx.fillRect(0, 0, turned.width, turned.height);
    ctx.translate(turned.width / 2, turned.height / 2);
    ctx.rotate((4 * Math.PI) / 180);
    ctx.drawImage(page, -page.width / 2, -page.height / 2);
    const png = new Uint8Array(turned.toBuffer("image/png"));
    releaseSource(page);
    releaseSource(turned);
    const doc = await extractDocument(png, { env: getEnv(), pool, deadline: Date.now() + 120_000 });
    expect(characterErrorRate(render(doc, "text"), LETTER.join("\n"))).toBeLessThan(0.05);
    expect(parsedJson(doc).pages[0]!.skew).toBeLessThan(-3);
  });
});
