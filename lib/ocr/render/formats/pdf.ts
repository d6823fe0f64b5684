import { readFile } from "node:fs/promises";
import path from "node:path";
import fontkit from "@pdf-lib/fontkit";
import {
  beginText,
  concatTransformationMatrix,
  drawObject,
  endText,
  PDFDocument,
  popGraphicsState,
  pushGraphicsState,
  setFontAndSize,
  setTextMatrix,
  setTextRenderingMode,
  showText,
  StandardFonts,
  TextRenderingMode,
  type PDFFont,
  type PDFPage,
  type PDFRef,
} from "pdf-lib";
import type { ExtractedPage } from "../../model/document";
import type { FileType } from "../../model/detect";
import { readImageInfo, isTransposed } from "../../model/image-info";
import { OcrError } from "../../model/ocr-error";
import { pageRotation, wordsOf, wordText } from "./common";
import { embedPngFast } from "./png";
import { embedTiffPage } from "./tiff";
import { readTiffPages } from "../../model/tiff";

/*
 * The searchable PDF (`format: "pdf"`): the document the caller sent, with an invisible text layer (text render mode
 * 3, as Tesseract and OCRmyPDF write it) on every page that was read by OCR, one text object per word placed on the
 * word's box and stretched horizontally to its width, so selecting or searching a word marks the word under it.
 *
 * - An image becomes one page showing the image as the engine read it (JPEG embedded as it is, PNG as it is or
 *   losslessly re-compressed (./png.ts), WebP decoded to PNG; EXIF orientation applied by the page's drawing matrix,
 *   as the engine applied it), at its resolution when the file says one (JFIF density, PNG pHYs), else 72 dpi: one
 *   pixel, one point.
 * - A TIFF's selected pages become one page each, showing the page's samples as stored (./tiff.ts), sized by its
 *   resolution (each axis its own: a fax page is a letter page).
 * - A PDF's selected pages are copied as they are (copyPages); pages read from their own text layer get nothing
 *   added, so their text stays exactly theirs; scanned pages get the invisible words over the page as drawn (the
 *   original page, not a re-encoded picture of it: nothing lost, nothing grown), on the page as displayed (its crop
 *   box and `/Rotate`), which is the page the word boxes are measured on.
 *
 * The text is written in Helvetica (a standard font, nothing embedded) when every word can be encoded in it
 * (WinAnsi: all the Latin-script languages the service reads); otherwise the document embeds a subset of DejaVu Sans
 * (npm `dejavu-fonts-ttf`, its free license) holding the characters used.
 */

export interface PdfSource {
  bytes: Uint8Array;
  type: FileType;
}

/** Where DejaVu Sans is at run time (traced into the functions that render PDFs: next.config.ts). */
export const UNICODE_FONT_PATH = path.join(process.cwd(), "node_modules", "dejavu-fonts-ttf", "ttf", "DejaVuSans.ttf");

/** Of a font's em: the ascent and descent the invisible words are fitted between (Helvetica's; close for DejaVu). */
const ASCENT = 0.718;
const DESCENT = 0.207;

/** `pages`: the pages read from `source`, in order (each with the number it has in the file). */
export async function renderSearchablePdf(pages: readonly ExtractedPage[], source: PdfSource): Promise<Uint8Array> {
  const output = await PDFDocument.create({ updateMetadata: false });
  output.setProducer("ocr-service");
  output.setCreator("ocr-service");
  const font = await chooseFont(output, pages);

  if (source.type === "pdf") {
    const input = await loadSourcePdf(source.bytes);
    // pdf-lib parses less than pdf.js: a page object it cannot read (a MediaBox of 400-digit or `1e9` numbers) is
    // missing from its tree, and copying it fails deep inside — a 422 that says so, not a 500.
    try {
      const copied = await output.copyPages(
        input,
        pages.map((page) => page.number - 1),
      );
      copied.forEach((pdfPage, i) => {
        output.addPage(pdfPage);
        const page = pages[i]!;
        if (page.source === "ocr") drawInvisibleWords(pdfPage, page, font, displayedToUser(pdfPage));
      });
    } catch (error) {
      throw new OcrError(
        "unreadable",
        "This PDF could be read but its pages could not be rebuilt as a searchable PDF (a page's structure, such as its MediaBox, is beyond what the PDF writer reads); ask for another format",
        {
          cause: error,
        },
      );
    }
  } else if (source.type === "tiff") {
    const tiffPages = readTiffPages(source.bytes);
    for (const page of pages) {
      const image = await embedTiffPage(output, source.bytes, tiffPages[page.number - 1]!);
      const pdfPage = output.addPage([image.pageWidth, image.pageHeight]);
      drawImage(pdfPage, { ...image, orientation: 1 });
      drawInvisibleWords(pdfPage, page, font, (x, y) => [x * image.pageWidth, (1 - y) * image.pageHeight]);
    }
  } else {
    const page = pages[0];
    if (!page) throw new Error("an image document has one page");
    const image = await embedImage(output, source);
    const pdfPage = output.addPage([image.pageWidth, image.pageHeight]);
    drawImage(pdfPage, image);
    const { pageWidth: width, pageHeight: height } = image;
    drawInvisibleWords(pdfPage, page, font, (x, y) => [x * width, (1 - y) * height]);
  }
  return output.save({ useObjectStreams: true });
}

/** Helvetica when it can encode every word; otherwise a subset of DejaVu Sans. */
async function chooseFont(output: PDFDocument, pages: readonly ExtractedPage[]): Promise<PDFFont> {
  const helvetica = await output.embedFont(StandardFonts.Helvetica);
  for (const page of pages) {
    if (page.source !== "ocr") continue;
    for (const block of page.blocks) {
      for (const line of block.lines) {
        for (const word of wordsOf(line.words)) {
          try {
            helvetica.encodeText(wordText(word));
          } catch {
            output.registerFontkit(fontkit);
            return output.embedFont(await readFile(UNICODE_FONT_PATH), { subset: true });
          }
        }
      }
    }
  }
  return helvetica;
}

async function loadSourcePdf(bytes: Uint8Array): Promise<PDFDocument> {
  let input: PDFDocument;
  try {
    input = await PDFDocument.load(bytes, {
      ignoreEncryption: true,
      updateMetadata: false,
      throwOnInvalidObject: false,
    });
  } catch (error) {
    throw new OcrError(
      "unreadable",
      "This PDF could be read but not rebuilt as a searchable PDF; ask for another format",
      {
        cause: error,
      },
    );
  }
  if (input.isEncrypted) {
    throw new OcrError(
      "encrypted",
      "This PDF is encrypted: its pages cannot be copied into a searchable PDF; ask for another format, or send it decrypted",
    );
  }
  return input;
}

/** A point of the page as displayed (0–1 across, 0–1 down) → user space of the PDF page (crop box and `/Rotate`). */
type ToUser = (x: number, y: number) => [number, number];

function displayedToUser(page: PDFPage): ToUser {
  const { x: cx, y: cy, width: cw, height: ch } = page.getCropBox();
  const rotation = (((page.getRotation().angle % 360) + 360) % 360) as number;
  switch (rotation) {
    case 90:
      return (x, y) => [cx + y * cw, cy + x * ch];
    case 180:
      return (x, y) => [cx + (1 - x) * cw, cy + y * ch];
    case 270:
      return (x, y) => [cx + (1 - y) * cw, cy + (1 - x) * ch];
    default:
      return (x, y) => [cx + x * cw, cy + (1 - y) * ch];
  }
}

/**
 * A point of the page turned upright (0–1 both ways) → the same point on the page as sent, for a page the engine
 * turned `rotation` degrees clockwise to read it (the page model's `rotation`, when the engine reports one).
 */
function fromUpright(rotation: number): (u: number, v: number) => [number, number] {
  switch (rotation) {
    case 90:
      return (u, v) => [v, 1 - u];
    case 180:
      return (u, v) => [1 - u, 1 - v];
    case 270:
      return (u, v) => [1 - v, u];
    default:
      return (u, v) => [u, v];
  }
}

/** The inverse of {@link fromUpright}. */
function toUpright(rotation: number): (x: number, y: number) => [number, number] {
  return fromUpright((360 - rotation) % 360);
}

/**
 * One invisible text object per word: its baseline across the box at the font's descent above the bottom, its em
 * the box's height over ascent + descent, and stretched (the text matrix) so the word's advance spans the box's width.
 * On a page the engine read turned (`rotation`), that is in the upright reading, mapped back onto the page as sent:
 * the words then run up, down or right to left on it, as the printed ones do.
 */
function drawInvisibleWords(pdfPage: PDFPage, page: ExtractedPage, font: PDFFont, toUser: ToUser): void {
  const fontKey = pdfPage.node.newFontDictionary(font.name, font.ref);
  const operators = [
    pushGraphicsState(),
    beginText(),
    setTextRenderingMode(TextRenderingMode.Invisible),
    setFontAndSize(fontKey, 1),
  ];
  const rotation = pageRotation(page);
  const upright = toUpright(rotation);
  const back = fromUpright(rotation);
  const user = (u: number, v: number) => toUser(...back(u, v));
  let count = 0;
  for (const block of page.blocks) {
    for (const line of block.lines) {
      for (const word of wordsOf(line.words)) {
        const text = wordText(word);
        const advance = font.widthOfTextAtSize(text, 1);
        const [ax, ay] = upright(word.bbox[0], word.bbox[1]);
        const [bx, by] = upright(word.bbox[2], word.bbox[3]);
        const [x0, y0, x1, y1] = [Math.min(ax, bx), Math.min(ay, by), Math.max(ax, bx), Math.max(ay, by)];
        if (advance <= 0 || x1 <= x0 || y1 <= y0) continue;
        const em = (y1 - y0) / (ASCENT + DESCENT);
        const baseline = y1 - DESCENT * em;
        const [ox, oy] = user(x0, baseline);
        const [rx, ry] = user(x1, baseline);
        const [ux, uy] = user(x0, baseline - em);
        operators.push(
          setTextMatrix((rx - ox) / advance, (ry - oy) / advance, ux - ox, uy - oy, ox, oy),
          showText(font.encodeText(text)),
        );
        count++;
      }
    }
  }
  operators.push(endText(), popGraphicsState());
  if (count > 0) pdfPage.pushOperators(...operators);
}

interface EmbeddedImage {
  ref: PDFRef;
  /** The page, in points: the image as displayed (EXIF orientation applied) at its resolution. */
  pageWidth: number;
  pageHeight: number;
  /** EXIF orientation 1–8 (1: as stored). */
  orientation: number;
}

async function embedImage(output: PDFDocument, source: PdfSource): Promise<EmbeddedImage> {
  if (source.type === "pdf" || source.type === "tiff") throw new Error("not a single image");
  const info = readImageInfo(source.bytes, source.type);
  let image: { ref: PDFRef; width: number; height: number };
  let dpi: number | undefined;
  if (source.type === "jpeg") {
    image = await output.embedJpg(source.bytes);
    dpi = jpegDpi(source.bytes);
  } else if (source.type === "png") {
    image = (await embedPngFast(output, source.bytes)) ?? (await output.embedPng(source.bytes));
    dpi = pngDpi(source.bytes);
  } else {
    const png = await webpToPng(source.bytes);
    image = (await embedPngFast(output, png)) ?? (await output.embedPng(png));
  }
  const scale = 72 / (dpi && dpi >= 10 && dpi <= 10_000 ? dpi : 72);
  const transposed = isTransposed(info.orientation);
  const width = (transposed ? image.height : image.width) * scale;
  const height = (transposed ? image.width : image.height) * scale;
  return { ref: image.ref, pageWidth: width, pageHeight: height, orientation: info.orientation };
}

/**
 * Draw the image on its page for its EXIF orientation: the image's unit square (s right, t up: the stored picture)
 * onto the page as displayed, as the engine saw it.
 */
function drawImage(pdfPage: PDFPage, embedded: EmbeddedImage): void {
  const { pageWidth: w, pageHeight: h, orientation } = embedded;
  // Stored (u right, v down, 0–1) → displayed (x right, y down, 0–1), per EXIF orientation.
  const display: Record<number, (u: number, v: number) => [number, number]> = {
    1: (u, v) => [u, v],
    2: (u, v) => [1 - u, v],
    3: (u, v) => [1 - u, 1 - v],
    4: (u, v) => [u, 1 - v],
    5: (u, v) => [v, u],
    6: (u, v) => [1 - v, u],
    7: (u, v) => [1 - v, 1 - u],
    8: (u, v) => [v, 1 - u],
  };
  const map = display[orientation] ?? display[1]!;
  const point = (s: number, t: number): [number, number] => {
    const [x, y] = map(s, 1 - t);
    return [x * w, (1 - y) * h];
  };
  const [e, f] = point(0, 0);
  const [ax, ay] = point(1, 0);
  const [cx, cy] = point(0, 1);
  const name = pdfPage.node.newXObject("Image", embedded.ref);
  pdfPage.pushOperators(
    pushGraphicsState(),
    concatTransformationMatrix(ax - e, ay - f, cx - e, cy - f, e, f),
    drawObject(name),
    popGraphicsState(),
  );
}

/** Resolution from a JPEG's JFIF APP0 segment (units 1: dots per inch, 2: per cm), if it says one. */
export function jpegDpi(bytes: Uint8Array): number | undefined {
  // SOI, then APP0 "JFIF\0": version (2), units (1), Xdensity (2), Ydensity (2).
  if (bytes.length < 18 || bytes[0] !== 0xff || bytes[1] !== 0xd8 || bytes[2] !== 0xff || bytes[3] !== 0xe0)
    return undefined;
  if (String.fromCharCode(...bytes.subarray(6, 11)) !== "JFIF\0") return undefined;
  const units = bytes[13];
  const density = (bytes[14]! << 8) | bytes[15]!;
  if (density === 0) return undefined;
  return units === 1 ? density : units === 2 ? density * 2.54 : undefined;
}

/** Resolution from a PNG's pHYs chunk (unit 1: pixels per metre), if it says one. */
export function pngDpi(bytes: Uint8Array): number | undefined {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  // Chunks after the 8-byte signature, before the image data.
  for (let offset = 8; offset + 12 <= bytes.length;) {
    const length = view.getUint32(offset);
    const type = String.fromCharCode(...bytes.subarray(offset + 4, offset + 8));
    if (type === "IDAT" || type === "IEND") return undefined;
    if (type === "pHYs" && length >= 9 && offset + 17 <= bytes.length) {
      const perMetre = view.getUint32(offset + 8);
      return bytes[offset + 16] === 1 && perMetre > 0 ? perMetre * 0.0254 : undefined;
    }
    offset += 12 + length;
  }
  return undefined;
}

/** WebP cannot go into a PDF as it is: decoded (the native canvas, loaded only here) and written as PNG. */
async function webpToPng(bytes: Uint8Array): Promise<Uint8Array> {
  const { loadImage, createCanvas } = await import("@napi-rs/canvas");
  const image = await loadImage(Buffer.from(bytes));
  const canvas = createCanvas(image.width, image.height);
  canvas.getContext("2d").drawImage(image, 0, 0);
  return new Uint8Array(await canvas.encode("png"));
}
