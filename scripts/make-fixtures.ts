/**
 * Generates the OCR test fixtures under tests/.generated/ (gitignored): pages rendered with the committed
 * Liberation fonts, PDFs built with pdf-lib, and hostile files. Each readable fixture gets a `<name>.gt.txt`
 * beside it, the layout `npm run bench` reads, so `npm run bench -- tests/.generated` works too.
 *
 * Run by vitest's global setup; `npm run fixtures` runs it by hand. Skipped when the stamp matches.
 */
import { existsSync } from "node:fs";
import fs from "node:fs/promises";
import path from "node:path";
import { crc32, createDeflate, deflateSync } from "node:zlib";
import { createCanvas, GlobalFonts, type Canvas, type SKRSContext2D } from "@napi-rs/canvas";
import { PDFDocument, StandardFonts } from "pdf-lib";
import { writeTiff, type TiffPageInput } from "./tiff-writer";

const ROOT = path.resolve(import.meta.dirname, "..");
export const FIXTURE_DIR = path.join(ROOT, "tests/.generated");
const FONT_DIR = path.join(ROOT, "tests/fixtures/fonts");
/** Bump when the fixtures change. */
const VERSION = "14";

export const TEXTS = {
  paragraph: [
    "Optical character recognition turns pictures of text",
    "into text that software can search, copy and index.",
    "This invoice lists 3 items with a total of 42.50 EUR.",
  ],
  columnLeft: [
    "Apples grow on trees in cool",
    "orchards and ripen late in the",
    "summer when the nights begin",
    "to shorten and the air turns.",
    "Farmers pick them by hand and",
    "store them in dark barns where",
    "they keep for many months. In",
    "spring the trees flower again",
    "and bees carry pollen between",
    "the rows. A good harvest needs",
    "rain in June and sun in August",
    "and a little luck with frost.",
  ],
  columnRight: [
    "Rivers carry water from high",
    "mountains down to the open sea",
    "and shape wide valleys over",
    "many thousands of quiet years.",
    "Their banks give homes to fish",
    "birds and otters, and towns grew",
    "where boats could land. Floods",
    "bring rich soil to the fields",
    "but can also destroy bridges.",
    "Engineers build dams to store",
    "water for dry seasons and to",
    "make electricity for cities.",
  ],
  receipt: [
    "CORNER GROCERY",
    "12 MARKET STREET",
    "MILK 1L 1.29",
    "BREAD 2.15",
    "APPLES 1KG 3.40",
    "TOTAL 6.84",
    "CASH 10.00",
    "CHANGE 3.16",
  ],
  heading: "Quarterly Report",
  body: ["Sales grew in every region this quarter.", "The details follow in the list below."],
  bullets: ["First item in the list", "Second item in the list"],
  french: [
    "Le présent de l'indicatif est utilisé pour exprimer",
    "une vérité générale. Nous parlons et vous finissez",
    "le travail avec les élèves de la classe dans une école.",
    "Ils sont très contents de cette leçon sur les verbes.",
  ],
  pdfPages: [
    {
      heading: "Introduction",
      body: ["This document was generated for the test suite.", "It has three pages of plain text."],
    },
    {
      heading: "Methods",
      body: ["The second page describes the methods.", "Every line is drawn with a standard font."],
    },
    { heading: "Results", body: ["The third page holds the results.", "Nothing here was scanned."] },
  ],
} as const;

let fontsRegistered = false;
function registerFonts(): void {
  if (fontsRegistered) return;
  GlobalFonts.registerFromPath(path.join(FONT_DIR, "LiberationSans-Regular.ttf"), "Fixture Sans");
  GlobalFonts.registerFromPath(path.join(FONT_DIR, "LiberationSans-Bold.ttf"), "Fixture Sans Bold");
  fontsRegistered = true;
}

interface TextLine {
  text: string;
  x: number;
  y: number;
  size: number;
  bold?: boolean;
}

function renderLines(width: number, height: number, lines: TextLine[]): Canvas {
  registerFonts();
  const canvas = createCanvas(width, height);
  const ctx = canvas.getContext("2d");
  ctx.fillStyle = "#ffffff";
  ctx.fillRect(0, 0, width, height);
  ctx.fillStyle = "#111111";
  ctx.textBaseline = "alphabetic";
  for (const line of lines) {
    ctx.font = `${line.size}px "${line.bold ? "Fixture Sans Bold" : "Fixture Sans"}"`;
    ctx.fillText(line.text, line.x, line.y);
  }
  return canvas;
}

function stack(texts: readonly string[], x: number, top: number, size: number, gap = 1.5): TextLine[] {
  return texts.map((text, i) => ({ text, x, y: top + size + i * size * gap, size }));
}

/** A PNG written by hand (8-bit greyscale), for headers that lie and real bombs. */
function greyPng(width: number, height: number, idat: Uint8Array): Uint8Array {
  const chunk = (type: string, data: Uint8Array) => {
    const out = Buffer.alloc(12 + data.length);
    out.writeUInt32BE(data.length, 0);
    out.write(type, 4, "ascii");
    Buffer.from(data).copy(out, 8);
    out.writeUInt32BE(crc32(Buffer.concat([Buffer.from(type, "ascii"), Buffer.from(data)])), 8 + data.length);
    return out;
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 0; // greyscale
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", ihdr),
    chunk("IDAT", idat),
    chunk("IEND", new Uint8Array(0)),
  ]);
}

/** A JPEG whose pixels are stored turned, with the EXIF orientation that turns them back. */
function exifJpeg(upright: Canvas, orientation: 3 | 6 | 8): Uint8Array {
  const { width: w, height: h } = upright;
  const transposed = orientation !== 3;
  const stored = createCanvas(transposed ? h : w, transposed ? w : h);
  const ctx: SKRSContext2D = stored.getContext("2d");
  if (orientation === 3) {
    ctx.translate(w, h);
    ctx.rotate(Math.PI);
  } else if (orientation === 6) {
    // Displayed by rotating 90° clockwise, so store it rotated 90° counter-clockwise.
    ctx.translate(0, w);
    ctx.rotate(-Math.PI / 2);
  } else {
    ctx.translate(h, 0);
    ctx.rotate(Math.PI / 2);
  }
  ctx.drawImage(upright, 0, 0);
  const jpeg = stored.toBuffer("image/jpeg", 92);
  // APP1 "Exif\0\0", big-endian TIFF header, one IFD entry: Orientation (0x0112), SHORT, 1 value.
  const tiff = Buffer.from([
    0x4d,
    0x4d,
    0x00,
    0x2a,
    0x00,
    0x00,
    0x00,
    0x08,
    0x00,
    0x01,
    0x01,
    0x12,
    0x00,
    0x03,
    0x00,
    0x00,
    0x00,
    0x01,
    0x00,
    orientation,
    0x00,
    0x00,
    0x00,
    0x00,
    0x00,
    0x00,
  ]);
  const payload = Buffer.concat([Buffer.from("Exif\0\0", "binary"), tiff]);
  const app1 = Buffer.alloc(4);
  app1[0] = 0xff;
  app1[1] = 0xe1;
  app1.writeUInt16BE(payload.length + 2, 2);
  return Buffer.concat([jpeg.subarray(0, 2), app1, payload, jpeg.subarray(2)]);
}

/** A PDF written by hand: `objects` numbered from 1 (the first is the catalog), `trailer` added to the trailer. */
export function handWrittenPdf(objects: string[], trailer = ""): Uint8Array {
  let body = "%PDF-1.4\n";
  const offsets: number[] = [];
  objects.forEach((object, i) => {
    offsets.push(body.length);
    body += `${i + 1} 0 obj\n${object}\nendobj\n`;
  });
  const xref = body.length;
  body += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`;
  for (const offset of offsets) body += `${String(offset).padStart(10, "0")} 00000 n \n`;
  body += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R ${trailer}>>\nstartxref\n${xref}\n%%EOF\n`;
  return new Uint8Array(Buffer.from(body, "latin1"));
}

/** A PDF whose trailer points at a Standard security handler with a user password: pdf.js asks for it. */
function encryptedPdf(): Uint8Array {
  const id = "0123456789abcdef0123456789abcdef";
  return handWrittenPdf(
    [
      "<< /Type /Catalog /Pages 2 0 R >>",
      "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
      "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>",
      "<< /Length 0 >>\nstream\n\nendstream",
      `<< /Filter /Standard /V 1 /R 2 /Length 40 /P -44 /O <${"a1".repeat(32)}> /U <${"5c".repeat(32)}> >>`,
    ],
    `/Encrypt 5 0 R /ID [<${id}> <${id}>] `,
  );
}

async function textPdf(pages: ReadonlyArray<{ heading: string; body: readonly string[] }>): Promise<Uint8Array> {
  const pdf = await PDFDocument.create();
  const regular = await pdf.embedFont(StandardFonts.Helvetica);
  const bold = await pdf.embedFont(StandardFonts.HelveticaBold);
  for (const page of pages) {
    const p = pdf.addPage([612, 792]);
    p.drawText(page.heading, { x: 72, y: 700, size: 24, font: bold });
    page.body.forEach((line, i) => p.drawText(line, { x: 72, y: 660 - i * 16, size: 11, font: regular }));
  }
  return pdf.save();
}

/** An image-only "scan": a rendered page embedded as a PNG, no text layer. */
async function imagePdf(png: Uint8Array, pageCount = 1): Promise<Uint8Array> {
  const pdf = await PDFDocument.create();
  const image = await pdf.embedPng(png);
  for (let i = 0; i < pageCount; i++) {
    const page = pdf.addPage([612, 792]);
    const width = 540;
    const height = (image.height / image.width) * width;
    page.drawImage(image, { x: 36, y: 792 - 36 - height, width, height });
  }
  return pdf.save();
}

/** Words for long generated documents: common, unambiguous to a reader (no 1/l, 0/O pairs). */
const LONG_WORDS = (
  "river garden market window letter number summer winter orange yellow silver bridge forest harbor castle " +
  "station doctor teacher friend morning evening travel country village mountain island valley little simple " +
  "better paper pencil basket candle ticket pocket button rabbit turtle monkey butter coffee dinner planet " +
  "rocket signal energy engine wonder secret circle square handle kitchen blanket"
).split(" ");

/**
 * A long scanned document (no text layer): `pages` small pages, each an image of two lines — `Page N of M` and
 * seven words chosen by N — so its text is known and each page reads in a fraction of a second. For the jobs'
 * tests and `npm run bench -- --job`.
 */
export async function longScan(pages: number): Promise<{ pdf: Uint8Array; truth: string[] }> {
  registerFonts();
  const pdf = await PDFDocument.create();
  const truth: string[] = [];
  for (let n = 1; n <= pages; n++) {
    const words = Array.from({ length: 7 }, (_, i) => LONG_WORDS[(n * 7 + i * 13) % LONG_WORDS.length]!);
    const lines = [`Page ${n} of ${pages}`, words.join(" ")];
    truth.push(lines.join("\n"));
    const png = renderLines(1400, 300, stack(lines, 40, 50, 44)).toBuffer("image/png");
    const image = await pdf.embedPng(png);
    const page = pdf.addPage([336, 72]);
    page.drawImage(image, { x: 0, y: 0, width: 336, height: 72 });
  }
  return { pdf: await pdf.save(), truth };
}

async function mixedPdf(png: Uint8Array): Promise<Uint8Array> {
  const text = await PDFDocument.load(await textPdf(TEXTS.pdfPages.slice(0, 1)));
  const scan = await PDFDocument.load(await imagePdf(png));
  const [scanPage] = await text.copyPages(scan, [0]);
  text.addPage(scanPage);
  return text.save();
}

function seededBytes(length: number, seed: number): Uint8Array {
  const out = new Uint8Array(length);
  let state = seed;
  for (let i = 0; i < length; i++) {
    state = (state * 1664525 + 1013904223) >>> 0;
    out[i] = state >>> 24;
  }
  return out;
}

/** zlib (Flate) of `total` bytes of `byte`, streamed: a few MB of memory whatever the size. */
function deflateRepeated(byte: number, total: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const deflate = createDeflate({ level: 9 });
    const out: Buffer[] = [];
    deflate.on("data", (chunk: Buffer) => out.push(chunk));
    deflate.on("end", () => resolve(Buffer.concat(out)));
    deflate.on("error", reject);
    const chunk = Buffer.alloc(16 * 1024 * 1024, byte);
    let left = total;
    const write = () => {
      while (left > 0) {
        const piece = left >= chunk.length ? chunk : chunk.subarray(0, left);
        left -= piece.length;
        if (!deflate.write(piece)) {
          deflate.once("drain", write);
          return;
        }
      }
      deflate.end();
    };
    write();
  });
}

/** A one-page PDF written by hand whose last object is a binary stream (`streamDict` without /Length). */
function pdfWithStream(page: string, streamDict: string, data: Buffer, extra: string[] = []): Uint8Array {
  const head = handWrittenPdf([
    "<< /Type /Catalog /Pages 2 0 R >>",
    "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
    page,
    ...extra,
  ]);
  // handWrittenPdf writes text objects; the binary stream is appended as object 4 with an xref of its own.
  const text = Buffer.from(head).toString("latin1");
  const body = text.slice(0, text.indexOf("xref\n"));
  const offsets = [...body.matchAll(/^(\d+) 0 obj$/gm)].map((m) => m.index!);
  const streamOffset = Buffer.byteLength(body, "latin1");
  const objectHead = Buffer.from(
    `${offsets.length + 1} 0 obj\n<< ${streamDict} /Length ${data.length} >>\nstream\n`,
    "latin1",
  );
  const objectTail = Buffer.from("\nendstream\nendobj\n", "latin1");
  const xrefOffset = streamOffset + objectHead.length + data.length + objectTail.length;
  let xref = `xref\n0 ${offsets.length + 2}\n0000000000 65535 f \n`;
  for (const offset of [...offsets, streamOffset]) xref += `${String(offset).padStart(10, "0")} 00000 n \n`;
  xref += `trailer\n<< /Size ${offsets.length + 2} /Root 1 0 R >>\nstartxref\n${xrefOffset}\n%%EOF\n`;
  return new Uint8Array(
    Buffer.concat([Buffer.from(body, "latin1"), objectHead, data, objectTail, Buffer.from(xref, "latin1")]),
  );
}

/**
 * The hostile PDFs (docs/decisions.md#hostile-pdfs), each small on the wire:
 * - image-bomb.pdf: one page drawing a 20000×20000 greyscale Flate image (400 MP; ~0.4 MB); image-bomb-1bit.pdf
 *   the same at 1 bit per pixel (50 MB inflated);
 * - inflate-bomb.pdf: one page whose content stream inflates to 1 GiB of spaces (~1 MB);
 * - huge-pages.pdf: 50 pages of 14400×14400 pt (the largest PDF allows) with vector ink and no text;
 * - inflate-bomb-*.pdf: the inflate bomb's stream spelled four more ways (`inflateBombSpellings`);
 * - nested-forms.pdf, nested-forms-paths.pdf: 32 form XObjects each drawing the next twice (~6 KB), the innermost
 *   drawing a letter or a line;
 * - smuggled-jpeg.pdf: an image whose dictionary says 64×64 holding a JPEG that decodes to 12000×12000.
 */
async function hostilePdfs(): Promise<Record<string, Uint8Array>> {
  const side = 20_000;
  const image = await deflateRepeated(0, side * side);
  const imageBomb = pdfWithStream(
    "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /XObject << /Im0 5 0 R >> >> /Contents 4 0 R >>",
    `/Type /XObject /Subtype /Image /Width ${side} /Height ${side} /ColorSpace /DeviceGray /BitsPerComponent 8 /Filter /FlateDecode`,
    image,
    ["<< /Length 30 >>\nstream\nq 612 0 0 792 0 0 cm /Im0 Do Q\nendstream"],
  );

  // The same size at 1 bit per pixel: 50 MB inflated, under the stream limit, so only the pixel limit refuses it.
  const imageBomb1bit = pdfWithStream(
    "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /XObject << /Im0 5 0 R >> >> /Contents 4 0 R >>",
    `/Type /XObject /Subtype /Image /Width ${side} /Height ${side} /ColorSpace /DeviceGray /BitsPerComponent 1 /Filter /FlateDecode`,
    await deflateRepeated(0xff, (side / 8) * side),
    ["<< /Length 30 >>\nstream\nq 612 0 0 792 0 0 cm /Im0 Do Q\nendstream"],
  );

  const content = await deflateRepeated(0x20, 1024 * 1024 * 1024);
  const inflateBomb = pdfWithStream(
    "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>",
    "/Filter /FlateDecode",
    content,
  );

  const pageSize = 14_400;
  const draw = Array.from({ length: 40 }, (_, i) => `${i * 360} 0 m ${pageSize - i * 360} ${pageSize} l`).join(" ");
  const strokes = `20 w ${draw} S`;
  const kids = Array.from({ length: 50 }, (_, i) => `${3 + i} 0 R`).join(" ");
  const pages = Array.from(
    { length: 50 },
    () => `<< /Type /Page /Parent 2 0 R /MediaBox [0 0 ${pageSize} ${pageSize}] /Contents 53 0 R >>`,
  );
  const hugePages = handWrittenPdf([
    "<< /Type /Catalog /Pages 2 0 R >>",
    `<< /Type /Pages /Kids [${kids}] /Count 50 >>`,
    ...pages,
    `<< /Length ${strokes.length} >>\nstream\n${strokes}\nendstream`,
  ]);
  return {
    "hostile/image-bomb.pdf": imageBomb,
    "hostile/image-bomb-1bit.pdf": imageBomb1bit,
    "hostile/inflate-bomb.pdf": inflateBomb,
    "hostile/huge-pages.pdf": hugePages,
    ...inflateBombSpellings(content),
    "hostile/nested-forms.pdf": nestedFormsPdf(),
    "hostile/nested-forms-paths.pdf": nestedFormsPdf({ leaf: "0 0 m 1 1 l S" }),
    "hostile/smuggled-jpeg.pdf": jpegImagePdf(smuggledJpeg()),
  };
}

/**
 * Form XObjects nested `levels` deep, each drawing the next one `fanOut` times (fanOut^levels draws of the innermost
 * one; 32 levels drawing twice are ~6 KB on the wire). `leaf` is what the innermost form draws (text by default, so
 * text extraction explodes too); `pageText`, when given, is drawn by the page itself (a sparse text layer sends the
 * page to OCR).
 */
export function nestedFormsPdf({
  levels = 32,
  fanOut = 2,
  leaf = "BT /F1 1 Tf 1 1 Td (a) Tj ET",
  pageText = "",
} = {}): Uint8Array {
  const form = (i: number) => 6 + i;
  const stream = (dict: string, body: string) => `<< ${dict} /Length ${body.length} >>\nstream\n${body}\nendstream`;
  const pageContent = `${pageText ? `BT /F1 12 Tf 72 720 Td (${pageText}) Tj ET ` : ""}/X Do`;
  const objects = [
    "<< /Type /Catalog /Pages 2 0 R >>",
    "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
    `<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /XObject << /X ${form(0)} 0 R >> /Font << /F1 4 0 R >> >> /Contents 5 0 R >>`,
    "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    stream("", pageContent),
  ];
  for (let i = 0; i < levels; i++) {
    const last = i === levels - 1;
    const resources = last
      ? "/Resources << /Font << /F1 4 0 R >> >>"
      : `/Resources << /XObject << /X ${form(i + 1)} 0 R >> >>`;
    objects.push(
      stream(
        `/Type /XObject /Subtype /Form /BBox [0 0 612 792] ${resources}`,
        last ? leaf : Array(fanOut).fill("/X Do").join(" "),
      ),
    );
  }
  return handWrittenPdf(objects);
}

/**
 * A JPEG that says 64×64 to a reader that skips `FF 00` + length as a segment, and is `width`×`height` to libjpeg
 * (and to pdf.js): right after SOI, `FF 00` is padding to libjpeg, which then skips the two "length" bytes as garbage
 * and reads the frame hidden behind them. ~1.5 KB.
 */
export function smuggledJpeg(width = 12_000, height = 12_000): Uint8Array {
  const canvas = createCanvas(64, 64);
  const ctx = canvas.getContext("2d");
  ctx.fillStyle = "#ffffff";
  ctx.fillRect(0, 0, 64, 64);
  const visible = canvas.toBuffer("image/jpeg", 50).subarray(2); // its segments, after SOI
  // The hidden image: the same tables and scan up to (not including) EOI, under an enlarged frame header.
  const hidden = Buffer.from(visible.subarray(0, visible.length - 2));
  for (let i = 0; i + 8 < hidden.length; i++) {
    if (hidden[i] === 0xff && hidden[i + 1] === 0xc0) {
      hidden.writeUInt16BE(height, i + 5);
      hidden.writeUInt16BE(width, i + 7);
      break;
    }
  }
  const head = Buffer.from([0xff, 0xd8, 0xff, 0x00, 0, 0]);
  head.writeUInt16BE(hidden.length + 2, 4);
  return new Uint8Array(Buffer.concat([head, hidden, visible]));
}

/** A one-page PDF drawing `jpeg` as an image XObject whose dictionary says 64×64. */
function jpegImagePdf(jpeg: Uint8Array): Uint8Array {
  return pdfWithStream(
    "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /XObject << /Im0 5 0 R >> >> /Contents 4 0 R >>",
    "/Type /XObject /Subtype /Image /Width 64 /Height 64 /ColorSpace /DeviceRGB /BitsPerComponent 8 /Filter /DCTDecode",
    Buffer.from(jpeg),
    ["<< /Length 30 >>\nstream\nq 612 0 0 792 0 0 cm /Im0 Do Q\nendstream"],
  );
}

/**
 * The inflate bomb's content stream (1 GiB of spaces) under four spellings the first pre-check missed: the stream
 * marked as an image, the filter name with a `#xx` escape, the filter in another object, and behind ASCIIHex.
 */
function inflateBombSpellings(content: Buffer): Record<string, Uint8Array> {
  const page = (contents: number) =>
    `<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents ${contents} 0 R >>`;
  return {
    "hostile/inflate-bomb-image-subtype.pdf": pdfWithStream(
      page(4),
      "/Type /XObject /Subtype /Image /Width 8 /Height 8 /ColorSpace /DeviceGray /BitsPerComponent 8 /Filter /FlateDecode",
      content,
    ),
    "hostile/inflate-bomb-escaped-name.pdf": pdfWithStream(page(4), "/Filter /F#6cateDecode", content),
    "hostile/inflate-bomb-indirect-filter.pdf": pdfWithStream(page(5), "/Filter 4 0 R", content, ["/FlateDecode"]),
    "hostile/inflate-bomb-hex-chain.pdf": pdfWithStream(
      page(4),
      "/Filter [/ASCIIHexDecode /FlateDecode]",
      Buffer.concat([Buffer.from(content.toString("hex"), "latin1"), Buffer.from(">", "latin1")]),
    ),
  };
}

/** The sample documents of the README and /docs examples (public/samples/, also served at /samples/ by every deployment). */
export const SAMPLES = {
  dir: path.join(ROOT, "public/samples"),
  scan: [
    "ACME OFFICE SUPPLIES",
    "Invoice 2026-0417",
    "Date: 12 March 2026",
    "Bill to: Northwind Traders, 8 Harbour Road",
    "Paper A4, 5 reams 24.50",
    "Ink cartridges, 2 pieces 38.00",
    "Desk lamp 19.90",
    "Total due 82.40 EUR",
    "Payment within 30 days. Thank you for your order.",
  ],
  report: [
    {
      heading: "Annual Summary",
      body: ["This report was generated as a sample document.", "Its text is a real text layer, read without OCR."],
    },
    { heading: "Highlights", body: ["Revenue grew by twelve percent.", "Two new offices opened this year."] },
  ],
} as const;

/**
 * Write the sample documents (`npm run samples`; committed, so a clone has them without running anything):
 * `scan.png`, an invoice drawn like a 150-DPI scan; `scan.pdf`, the same page as an image-only PDF; `report.pdf`,
 * two born-digital pages with a text layer. Each with its `.txt` ground truth.
 */
async function generateSamples(dir: string = SAMPLES.dir): Promise<void> {
  await fs.mkdir(dir, { recursive: true });
  const lines: TextLine[] = [
    { text: SAMPLES.scan[0], x: 60, y: 80, size: 34, bold: true },
    ...stack(SAMPLES.scan.slice(1, 4), 60, 110, 22, 1.6),
    ...stack(SAMPLES.scan.slice(4, 7), 60, 250, 22, 1.6),
    { text: SAMPLES.scan[7], x: 60, y: 390, size: 24, bold: true },
    ...stack(SAMPLES.scan.slice(8), 60, 420, 20, 1.6),
  ];
  const png = renderLines(1000, 520, lines).toBuffer("image/png");
  const scanTruth = `${SAMPLES.scan.join("\n")}\n`;
  await fs.writeFile(path.join(dir, "scan.png"), png);
  await fs.writeFile(path.join(dir, "scan.txt"), scanTruth);
  await fs.writeFile(path.join(dir, "scan.pdf"), await imagePdf(png));
  await fs.writeFile(path.join(dir, "report.pdf"), await textPdf(SAMPLES.report));
  await fs.writeFile(
    path.join(dir, "report.txt"),
    `${SAMPLES.report.flatMap((page) => [page.heading, ...page.body]).join("\n")}\n`,
  );
}

/** A canvas as TIFF pages: 8-bit grey uncompressed, LZW (with strips) and Deflate; 1-bit PackBits; JPEG. */
function tiffPages(canvas: Canvas): Record<"none" | "lzw" | "deflate" | "packbits" | "jpeg", TiffPageInput> {
  const { width, height } = canvas;
  const rgba = canvas.getContext("2d").getImageData(0, 0, width, height).data;
  const grey = new Uint8Array(width * height);
  for (let i = 0; i < grey.length; i++)
    grey[i] = (rgba[i * 4]! * 77 + rgba[i * 4 + 1]! * 150 + rgba[i * 4 + 2]! * 29) >> 8;
  const stride = Math.ceil(width / 8);
  const bits = new Uint8Array(stride * height);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) if (grey[y * width + x]! < 128) bits[y * stride + (x >> 3)]! |= 0x80 >> (x & 7);
  }
  const base = { width, height, data: grey, bitsPerSample: 8, samplesPerPixel: 1, photometric: 1, dpi: 300 } as const;
  return {
    none: { ...base, compression: 1 },
    lzw: { ...base, compression: 5, rowsPerStrip: 64 },
    deflate: { ...base, compression: 8, rowsPerStrip: 100 },
    packbits: { ...base, data: bits, bitsPerSample: 1, photometric: 0, compression: 32773 },
    jpeg: { ...base, data: canvas.toBuffer("image/jpeg", 90), samplesPerPixel: 3, photometric: 6, compression: 7 },
  };
}

export async function generateFixtures(dir = FIXTURE_DIR): Promise<void> {
  const stamp = path.join(dir, ".version");
  if (existsSync(stamp) && (await fs.readFile(stamp, "utf8")) === VERSION) return;
  await fs.rm(dir, { recursive: true, force: true });
  await fs.mkdir(path.join(dir, "hostile"), { recursive: true });
  await fs.mkdir(path.join(dir, "tiff"), { recursive: true });
  const write = (name: string, bytes: Uint8Array | string) => fs.writeFile(path.join(dir, name), bytes);
  const withTruth = async (name: string, bytes: Uint8Array, truth: string) => {
    await write(name, bytes);
    await write(name.replace(/\.[a-z]+$/, ".gt.txt"), `${truth}\n`);
  };

  // A paragraph at a 300-DPI-like size, in PNG, WebP and EXIF-rotated JPEGs.
  const paragraph = renderLines(1500, 300, stack(TEXTS.paragraph, 40, 30, 36));
  const paragraphPng = paragraph.toBuffer("image/png");
  const paragraphTruth = TEXTS.paragraph.join("\n");
  await withTruth("paragraph.png", paragraphPng, paragraphTruth);
  await withTruth("paragraph.webp", paragraph.toBuffer("image/webp", 95), paragraphTruth);
  await withTruth("paragraph.jpg", paragraph.toBuffer("image/jpeg", 92), paragraphTruth);
  for (const orientation of [3, 6, 8] as const) {
    await withTruth(`paragraph-exif${orientation}.jpg`, exifJpeg(paragraph, orientation), paragraphTruth);
  }

  // TIFF: the paragraph in each compression the engine reads that the writer here can make (CCITT Group 3 and 4 are
  // committed, made once with ImageMagick: tests/fixtures/tiff/README.md), and a multi-page file of the PDF's pages.
  for (const [name, page] of Object.entries(tiffPages(paragraph)))
    await withTruth(`tiff/paragraph-${name}.tif`, writeTiff([page]), paragraphTruth);
  const tiffDocument = TEXTS.pdfPages.map(
    (page) => tiffPages(renderLines(1500, 300, stack([page.heading, ...page.body], 40, 30, 36))).lzw,
  );
  await withTruth(
    "tiff/three-pages.tif",
    writeTiff(tiffDocument),
    TEXTS.pdfPages.map((p) => [p.heading, ...p.body].join("\n")).join("\n\n"),
  );

  // The same text as a 75-DPI-like scan: small glyphs that need upscaling.
  await withTruth(
    "small-text.png",
    renderLines(480, 80, stack(TEXTS.paragraph, 10, 6, 11)).toBuffer("image/png"),
    paragraphTruth,
  );

  // Two columns: a reader must finish the left one before the right one.
  const columns = renderLines(1400, 760, [
    ...stack(TEXTS.columnLeft, 40, 30, 30),
    ...stack(TEXTS.columnRight, 720, 30, 30),
  ]);
  await withTruth(
    "two-column.png",
    columns.toBuffer("image/png"),
    [...TEXTS.columnLeft, ...TEXTS.columnRight].join("\n"),
  );

  // A dense page (4–6 s of recognition): for tests that need a job still running when its deadline passes.
  const denseLines = Array.from({ length: 64 }, (_, i) => TEXTS.paragraph[i % TEXTS.paragraph.length]!);
  await write("dense-page.png", renderLines(2000, 4400, stack(denseLines, 40, 30, 44, 1.5)).toBuffer("image/png"));

  // A narrow receipt.
  const receipt = renderLines(520, 560, stack(TEXTS.receipt, 30, 20, 30, 1.8));
  await withTruth("receipt.png", receipt.toBuffer("image/png"), TEXTS.receipt.join("\n"));

  // Heading, paragraph and a bulleted list (markdown structure from pixels).
  const structured = renderLines(1500, 480, [
    { text: TEXTS.heading, x: 40, y: 90, size: 64, bold: true },
    ...stack(TEXTS.body, 40, 140, 30),
    ...stack(
      TEXTS.bullets.map((b) => `•  ${b}`),
      70,
      280,
      30,
    ),
  ]);
  await withTruth(
    "structured.png",
    structured.toBuffer("image/png"),
    [TEXTS.heading, ...TEXTS.body, ...TEXTS.bullets].join("\n"),
  );

  // French, for automatic language selection.
  await withTruth(
    "french.png",
    renderLines(1700, 300, stack(TEXTS.french, 40, 30, 34)).toBuffer("image/png"),
    TEXTS.french.join("\n"),
  );

  // PDFs: born-digital, image-only (scanned), mixed, and an empty one.
  const pdfTruth = TEXTS.pdfPages.map((p) => [p.heading, ...p.body].join("\n")).join("\n\n");
  await withTruth("born-digital.pdf", await textPdf(TEXTS.pdfPages), pdfTruth);
  await withTruth("scanned.pdf", await imagePdf(paragraphPng), paragraphTruth);
  await withTruth(
    "scanned-3.pdf",
    await imagePdf(paragraphPng, 3),
    [paragraphTruth, paragraphTruth, paragraphTruth].join("\n\n"),
  );
  await withTruth(
    "mixed.pdf",
    await mixedPdf(paragraphPng),
    `${[TEXTS.pdfPages[0].heading, ...TEXTS.pdfPages[0].body].join("\n")}\n\n${paragraphTruth}`,
  );
  // pdf-lib adds a blank page on save unless told not to.
  await write("hostile/zero-pages.pdf", await (await PDFDocument.create()).save({ addDefaultPage: false }));
  await write("hostile/encrypted.pdf", encryptedPdf());

  // Hostile inputs.
  const jpeg = paragraph.toBuffer("image/jpeg", 92);
  const pdf = await textPdf(TEXTS.pdfPages);
  await write("hostile/empty.bin", new Uint8Array(0));
  await write("hostile/random.bin", seededBytes(4096, 7));
  await write("hostile/truncated.png", paragraphPng.subarray(0, Math.floor(paragraphPng.length / 2)));
  await write("hostile/truncated-header.png", paragraphPng.subarray(0, 20));
  await write("hostile/truncated.jpg", jpeg.subarray(0, Math.floor(jpeg.length / 2)));
  await write("hostile/truncated.pdf", pdf.subarray(0, Math.floor(pdf.length / 3)));
  await write("hostile/huge-header.png", greyPng(100_000, 100_000, deflateSync(new Uint8Array(1))));
  // A real decompression bomb: 8000×8000 white pixels (64 MP) in about 60 KB.
  const row = new Uint8Array(8001).fill(255);
  row[0] = 0;
  const rows = Buffer.alloc(row.length * 8000);
  for (let y = 0; y < 8000; y++) rows.set(row, y * row.length);
  await write("hostile/bomb.png", greyPng(8000, 8000, deflateSync(rows, { level: 9 })));
  await write("hostile/gif.gif", Buffer.from("GIF89a\x01\x00\x01\x00\x00\x00\x00;", "latin1"));
  await write("hostile/html.html", "<!doctype html><html><body>not an image</body></html>");
  await write("hostile/not-really.pdf", "%PDF-1.7\n this is not a PDF at all");
  await write("hostile/smuggled.jpg", smuggledJpeg());
  // A TIFF that declares 100 000 × 100 000 pixels over a strip of a few bytes, and one cut in the middle of its data.
  const tinyStrip = {
    width: 8,
    height: 1,
    data: new Uint8Array(8),
    bitsPerSample: 8,
    samplesPerPixel: 1,
    photometric: 1,
    compression: 8,
  } as const;
  await write("hostile/huge-header.tif", writeTiff([{ ...tinyStrip, declared: { width: 100_000, height: 100_000 } }]));
  const lzwTiff = writeTiff([tiffPages(paragraph).lzw]);
  await write("hostile/truncated.tif", lzwTiff.subarray(0, Math.floor(lzwTiff.length / 2)));
  for (const [name, bytes] of Object.entries(await hostilePdfs())) await write(name, bytes);

  await write(".version", VERSION);
}

// `npm run fixtures`; `npm run samples` (--samples)
if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(import.meta.filename)) {
  if (process.argv.includes("--samples")) {
    await generateSamples();
    console.log(`samples written to ${path.relative(process.cwd(), SAMPLES.dir)}`);
  } else {
    await generateFixtures();
    console.log(`fixtures written to ${path.relative(process.cwd(), FIXTURE_DIR)}`);
  }
}
