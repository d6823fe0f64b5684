import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { crc32, deflateSync } from "node:zlib";
import { createCanvas, loadImage } from "@napi-rs/canvas";
import { DomUtils, parseDocument } from "htmlparser2";
import { PDFDocument, PDFRawStream, decodePDFRawStream, degrees } from "pdf-lib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { characterErrorRate } from "@/bench/metrics";
import { extractDocument, pagedFormats, render } from "@/lib/ocr";
import type { ExtractedDocument, ExtractedPage } from "@/lib/ocr/model";
import { wordsOf, wordText } from "@/lib/ocr/render/formats/common";
import { renderSearchablePdf } from "@/lib/ocr/render/formats/pdf";
import { TSV_COLUMNS } from "@/lib/vocabulary";
import { getPdfPage, openPdf } from "@/lib/ocr/engine/pdf";
import { createTestPool, fixture } from "../support/ocr";
import { getEnv } from "@/lib/env";

/*
 * The word-level formats (hOCR, ALTO, TSV, the searchable PDF), rendered from real readings of generated pages:
 * each checked by a reader of its own kind (an HTML parser, xmllint against the ALTO 4 schema, a TSV split,
 * qpdf / pdftotext / pdf.js), and all four against each other.
 */

const pool = createTestPool();
afterAll(() => pool.terminate());

const ALTO_XSD = path.resolve("tests/fixtures/alto/alto-4-4.xsd");
const work = mkdtempSync(path.join(tmpdir(), "ocr-formats-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));
let fileNo = 0;
function tempFile(ext: string, content: string | Uint8Array): string {
  const file = path.join(work, `f${fileNo++}.${ext}`);
  writeFileSync(file, content);
  return file;
}

/** The model's words in reading order, as every format writes them. */
function modelWords(document: Pick<ExtractedDocument, "pages">): string[] {
  return document.pages.flatMap((page) =>
    page.blocks.flatMap((b) => b.lines.flatMap((l) => wordsOf(l.words).map(wordText))),
  );
}

/** Elements of an hOCR class, in document order. */
function byClass(dom: ReturnType<typeof parseDocument>, cls: string) {
  return DomUtils.findAll((el) => (el.attribs.class ?? "").split(" ").includes(cls), dom.children);
}

function hocrWords(hocr: string): { words: string[]; dom: ReturnType<typeof parseDocument> } {
  const dom = parseDocument(hocr);
  const words = byClass(dom, "ocrx_word").map((el) => DomUtils.textContent(el));
  return { words, dom };
}

function altoWords(alto: string): string[] {
  // CONTENT attributes in document order, unescaped as an XML reader would.
  const dom = parseDocument(alto, { xmlMode: true });
  return DomUtils.getElementsByTagName("String", dom, true).map((el) => el.attribs.CONTENT!);
}

function tsvRows(tsv: string): Array<Record<(typeof TSV_COLUMNS)[number], string>> {
  const lines = tsv.split("\n").filter((line) => line !== "");
  expect(lines[0]!.split("\t")).toEqual([...TSV_COLUMNS]);
  return lines.slice(1).map((line) => {
    const cells = line.split("\t");
    expect(cells).toHaveLength(TSV_COLUMNS.length);
    return Object.fromEntries(TSV_COLUMNS.map((column, i) => [column, cells[i]!])) as Record<
      (typeof TSV_COLUMNS)[number],
      string
    >;
  });
}

function xmllint(file: string): { ok: boolean; output: string } {
  const run = spawnSync("xmllint", ["--noout", "--nonet", "--schema", ALTO_XSD, file], { encoding: "utf8" });
  return { ok: run.status === 0, output: `${run.stdout}${run.stderr}` };
}

function pdftotext(pdf: Uint8Array, ...args: string[]): string {
  return execFileSync("pdftotext", [...args, tempFile("pdf", pdf), "-"], { encoding: "utf8" });
}

function qpdfCheck(pdf: Uint8Array): { ok: boolean; output: string } {
  const run = spawnSync("qpdf", ["--check", tempFile("pdf", pdf)], { encoding: "utf8" });
  // 0: fine; 3: warnings only. Both are a PDF qpdf accepts; warnings are shown by the assertion below.
  return { ok: run.status === 0, output: `${run.stdout}${run.stderr}` };
}

/** PNG rows: a filter byte (0, none) then `channels` bytes per pixel. */
function packRows(
  width: number,
  height: number,
  channels: number,
  pixel: (x: number, y: number) => number[],
): Uint8Array {
  const out = new Uint8Array(height * (width * channels + 1));
  let o = 0;
  for (let y = 0; y < height; y++) {
    out[o++] = 0;
    for (let x = 0; x < width; x++) for (const v of pixel(x, y)) out[o++] = v;
  }
  return out;
}

/** 1-bit PNG rows: a filter byte, then 8 pixels a byte, most significant first. */
function packBits(width: number, height: number, bit: (x: number, y: number) => number): Uint8Array {
  const stride = Math.ceil(width / 8);
  const out = new Uint8Array(height * (stride + 1));
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) if (bit(x, y)) out[y * (stride + 1) + 1 + (x >> 3)]! |= 0x80 >> (x & 7);
  }
  return out;
}

function encodePng(
  width: number,
  height: number,
  colorType: number,
  bitDepth: number,
  rows: Uint8Array,
  palette?: Uint8Array,
): Uint8Array {
  const chunk = (type: string, body: Uint8Array) => {
    const head = Buffer.alloc(8);
    head.writeUInt32BE(body.length, 0);
    head.write(type, 4, "latin1");
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), body])), 0);
    return Buffer.concat([head, body, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = bitDepth;
  ihdr[9] = colorType;
  return new Uint8Array(
    Buffer.concat([
      Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
      chunk("IHDR", ihdr),
      ...(palette ? [chunk("PLTE", palette)] : []),
      chunk("IDAT", deflateSync(rows)),
      chunk("IEND", new Uint8Array(0)),
    ]),
  );
}

/** pdf.js's drawing of a one-page PDF at `width` × `height` pixels, on white: RGBA. */
async function drawPdfPage(pdf: Uint8Array, width: number, height: number): Promise<Uint8ClampedArray> {
  const handle = await openPdf(pdf);
  try {
    const page = await getPdfPage(handle, 1);
    const unit = page.getViewport({ scale: 1 });
    const viewport = page.getViewport({ scale: width / unit.width });
    expect(Math.round(viewport.height)).toBe(height);
    const canvas = createCanvas(width, height);
    const ctx = canvas.getContext("2d");
    ctx.fillStyle = "#ffffff";
    ctx.fillRect(0, 0, width, height);
    await page.render({ canvas: canvas as unknown as HTMLCanvasElement, viewport }).promise;
    return ctx.getImageData(0, 0, width, height).data;
  } finally {
    await handle.close();
  }
}

/** A page with words that need escaping, and characters Helvetica cannot write. */
function trickyPage(base: ExtractedPage): ExtractedPage {
  const words = [
    { text: "<b>&amp;", confidence: 91.4, bbox: [0.05, 0.1, 0.3, 0.2] as [number, number, number, number] },
    { text: `"quoted'`, confidence: 12, bbox: [0.35, 0.1, 0.6, 0.2] as [number, number, number, number] },
    { text: "Ωμέγα", confidence: 100, bbox: [0.65, 0.1, 0.95, 0.2] as [number, number, number, number] },
  ];
  const line = {
    text: words.map((w) => w.text).join(" "),
    confidence: 70,
    bbox: [0.05, 0.1, 0.95, 0.2] as [number, number, number, number],
    words,
  };
  return {
    ...base,
    text: line.text,
    blocks: [{ text: line.text, confidence: 70, bbox: line.bbox, lines: [line] }],
    lineStyles: [[{ size: 20 }]],
  };
}

describe("an image read by OCR (paragraph.png)", () => {
  let doc: ExtractedDocument;
  const png = fixture("paragraph.png");
  beforeAll(async () => {
    doc = await extractDocument(png, { env: getEnv(), pool });
  });

  it("hOCR 1.2: the page, areas, paragraphs, lines and words with bbox and x_wconf, read back by an HTML parser", () => {
    const hocr = render(doc, "hocr");
    const { words, dom } = hocrWords(hocr);
    const page = doc.pages[0]!;
    const metas = DomUtils.getElementsByTagName("meta", dom, true);
    expect(metas.find((m) => m.attribs.name === "ocr-system")?.attribs.content).toBeTruthy();
    const capabilities = metas.find((m) => m.attribs.name === "ocr-capabilities")?.attribs.content?.split(" ");
    expect(capabilities).toEqual(
      expect.arrayContaining(["ocr_page", "ocr_carea", "ocr_par", "ocr_line", "ocrx_word", "ocrp_wconf"]),
    );

    const pages = byClass(dom, "ocr_page");
    expect(pages).toHaveLength(1);
    expect(pages[0]!.attribs.title).toBe(`image "page-1"; bbox 0 0 ${page.width} ${page.height}; ppageno 0`);
    const count = (cls: string) => byClass(dom, cls).length;
    expect(count("ocr_carea")).toBe(page.blocks.length);
    expect(count("ocr_par")).toBe(page.blocks.length);
    expect(count("ocr_line")).toBe(page.blocks.flatMap((b) => b.lines).length);
    expect(words).toEqual(modelWords(doc));
    expect(words.join(" ")).toContain("Optical character recognition");

    const bbox = /^bbox (\d+) (\d+) (\d+) (\d+)(;|$)/;
    for (const cls of ["ocr_carea", "ocr_par", "ocr_line"]) {
      for (const el of byClass(dom, cls)) {
        const [, x0, y0, x1, y1] = bbox.exec(el.attribs.title!)!.map(Number);
        expect(x0!).toBeLessThan(x1!);
        expect(y0!).toBeLessThan(y1!);
        expect(x1!).toBeLessThanOrEqual(page.width);
        expect(y1!).toBeLessThanOrEqual(page.height);
      }
    }
    const modelWordList = page.blocks.flatMap((b) => b.lines.flatMap((l) => wordsOf(l.words)));
    byClass(dom, "ocrx_word").forEach((el, i) => {
      const match = /^bbox (\d+) (\d+) (\d+) (\d+); x_wconf (\d+)$/.exec(el.attribs.title!);
      expect(match, el.attribs.title).not.toBeNull();
      const word = modelWordList[i]!;
      // The box is the model's 0–1 box in pixels of the page as sent.
      expect(Number(match![1])).toBe(Math.round(word.bbox[0] * page.width));
      expect(Number(match![2])).toBe(Math.round(word.bbox[1] * page.height));
      expect(Number(match![5])).toBe(Math.round(word.confidence));
    });
  });

  it("ALTO 4: valid against the ALTO 4 schema (xmllint), with the words, boxes and WC 0–1", () => {
    const alto = render(doc, "alto");
    const check = xmllint(tempFile("xml", alto));
    expect(check.output).toContain("validates");
    expect(check.ok).toBe(true);
    expect(altoWords(alto)).toEqual(modelWords(doc));
    const dom = parseDocument(alto, { xmlMode: true });
    const page = DomUtils.getElementsByTagName("Page", dom, true)[0]!;
    expect(page.attribs).toMatchObject({
      WIDTH: String(doc.pages[0]!.width),
      HEIGHT: String(doc.pages[0]!.height),
      PHYSICAL_IMG_NR: "1",
    });
    expect(DomUtils.textContent(DomUtils.getElementsByTagName("MeasurementUnit", dom, true)[0]!)).toBe("pixel");
    for (const string of DomUtils.getElementsByTagName("String", dom, true)) {
      const wc = Number(string.attribs.WC);
      expect(wc).toBeGreaterThanOrEqual(0);
      expect(wc).toBeLessThanOrEqual(1);
      expect(Number(string.attribs.WIDTH)).toBeGreaterThan(0);
    }
    // An SP between the words of a line, none after the last.
    const lines = DomUtils.getElementsByTagName("TextLine", dom, true);
    for (const line of lines) {
      const children = line.children.filter((c) => c.type === "tag").map((c) => (c as { name: string }).name);
      expect(children.filter((n) => n === "SP")).toHaveLength(children.filter((n) => n === "String").length - 1);
      expect(children.at(-1)).toBe("String");
    }
  });

  it("the ALTO check can fail: a WC over 1 or a missing CONTENT is refused by the schema", () => {
    const alto = render(doc, "alto");
    expect(xmllint(tempFile("xml", alto.replace(/WC="[^"]*"/, 'WC="1.5"'))).ok).toBe(false);
    expect(xmllint(tempFile("xml", alto.replace(/ CONTENT="[^"]*"/, ""))).ok).toBe(false);
  });

  it("TSV: Tesseract's columns, levels 1–5, parsed back to the same words with their boxes", () => {
    const rows = tsvRows(render(doc, "tsv"));
    const page = doc.pages[0]!;
    const level = (n: number) => rows.filter((r) => r.level === String(n));
    expect(level(1)).toEqual([
      {
        level: "1",
        page_num: "1",
        block_num: "0",
        par_num: "0",
        line_num: "0",
        word_num: "0",
        left: "0",
        top: "0",
        width: String(page.width),
        height: String(page.height),
        conf: "-1",
        text: "",
      },
    ]);
    expect(level(2)).toHaveLength(page.blocks.length);
    expect(level(3)).toHaveLength(page.blocks.length);
    expect(level(4)).toHaveLength(page.blocks.flatMap((b) => b.lines).length);
    expect(level(5).map((r) => r.text)).toEqual(modelWords(doc));
    const first = page.blocks[0]!.lines[0]!.words[0]!;
    expect(level(5)[0]).toMatchObject({
      block_num: "1",
      par_num: "1",
      line_num: "1",
      word_num: "1",
      left: String(Math.round(first.bbox[0] * page.width)),
      top: String(Math.round(first.bbox[1] * page.height)),
    });
    for (const row of level(5)) {
      expect(Number(row.conf)).toBeGreaterThanOrEqual(0);
      expect(Number(row.conf)).toBeLessThanOrEqual(100);
    }
    // Rows come in order: a word's block/line numbers never go back.
    const keys = level(5).map((r) => Number(r.block_num) * 1e6 + Number(r.line_num) * 1e3 + Number(r.word_num));
    expect([...keys].sort((a, b) => a - b)).toEqual(keys);
  });

  describe("the searchable PDF", () => {
    let pdf: Uint8Array;
    beforeAll(async () => {
      pdf = await renderSearchablePdf(doc.pages, { bytes: png, type: "png" });
    });

    it("qpdf --check passes", () => {
      const check = qpdfCheck(pdf);
      expect(check.output).toContain("No syntax or stream encoding errors found");
      expect(check.ok, check.output).toBe(true);
    });

    it("pdftotext gives the text format's text (CER bound), in the model's word order", () => {
      const text = pdftotext(pdf, "-raw");
      expect(characterErrorRate(text, render(doc, "text"))).toBeLessThan(0.02);
      expect(text.split(/\s+/).filter(Boolean)).toEqual(modelWords(doc));
    });

    it("the four formats agree: the same words in the same order", () => {
      const expected = modelWords(doc);
      expect(expected.length).toBeGreaterThan(20);
      expect(hocrWords(render(doc, "hocr")).words).toEqual(expected);
      expect(altoWords(render(doc, "alto"))).toEqual(expected);
      expect(
        tsvRows(render(doc, "tsv"))
          .filter((r) => r.level === "5")
          .map((r) => r.text),
      ).toEqual(expected);
      expect(pdftotext(pdf, "-raw").split(/\s+/).filter(Boolean)).toEqual(expected);
    });

    it("a word's invisible text lies on its box: pdftotext -bbox puts each word where the model has it", () => {
      const html = pdftotext(pdf, "-bbox");
      const dom = parseDocument(html, { xmlMode: true });
      const pageEl = DomUtils.getElementsByTagName("page", dom, true)[0]!;
      const pageWidth = Number(pageEl.attribs.width);
      const pageHeight = Number(pageEl.attribs.height);
      const boxes = DomUtils.getElementsByTagName("word", dom, true);
      const model = doc.pages[0]!.blocks.flatMap((b) => b.lines.flatMap((l) => wordsOf(l.words)));
      expect(boxes).toHaveLength(model.length);
      boxes.forEach((el, i) => {
        const word = model[i]!;
        const x0 = Number(el.attribs.xMin) / pageWidth;
        const x1 = Number(el.attribs.xMax) / pageWidth;
        const yMid = (Number(el.attribs.yMin) + Number(el.attribs.yMax)) / 2 / pageHeight;
        expect(Math.abs(x0 - word.bbox[0])).toBeLessThan(0.01);
        expect(Math.abs(x1 - word.bbox[2])).toBeLessThan(0.01);
        expect(yMid).toBeGreaterThan(word.bbox[1]);
        expect(yMid).toBeLessThan(word.bbox[3]);
      });
    });

    it("pdf.js draws the page as the input image (the text layer draws nothing)", async () => {
      const handle = await openPdf(pdf);
      try {
        expect(handle.pageCount).toBe(1);
        const page = await getPdfPage(handle, 1);
        const image = await loadImage(Buffer.from(png));
        const unit = page.getViewport({ scale: 1 });
        const viewport = page.getViewport({ scale: image.width / unit.width });
        expect(Math.round(viewport.height)).toBe(image.height);
        const drawn = createCanvas(image.width, image.height);
        const ctx = drawn.getContext("2d");
        ctx.fillStyle = "#ffffff";
        ctx.fillRect(0, 0, image.width, image.height);
        await page.render({ canvas: drawn as unknown as HTMLCanvasElement, viewport }).promise;
        const original = createCanvas(image.width, image.height);
        const octx = original.getContext("2d");
        octx.fillStyle = "#ffffff";
        octx.fillRect(0, 0, image.width, image.height);
        octx.drawImage(image, 0, 0);
        const a = ctx.getImageData(0, 0, image.width, image.height).data;
        const b = octx.getImageData(0, 0, image.width, image.height).data;
        let sum = 0;
        let far = 0;
        for (let i = 0; i < a.length; i += 4) {
          for (let c = 0; c < 3; c++) {
            const d = Math.abs(a[i + c]! - b[i + c]!);
            sum += d;
            if (d > 32) far++;
          }
        }
        const channels = (a.length / 4) * 3;
        expect(sum / channels).toBeLessThan(1.5);
        expect(far / channels).toBeLessThan(0.005);
      } finally {
        await handle.close();
      }
    });

    it("PNGs as scanners write them (grey, 1-bit, RGB, palette) go in as they are and draw the same pixels", async () => {
      const image = await loadImage(Buffer.from(png));
      const { width, height } = image;
      const canvas = createCanvas(width, height);
      const ctx = canvas.getContext("2d");
      ctx.fillStyle = "#ffffff";
      ctx.fillRect(0, 0, width, height);
      ctx.drawImage(image, 0, 0);
      const rgba = ctx.getImageData(0, 0, width, height).data;
      const grey = new Uint8Array(width * height).map((_, i) =>
        Math.round((rgba[i * 4]! + rgba[i * 4 + 1]! + rgba[i * 4 + 2]!) / 3),
      );
      const variants: Array<[string, Uint8Array, Uint8Array]> = [];
      // [name, PNG, the grey level each pixel should draw as]
      variants.push([
        "grey",
        encodePng(
          width,
          height,
          0,
          8,
          packRows(width, height, 1, (x, y) => [grey[y * width + x]!]),
        ),
        grey,
      ]);
      const bilevel = grey.map((v) => (v < 128 ? 0 : 255));
      variants.push([
        "1-bit",
        encodePng(
          width,
          height,
          0,
          1,
          packBits(width, height, (x, y) => (bilevel[y * width + x]! ? 1 : 0)),
        ),
        bilevel,
      ]);
      variants.push([
        "rgb",
        encodePng(
          width,
          height,
          2,
          8,
          packRows(width, height, 3, (x, y) => [grey[y * width + x]!, grey[y * width + x]!, grey[y * width + x]!]),
        ),
        grey,
      ]);
      const quantized = grey.map((v) => (v < 64 ? 0 : v < 160 ? 128 : 255));
      const palette = new Uint8Array([0, 0, 0, 128, 128, 128, 255, 255, 255]);
      variants.push([
        "palette",
        encodePng(
          width,
          height,
          3,
          8,
          packRows(width, height, 1, (x, y) => [[0, 128, 255].indexOf(quantized[y * width + x]!)]),
          palette,
        ),
        quantized,
      ]);
      for (const [name, bytes, expected] of variants) {
        const out = await renderSearchablePdf(doc.pages, { bytes, type: "png" });
        expect(qpdfCheck(out).ok, name).toBe(true);
        // Not decoded: the PNG's own compressed data is the image stream.
        expect(Buffer.from(out).includes(Buffer.from("/Predictor 15")), name).toBe(true);
        const drawn = await drawPdfPage(out, width, height);
        let sum = 0;
        for (let i = 0; i < expected.length; i++) sum += Math.abs(drawn[i * 4]! - expected[i]!);
        expect(sum / expected.length, name).toBeLessThan(1.5);
        expect(pdftotext(out, "-raw").split(/\s+/).filter(Boolean), name).toEqual(modelWords(doc));
      }
    });

    it("an RGBA PNG with transparency: its alpha becomes a soft mask, drawn over white as a browser would", async () => {
      const image = await loadImage(Buffer.from(png));
      const { width, height } = image;
      const canvas = createCanvas(width, height);
      const ctx = canvas.getContext("2d");
      // The page in the upper-left quarter, a translucent red band, the rest transparent.
      ctx.drawImage(image, 0, 0, Math.floor(width / 2), Math.floor(height / 2));
      ctx.fillStyle = "rgba(255, 0, 0, 0.4)";
      ctx.fillRect(0, Math.floor(height / 3), width, Math.floor(height / 3));
      const translucent = canvas.toBuffer("image/png");
      const onWhite = createCanvas(width, height);
      const wctx = onWhite.getContext("2d");
      wctx.fillStyle = "#ffffff";
      wctx.fillRect(0, 0, width, height);
      wctx.drawImage(await loadImage(translucent), 0, 0);
      const expected = wctx.getImageData(0, 0, width, height).data;
      const out = await renderSearchablePdf(doc.pages, { bytes: translucent, type: "png" });
      expect(Buffer.from(out).includes(Buffer.from("/SMask"))).toBe(true);
      const drawn = await drawPdfPage(out, width, height);
      let sum = 0;
      for (let i = 0; i < expected.length; i += 4)
        for (let c = 0; c < 3; c++) sum += Math.abs(drawn[i + c]! - expected[i + c]!);
      expect(sum / ((expected.length / 4) * 3)).toBeLessThan(2);
    });

    it("JPEG goes in as it is; WebP is converted; both give the same words", async () => {
      for (const [name, type] of [
        ["paragraph.jpg", "jpeg"],
        ["paragraph.webp", "webp"],
      ] as const) {
        const bytes = fixture(name);
        const out = await renderSearchablePdf(doc.pages, { bytes, type });
        expect(qpdfCheck(out).ok).toBe(true);
        expect(pdftotext(out, "-raw").split(/\s+/).filter(Boolean)).toEqual(modelWords(doc));
        const loaded = await PDFDocument.load(out);
        const { width, height } = loaded.getPage(0).getSize();
        const image = await loadImage(Buffer.from(bytes));
        expect(width / height).toBeCloseTo(image.width / image.height, 3);
      }
    });
  });

  it("escaping and characters outside WinAnsi: hOCR, ALTO and TSV keep them; the PDF embeds a Unicode font for them", async () => {
    const page = trickyPage(doc.pages[0]!);
    const tricky: ExtractedDocument = { pages: [page], pageCount: 1 };
    const expected = ["<b>&amp;", `"quoted'`, "Ωμέγα"];
    expect(hocrWords(render(tricky, "hocr")).words).toEqual(expected);
    const alto = render(tricky, "alto");
    expect(xmllint(tempFile("xml", alto)).ok).toBe(true);
    expect(altoWords(alto)).toEqual(expected);
    expect(
      tsvRows(render(tricky, "tsv"))
        .filter((r) => r.level === "5")
        .map((r) => r.text),
    ).toEqual(expected);
    const pdf = await renderSearchablePdf(tricky.pages, { bytes: png, type: "png" });
    expect(qpdfCheck(pdf).ok).toBe(true);
    expect(pdftotext(pdf, "-raw").split(/\s+/).filter(Boolean)).toEqual(expected);
    expect(execFileSync("pdffonts", [tempFile("pdf", pdf)], { encoding: "utf8" })).toMatch(/DejaVuSans/);
  });

  it("a page the engine read turned (rotation 90): the PDF's words run up the page over the printed ones; hOCR textangle, ALTO ROTATION", async () => {
    // The page as sent: paragraph.png turned a quarter counterclockwise, so the engine turns it 90° clockwise to
    // read it. Its model: the upright reading's boxes mapped onto the page as sent, `rotation: 90`.
    const image = await loadImage(Buffer.from(png));
    const canvas = createCanvas(image.height, image.width);
    const ctx = canvas.getContext("2d");
    ctx.translate(0, image.width);
    ctx.rotate(-Math.PI / 2);
    ctx.drawImage(image, 0, 0);
    const sent = canvas.toBuffer("image/png");
    const turn = ([x0, y0, x1, y1]: readonly number[]): [number, number, number, number] => [
      y0!,
      1 - x1!,
      y1!,
      1 - x0!,
    ];
    const upright = doc.pages[0]!;
    const page = {
      ...upright,
      width: upright.height,
      height: upright.width,
      rotation: 90,
      skew: 0,
      blocks: upright.blocks.map((b) => ({
        ...b,
        bbox: turn(b.bbox),
        lines: b.lines.map((l) => ({
          ...l,
          bbox: turn(l.bbox),
          words: l.words.map((w) => ({ ...w, bbox: turn(w.bbox) })),
        })),
      })),
    } as ExtractedPage;
    const turned: ExtractedDocument = { pages: [page], pageCount: 1 };
    expect(render(turned, "hocr")).toMatch(/class="ocr_line" id="line_1_1" title="bbox \d+ \d+ \d+ \d+; textangle 90"/);
    const alto = render(turned, "alto");
    expect(alto).toMatch(/<Page ID="page_1" [^>]*ROTATION="90"/);
    expect(xmllint(tempFile("xml", alto)).ok).toBe(true);

    const pdf = await renderSearchablePdf(turned.pages, { bytes: sent, type: "png" });
    expect(qpdfCheck(pdf).ok).toBe(true);
    expect(pdftotext(pdf, "-raw").split(/\s+/).filter(Boolean)).toEqual(modelWords(doc));
    // Where each word's text sits, from pdf.js's text content: its origin (the baseline's start) inside the word's
    // box on the page as sent, its baseline running up the page (as the printed word does), spanning the box's height.
    const handle = await openPdf(pdf);
    try {
      const pdfPage = await getPdfPage(handle, 1);
      const { width: pw, height: ph } = pdfPage.getViewport({ scale: 1 });
      const items = (await pdfPage.getTextContent()).items.filter(
        (item) => "str" in item && item.str.trim() !== "",
      ) as Array<{
        str: string;
        transform: number[];
        width: number;
      }>;
      const model = page.blocks.flatMap((b) => b.lines.flatMap((l) => wordsOf(l.words)));
      // pdf.js joins neighbouring words into one item: the text is the words', each item starts on a word.
      expect(
        items
          .map((item) => item.str)
          .join("")
          .replace(/\s+/g, ""),
      ).toBe(model.map(wordText).join(""));
      expect(items.length).toBeGreaterThanOrEqual(3);
      for (const item of items) {
        const [a, b, , , e, f] = item.transform as [number, number, number, number, number, number];
        const ox = e / pw;
        const oy = 1 - f / ph;
        const word = model.find(({ bbox: [x0, , x1, y1] }) => ox > x0 && ox < x1 && Math.abs(oy - y1) < 0.01);
        expect(word, `${item.str} at ${ox.toFixed(3)}, ${oy.toFixed(3)}`).toBeDefined(); // starts at the bottom of a word's box…
        expect(item.str.startsWith(wordText(word!))).toBe(true);
        expect(Math.abs(a)).toBeLessThan(1e-6); // …and runs straight up
        expect(b).toBeGreaterThan(0);
      }
    } finally {
      await handle.close();
    }
  });

  it("paged rendering (a job's result, page by page) joins to exactly what render gives", () => {
    for (const format of ["hocr", "alto", "tsv"] as const) {
      const paged = pagedFormats[format];
      expect(paged.join(doc.pages.map((p) => paged.page(p)))).toBe(render(doc, format));
    }
  });
});

/** The content streams of a PDF page, decoded, concatenated. */
function pageContent(pdf: PDFDocument, index: number): string {
  const page = pdf.getPage(index);
  const contents = page.node.normalizedEntries().Contents;
  const streams = contents ? Array.from({ length: contents.size() }, (_, i) => contents.lookup(i)) : [];
  return streams
    .map((stream) =>
      stream instanceof PDFRawStream ? Buffer.from(decodePDFRawStream(stream).decode()).toString("latin1") : "",
    )
    .join("\n");
}

describe("PDFs: text-layer pages copied as they are, scanned pages get the invisible words", () => {
  it("born-digital.pdf comes back with its own text layer untouched", async () => {
    const bytes = fixture("born-digital.pdf");
    const doc = await extractDocument(bytes, { env: getEnv(), pool });
    expect(doc.pages.every((p) => p.source === "text-layer")).toBe(true);
    const out = await renderSearchablePdf(doc.pages, { bytes, type: "pdf" });
    expect(qpdfCheck(out).ok).toBe(true);
    const input = await PDFDocument.load(bytes);
    const output = await PDFDocument.load(out);
    expect(output.getPageCount()).toBe(3);
    for (let i = 0; i < 3; i++) {
      expect(pageContent(output, i)).toBe(pageContent(input, i));
      expect(pageContent(output, i)).not.toMatch(/\b3 Tr\b/);
    }
    expect(pdftotext(out)).toBe(pdftotext(bytes));
    // The ALTO of text-layer pages is valid too, with one Page per page and unique IDs.
    const alto = render(doc, "alto");
    expect(xmllint(tempFile("xml", alto)).ok).toBe(true);
    expect(altoWords(alto)).toEqual(modelWords(doc));
  });

  it("mixed.pdf: page 1 (text layer) untouched, page 2 (scan) gets an invisible text layer with its words", async () => {
    const bytes = fixture("mixed.pdf");
    const doc = await extractDocument(bytes, { env: getEnv(), pool });
    expect(doc.pages.map((p) => p.source)).toEqual(["text-layer", "ocr"]);
    const out = await renderSearchablePdf(doc.pages, { bytes, type: "pdf" });
    expect(qpdfCheck(out).ok).toBe(true);
    const input = await PDFDocument.load(bytes);
    const output = await PDFDocument.load(out);
    expect(pageContent(output, 0)).toBe(pageContent(input, 0));
    // The scan's drawing as it was (pdf-lib wraps it in q … Q before the words are added).
    expect(pageContent(output, 1)).toContain(pageContent(input, 1));
    expect(pageContent(output, 1)).toMatch(/\b3 Tr\b/);
    const page2 = execFileSync("pdftotext", ["-raw", "-f", "2", "-l", "2", tempFile("pdf", out), "-"], {
      encoding: "utf8",
    });
    expect(page2.split(/\s+/).filter(Boolean)).toEqual(modelWords({ pages: [doc.pages[1]!] }));
    expect(characterErrorRate(pdftotext(out, "-raw"), render(doc, "text"))).toBeLessThan(0.03);
  });

  it("a scan stored sideways with /Rotate 90: the invisible words land on the words as displayed", async () => {
    // The scan drawn turned a quarter counterclockwise on a landscape page, and /Rotate 90 turning it back upright
    // for display (as scanners write landscape-stored pages): the model is measured on the page as displayed.
    const source = await PDFDocument.create();
    const image = await source.embedPng(fixture("paragraph.png"));
    const page = source.addPage([image.height, image.width]);
    page.drawImage(image, { x: image.height, y: 0, width: image.width, height: image.height, rotate: degrees(90) });
    page.setRotation(degrees(90));
    const bytes = await source.save();
    const doc = await extractDocument(bytes, { env: getEnv(), pool });
    expect(doc.pages[0]!.width).toBeGreaterThan(doc.pages[0]!.height);
    const words = modelWords(doc);
    expect(words.join(" ")).toContain("Optical character recognition");
    const out = await renderSearchablePdf(doc.pages, { bytes, type: "pdf" });
    expect(qpdfCheck(out).ok).toBe(true);
    expect(pdftotext(out, "-raw").split(/\s+/).filter(Boolean)).toEqual(words);
    // pdftotext gives the words' boxes on the page as displayed (its <page> says the unturned size).
    const dom = parseDocument(pdftotext(out, "-bbox"), { xmlMode: true });
    const pageEl = DomUtils.getElementsByTagName("page", dom, true)[0]!;
    const [pw, ph] = [Number(pageEl.attribs.height), Number(pageEl.attribs.width)];
    const model = doc.pages[0]!.blocks.flatMap((b) => b.lines.flatMap((l) => wordsOf(l.words)));
    const boxes = DomUtils.getElementsByTagName("word", dom, true);
    expect(boxes).toHaveLength(model.length);
    boxes.forEach((el, i) => {
      const word = model[i]!;
      expect(Math.abs(Number(el.attribs.xMin) / pw - word.bbox[0])).toBeLessThan(0.01);
      expect(Math.abs(Number(el.attribs.xMax) / pw - word.bbox[2])).toBeLessThan(0.01);
      const yMid = (Number(el.attribs.yMin) + Number(el.attribs.yMax)) / 2 / ph;
      expect(yMid).toBeGreaterThan(word.bbox[1]);
      expect(yMid).toBeLessThan(word.bbox[3]);
    });
  });
});
