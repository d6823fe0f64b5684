import { readFileSync } from "node:fs";
import path from "node:path";
import { createCanvas, GlobalFonts, type Canvas } from "@napi-rs/canvas";
import { expect } from "vitest";
import {
  isOcrError,
  ocrDocumentSchema,
  type ExtractedDocument,
  type OcrDocument,
  type OcrError,
  type OcrErrorCode,
} from "@/lib/ocr/model";
import { OcrPool } from "@/lib/ocr/pool/pool";
import { render } from "@/lib/ocr";
import { FIXTURE_DIR } from "@/scripts/make-fixtures";

/** Bytes of a generated fixture (tests/.generated/, written by the global setup), e.g. `"hostile/bomb.png"`. */
export function fixture(name: string): Uint8Array {
  return new Uint8Array(readFileSync(path.join(FIXTURE_DIR, name)));
}

/** The pool every OCR test file uses: one worker, so the suite fits two cores with two files at a time. */
export function createTestPool(): OcrPool {
  return new OcrPool({ size: 1, queueLimit: 16, maxJobsPerWorker: 50, createTimeoutMs: 60_000 });
}

/** The OcrError a call rejects (or throws) with; fails the test on success or on any other error. */
export async function ocrErrorOf(work: Promise<unknown> | (() => unknown)): Promise<OcrError> {
  let outcome: unknown;
  try {
    outcome = typeof work === "function" ? await work() : await work;
  } catch (error) {
    if (!isOcrError(error)) {
      throw new Error(
        `expected an OcrError, got ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}`,
      );
    }
    return error;
  }
  throw new Error(`expected an OcrError, got a result: ${JSON.stringify(outcome)?.slice(0, 200)}`);
}

/** Asserts the error's engine code (and that it says something). */
export async function expectOcrError(work: Promise<unknown> | (() => unknown), code: OcrErrorCode): Promise<OcrError> {
  const error = await ocrErrorOf(work);
  expect(error.code).toBe(code);
  expect(error.message.length).toBeGreaterThan(0);
  return error;
}

/**
 * The `json` rendering parsed back through the public schema, with every box checked: inside [0, 1] and
 * ordered (x0 ≤ x1, y0 ≤ y1), on pages, blocks, lines and words alike.
 */
export function parsedJson(document: ExtractedDocument): OcrDocument {
  const parsed = ocrDocumentSchema.parse(JSON.parse(render(document, "json")));
  for (const page of parsed.pages) {
    expect(page.confidence).toBeGreaterThanOrEqual(0);
    expect(page.confidence).toBeLessThanOrEqual(100);
    for (const block of page.blocks) {
      expectBox(block.bbox);
      for (const line of block.lines) {
        expectBox(line.bbox);
        for (const word of line.words) expectBox(word.bbox);
      }
    }
  }
  return parsed;
}

function expectBox(bbox: readonly number[]): void {
  const [x0, y0, x1, y1] = bbox as [number, number, number, number];
  for (const v of bbox) {
    expect(v).toBeGreaterThanOrEqual(0);
    expect(v).toBeLessThanOrEqual(1);
  }
  expect(x0).toBeLessThanOrEqual(x1);
  expect(y0).toBeLessThanOrEqual(y1);
}

/** A deterministic PRNG (mulberry32): fuzz cases stay reproducible. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** A binary PGM (P5) of `width`×`height` white pixels with `bars` dark vertical bars: a tiny valid image. */
export function barsPgm(width = 200, height = 60, bars = 5): Uint8Array {
  const header = new TextEncoder().encode(`P5\n${width} ${height}\n255\n`);
  const out = new Uint8Array(header.length + width * height).fill(255);
  out.set(header, 0);
  for (let b = 0; b < bars; b++) {
    for (let y = Math.floor(height / 3); y < Math.floor((2 * height) / 3); y++) {
      const x0 = 20 + b * 35;
      out.fill(0, header.length + y * width + x0, header.length + y * width + Math.min(width, x0 + 15));
    }
  }
  return out;
}

let degradedFonts = false;
function registerDegradedFonts(): void {
  if (degradedFonts) return;
  GlobalFonts.registerFromPath(path.resolve("tests/fixtures/fonts/LiberationSans-Regular.ttf"), "Degraded Sans");
  GlobalFonts.registerFromPath(path.resolve("tests/fixtures/fonts/LiberationMono-Regular.ttf"), "Degraded Mono");
  degradedFonts = true;
}

/** How degradedPrint degrades a page. */
export interface Degradation {
  font?: "sans" | "mono";
  /** Font size before shrinking, px. */
  px?: number;
  lineHeight?: number;
  width?: number;
  /** Scale the page is drawn down to (blur and loss of detail). */
  shrink?: number;
  /** Peak-to-peak amplitude of the uniform noise added to every pixel. */
  noise?: number;
  ink?: number;
  paper?: number;
  /** JPEG quality, 0–100. */
  quality?: number;
}

/**
 * A degraded print of `lines` as a JPEG: grey text on grey paper, noise, drawn down and JPEG-compressed. With the
 * defaults (16 px sans, 60%, quality 45), Tesseract reads three lines with confidence under 80 (so its rescue pass
 * runs) and still mostly right.
 */
export function degradedPrint(lines: readonly string[], options: Degradation = {}): Uint8Array {
  const {
    font = "sans",
    px = 16,
    lineHeight = 40,
    width = 560,
    shrink = 0.6,
    noise = 30,
    ink = 0x8a,
    paper = 0xd8,
    quality = 45,
  } = options;
  registerDegradedFonts();
  const height = 30 + lines.length * lineHeight;
  const canvas = createCanvas(width, height);
  const ctx = canvas.getContext("2d");
  ctx.fillStyle = `rgb(${paper},${paper},${paper})`;
  ctx.fillRect(0, 0, width, height);
  ctx.fillStyle = `rgb(${ink},${ink},${ink})`;
  ctx.font = `${px}px "${font === "mono" ? "Degraded Mono" : "Degraded Sans"}"`;
  lines.forEach((line, i) => ctx.fillText(line, 12, 35 + i * lineHeight));
  const pixels = ctx.getImageData(0, 0, width, height);
  let seed = 42;
  for (let i = 0; i < pixels.data.length; i += 4) {
    seed = (seed * 1664525 + 1013904223) >>> 0;
    const delta = ((seed >>> 24) / 255 - 0.5) * noise;
    for (let c = 0; c < 3; c++) pixels.data[i + c] = Math.max(0, Math.min(255, pixels.data[i + c]! + delta));
  }
  ctx.putImageData(pixels, 0, 0);
  const small = createCanvas(Math.round(width * shrink), Math.round(height * shrink));
  small.getContext("2d").drawImage(canvas, 0, 0, small.width, small.height);
  return new Uint8Array(small.toBuffer("image/jpeg", quality));
}

/**
 * A blank sheet of grey paper (150, grain ±15), photographed and turned 4.6° onto a white 1100×800 canvas by an editor:
 * three tones and no text.
 */
export function blankSheetPhoto(): Canvas {
  const sheet = createCanvas(1000, 700);
  const sctx = sheet.getContext("2d");
  const pixels = sctx.createImageData(1000, 700);
  let seed = 3;
  const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  for (let i = 0; i < pixels.data.length; i += 4) {
    pixels.data[i] = pixels.data[i + 1] = pixels.data[i + 2] = 150 + (random() - 0.5) * 30;
    pixels.data[i + 3] = 255;
  }
  sctx.putImageData(pixels, 0, 0);
  const photo = createCanvas(1100, 800);
  const ctx = photo.getContext("2d");
  ctx.fillStyle = "#ffffff";
  ctx.fillRect(0, 0, 1100, 800);
  ctx.translate(550, 400);
  ctx.rotate(0.08);
  ctx.drawImage(sheet, -500, -350);
  return photo;
}
