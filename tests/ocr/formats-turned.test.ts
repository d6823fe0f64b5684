import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { createCanvas, GlobalFonts, type Canvas } from "@napi-rs/canvas";
import { DomUtils, parseDocument } from "htmlparser2";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { characterErrorRate } from "@/bench/metrics";
import { extractDocument, render } from "@/lib/ocr";
import type { ExtractedDocument } from "@/lib/ocr/model";
import { renderSearchablePdf } from "@/lib/ocr/render/formats/pdf";
import { drawTurned } from "@/lib/ocr/engine/turned-raster";
import { pageTurn, toTurned, type Quarter } from "@/lib/ocr/model/page-turn";
import { releaseSource } from "@/lib/ocr/engine/raster";
import { createTestPool } from "../support/ocr";
import { getEnv } from "@/lib/env";

/*
 * The searchable PDF of a page sent turned or skewed: the engine reads it turned upright and straightened, and the
 * PDF is the page as it was sent (the image untouched) with the invisible words placed on the printed ones there.
 * Checked against where the words were drawn, not against the model's own boxes.
 */

const pool = createTestPool();
afterAll(() => pool.terminate());

const work = mkdtempSync(path.join(tmpdir(), "ocr-formats-turned-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));
let fileNo = 0;
function pdfFile(pdf: Uint8Array): string {
  const file = path.join(work, `f${fileNo++}.pdf`);
  writeFileSync(file, pdf);
  return file;
}

GlobalFonts.registerFromPath(path.resolve("tests/fixtures/fonts/LiberationSans-Regular.ttf"), "Turned Formats Sans");

const LINES = [
  "Dear customer, thank you for your order of the",
  "garden tools. The hedge shears and the spade",
  "shipped today by parcel post and should reach",
  "you within three working days. Please keep this",
  "letter with your receipt for any future returns.",
];

type Box = [number, number, number, number];

/** The upright page, and every word's box as drawn (pixels of the upright page), in reading order. */
function uprightPage(): { canvas: Canvas; words: Array<{ text: string; box: Box }> } {
  const canvas = createCanvas(900, 80 + LINES.length * 50);
  const ctx = canvas.getContext("2d");
  ctx.fillStyle = "#ffffff";
  ctx.fillRect(0, 0, canvas.width, canvas.height);
  ctx.fillStyle = "#000000";
  ctx.font = '30px "Turned Formats Sans"';
  const words: Array<{ text: string; box: Box }> = [];
  LINES.forEach((line, i) => {
    const y = 60 + i * 50;
    ctx.fillText(line, 40, y);
    let at = 0;
    for (const text of line.split(" ")) {
      const start = line.indexOf(text, at);
      at = start + text.length;
      const x0 = 40 + ctx.measureText(line.slice(0, start)).width;
      const m = ctx.measureText(text);
      words.push({ text, box: [x0, y - m.actualBoundingBoxAscent, x0 + m.width, y + m.actualBoundingBoxDescent] });
    }
  });
  return { canvas, words };
}

/** The page as a caller sends it (turned clockwise by `rotation` + `skew`), and each word's box on it. */
function sentPage(rotation: Quarter, skew: number) {
  const upright = uprightPage();
  const turn = pageTurn(rotation, skew, upright.canvas.width, upright.canvas.height);
  const canvas = drawTurned(upright.canvas, turn);
  const words = upright.words.map(({ text, box: [x0, y0, x1, y1] }) => {
    const corners = [toTurned(turn, x0, y0), toTurned(turn, x1, y0), toTurned(turn, x0, y1), toTurned(turn, x1, y1)];
    const xs = corners.map((c) => c[0]);
    const ys = corners.map((c) => c[1]);
    return { text, box: [Math.min(...xs), Math.min(...ys), Math.max(...xs), Math.max(...ys)] as Box };
  });
  const png = new Uint8Array(canvas.toBuffer("image/png"));
  const size = { width: canvas.width, height: canvas.height };
  releaseSource(canvas);
  releaseSource(upright.canvas);
  return { png, words, ...size };
}

function overlap(a: Box, b: Box): number {
  const w = Math.max(0, Math.min(a[2], b[2]) - Math.max(a[0], b[0]));
  const h = Math.max(0, Math.min(a[3], b[3]) - Math.max(a[1], b[1]));
  const area = (r: Box) => (r[2] - r[0]) * (r[3] - r[1]);
  return (w * h) / (area(a) + area(b) - w * h);
}

const cases: Array<{ rotation: Quarter; skew: number }> = [
  { rotation: 90, skew: 0 },
  { rotation: 0, skew: 7 },
  { rotation: 270, skew: -3 },
];

describe.each(cases)("the searchable PDF of a page sent turned $rotation° and skewed $skew°", ({ rotation, skew }) => {
  const page = sentPage(rotation, skew);
  let doc: ExtractedDocument;
  let file: string;
  beforeAll(async () => {
    doc = await extractDocument(page.png, { env: getEnv(), pool, deadline: Date.now() + 120_000 });
    file = pdfFile(await renderSearchablePdf(doc.pages, { bytes: page.png, type: "png" }));
  });

  it("is a valid PDF whose text (pdftotext) is the page's (CER < 0.03)", () => {
    const check = spawnSync("qpdf", ["--check", file], { encoding: "utf8" });
    expect(check.status, `${check.stdout}${check.stderr}`).toBe(0);
    const text = execFileSync("pdftotext", ["-raw", file, "-"], { encoding: "utf8" });
    expect(characterErrorRate(text, LINES.join("\n"))).toBeLessThan(0.03);
  });

  it("its words' text-layer boxes (pdftotext -bbox) lie on the words as printed on the page as sent", () => {
    const dom = parseDocument(execFileSync("pdftotext", ["-bbox", file, "-"], { encoding: "utf8" }), { xmlMode: true });
    const pageEl = DomUtils.getElementsByTagName("page", dom, true)[0]!;
    // The page is the image at one point a pixel (no resolution stated): PDF points are the sent page's pixels.
    expect([Number(pageEl.attribs.width), Number(pageEl.attribs.height)]).toEqual([page.width, page.height]);
    const found = DomUtils.getElementsByTagName("word", dom, true).map((el) => ({
      text: DomUtils.textContent(el),
      box: [Number(el.attribs.xMin), Number(el.attribs.yMin), Number(el.attribs.xMax), Number(el.attribs.yMax)] as Box,
    }));
    let placed = 0;
    const misplaced: string[] = [];
    for (const word of page.words) {
      const match = found.find((f) => f.text === word.text && overlap(f.box, word.box) > 0.5);
      if (match) placed++;
      else {
        const same = found.filter((f) => f.text === word.text).map((f) => f.box.map(Math.round).join(","));
        misplaced.push(
          `${word.text} drawn at ${word.box.map(Math.round).join(",")}, text layer: ${same.join(" / ") || "none"}`,
        );
      }
    }
    // A misread word (OCR) has no match by its text; every word read right must lie where it was printed.
    expect(placed / page.words.length, misplaced.join("\n")).toBeGreaterThan(0.9);
    for (const line of misplaced) expect(line).toMatch(/text layer: none$/);
  });
});

describe("hOCR baselines (Tesseract's, carried in the page model)", () => {
  const upright = sentPage(0, 0);
  const turned = sentPage(90, 0);
  const lineTitles = (doc: ExtractedDocument) =>
    DomUtils.findAll((el) => el.attribs.class === "ocr_line", parseDocument(render(doc, "hocr")).children).map(
      (el) => el.attribs.title!,
    );

  it("every line of a page read as sent has `baseline slope offset` on the printed baseline", async () => {
    const doc = await extractDocument(upright.png, { env: getEnv(), pool, deadline: Date.now() + 120_000 });
    const titles = lineTitles(doc);
    expect(titles).toHaveLength(LINES.length);
    titles.forEach((title, i) => {
      const match = /^bbox (\d+) (\d+) (\d+) (\d+); baseline (-?[\d.]+) (-?\d+)$/.exec(title);
      expect(match, title).not.toBeNull();
      const [left, , right, bottom, slope, offset] = match!.slice(1).map(Number) as [
        number,
        number,
        number,
        number,
        number,
        number,
      ];
      // Relative to the line box's bottom-left corner (hOCR 1.2): y = bottom + offset + slope·(x − left).
      const middle = (left + right) / 2;
      const y = bottom + offset + slope * (middle - left);
      expect(Math.abs(y - (60 + i * 50)), title).toBeLessThanOrEqual(2); // drawn with fillText at y = 60 + 50·i
      expect(Math.abs(slope)).toBeLessThan(0.01);
      expect(offset).toBeLessThanOrEqual(0); // descenders below it, or none
    });
    // The JSON has it too: the line's two ends, normalized like its box.
    const [json] = (
      JSON.parse(render(doc, "json")) as { pages: Array<{ blocks: Array<{ lines: Array<{ baseline?: number[] }> }> }> }
    ).pages;
    for (const line of json!.blocks.flatMap((b) => b.lines)) expect(line.baseline).toHaveLength(4);
  });

  it("a page read turned says textangle and no baseline (the spec's baseline runs along the page's x axis)", async () => {
    const doc = await extractDocument(turned.png, { env: getEnv(), pool, deadline: Date.now() + 120_000 });
    const titles = lineTitles(doc);
    expect(titles.length).toBeGreaterThanOrEqual(LINES.length);
    for (const title of titles) expect(title).toMatch(/^bbox \d+ \d+ \d+ \d+; textangle 270$/);
  });
});
