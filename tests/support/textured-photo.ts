import path from "node:path";
import { createCanvas, GlobalFonts, type Canvas, type SKRSContext2D } from "@napi-rs/canvas";

/**
 * A phone photo of a printed page lying on a table (issue 39, item 8: the table's texture read as 13 lines of garbage
 * and the page's headings lost): a page of text with headings in large type, short lines and body text, drawn onto a
 * synthetic surface (wood grain, woven fabric or a dark desk with noise), turned a few degrees, narrowed at the top
 * as a photo taken at a slant is, lit unevenly with a shadow across it, with grain over everything.
 */
GlobalFonts.registerFromPath(path.resolve("tests/fixtures/fonts/LiberationSans-Regular.ttf"), "Photo Sans");
GlobalFonts.registerFromPath(path.resolve("tests/fixtures/fonts/LiberationSans-Bold.ttf"), "Photo Sans Bold");

export type Surface = "wood" | "fabric" | "desk";

export interface TexturedPhotoOptions {
  surface?: Surface;
  /** Degrees, clockwise. */
  rotation?: number;
  /** How much narrower the page's top edge is than its bottom (0: none). */
  keystone?: number;
  /** The page's width as a share of the photo's. */
  pageShare?: number;
  /** The page's centre moved down by this share of the photo's height (a close-up: the page runs off the bottom). */
  shift?: number;
  seed?: number;
}

export interface TexturedPhoto {
  canvas: Canvas;
  /** The page's text, line by line, as drawn. */
  truth: string;
  /** Its lines, for checking that an answer holds no other line. */
  lines: string[];
}

type Row = { text: string; size: number; bold?: boolean; gap?: number };

const ROWS: Row[] = [
  { text: "Annual Garden Report", size: 64, bold: true, gap: 40 },
  { text: "Prepared for the members of the society", size: 30, gap: 50 },
  { text: "Spring Planting", size: 44, bold: true, gap: 20 },
  { text: "The first beds were dug in March, as soon as the ground", size: 30 },
  { text: "had dried out after the long winter rains. We planted", size: 30 },
  { text: "early potatoes, onions and two rows of broad beans.", size: 30, gap: 30 },
  { text: "Notes:", size: 30, bold: true },
  { text: "Water often.", size: 30, gap: 50 },
  { text: "Summer Harvest", size: 44, bold: true, gap: 20 },
  { text: "The tomatoes ripened late but the crop was large, and", size: 30 },
  { text: "the members shared the surplus with the local school.", size: 30 },
  { text: "Beans and courgettes did well in the warm weather.", size: 30, gap: 50 },
  { text: "Plans for Next Year", size: 44, bold: true, gap: 20 },
  { text: "We will build a second greenhouse and order seeds", size: 30 },
  { text: "before the end of January.", size: 30 },
];

/** A deterministic generator of numbers in [0, 1). */
function random(seed: number): () => number {
  let state = seed >>> 0 || 1;
  return () => {
    state = (state * 1664525 + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

/** The printed page, on white. */
function drawPage(): { canvas: Canvas; lines: string[] } {
  const [width, height, left] = [1700, 2200, 150];
  const canvas = createCanvas(width, height);
  const ctx = canvas.getContext("2d");
  ctx.fillStyle = "#ffffff";
  ctx.fillRect(0, 0, width, height);
  ctx.fillStyle = "#111111";
  ctx.textBaseline = "alphabetic";
  let y = 230;
  for (const row of ROWS) {
    ctx.font = `${row.size}px "${row.bold ? "Photo Sans Bold" : "Photo Sans"}"`;
    y += row.size * 1.1;
    ctx.fillText(row.text, left, y);
    y += row.size * 0.45 + (row.gap ?? 0);
  }
  return { canvas, lines: ROWS.map((r) => r.text) };
}

/** Fills the canvas pixel by pixel, row by row: `tone` gives a grey level, `tint` its red, green and blue shares. */
function paintSurface(
  ctx: SKRSContext2D,
  width: number,
  height: number,
  tint: readonly [number, number, number],
  tone: (x: number, y: number) => number,
): void {
  const image = ctx.createImageData(width, height);
  const { data } = image;
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const value = tone(x, y);
      const i = (y * width + x) * 4;
      data[i] = value * tint[0];
      data[i + 1] = value * tint[1];
      data[i + 2] = value * tint[2];
      data[i + 3] = 255;
    }
  }
  ctx.putImageData(image, 0, 0);
}

function woodSurface(ctx: SKRSContext2D, width: number, height: number, next: () => number): void {
  const phases = Array.from({ length: 4 }, () => next() * Math.PI * 2);
  const knots = Array.from({ length: 5 }, () => ({ x: next() * width, y: next() * height, r: 30 + next() * 60 }));
  paintSurface(ctx, width, height, [1.0, 0.68, 0.42], (x, y) => {
    // Grain runs along y, bent slowly, with fine dark lines between the growth rings.
    let warp = 18 * Math.sin(y / 230 + phases[0]!) + 7 * Math.sin(y / 61 + phases[1]!);
    for (const knot of knots) {
      const d = Math.hypot(x - knot.x, y - knot.y);
      if (d < knot.r * 4) warp += (knot.r * 2 * (knot.x - x)) / (d + knot.r);
    }
    const u = x + warp;
    const ring = Math.sin(u / 9 + 2 * Math.sin(u / 47 + phases[2]!));
    const fine = Math.sin(u / 2.3 + phases[3]!) > 0.85 ? -35 : 0;
    return 150 + 35 * ring + fine + (next() - 0.5) * 30;
  });
}

function fabricSurface(ctx: SKRSContext2D, width: number, height: number, next: () => number): void {
  paintSurface(ctx, width, height, [0.7, 0.8, 1.0], (x, y) => {
    // A weave: threads over and under every few pixels, in blue-grey, with fibres of noise.
    const warpThread = Math.sin((x * Math.PI) / 5);
    const weftThread = Math.sin((y * Math.PI) / 5);
    const over = (Math.floor(x / 5) + Math.floor(y / 5)) % 2 === 0 ? warpThread : weftThread;
    return 95 + 45 * Math.abs(over) + (next() - 0.5) * 40;
  });
}

function deskSurface(ctx: SKRSContext2D, width: number, height: number, next: () => number): void {
  paintSurface(ctx, width, height, [1, 0.95, 0.9], (x, y) => {
    // Dark laminate with speckles and scratches.
    const speck = next() < 0.01 ? 70 : 0;
    const scratch = (x * 3 + y * 7) % 211 < 2 ? 40 : 0;
    return 55 + speck + scratch + (next() - 0.5) * 35;
  });
}

/** The photo: the page on the surface, turned, narrowed at the top, in uneven light, with grain. */
export function texturedPhoto({
  surface = "wood",
  rotation = 3,
  keystone = 0.06,
  pageShare = 0.72,
  shift = 0,
  seed = 1,
}: TexturedPhotoOptions = {}): TexturedPhoto {
  const next = random(seed);
  const page = drawPage();
  const [width, height] = [2000, 2400];
  const canvas = createCanvas(width, height);
  const ctx = canvas.getContext("2d");
  ({ wood: woodSurface, fabric: fabricSurface, desk: deskSurface })[surface](ctx, width, height, next);

  // The page, centred, turned by `rotation`; drawn in strips each a little wider than the one above (keystone).
  const pageWidth = width * pageShare;
  const scale = pageWidth / page.canvas.width;
  const pageHeight = page.canvas.height * scale;
  ctx.save();
  ctx.translate(width / 2, height / 2 + shift * height);
  ctx.rotate((rotation * Math.PI) / 180);
  ctx.shadowColor = "rgba(0, 0, 0, 0.55)";
  ctx.shadowBlur = 40;
  ctx.shadowOffsetX = 18;
  ctx.shadowOffsetY = 22;
  ctx.fillStyle = "#f4f1ea";
  // The sheet as one shape (its shadow falls on the surface), then the print on it in strips (keystone).
  const strips = 64;
  const stripSource = page.canvas.height / strips;
  const top = pageWidth * (1 - keystone);
  ctx.beginPath();
  ctx.moveTo(-top / 2, -pageHeight / 2);
  ctx.lineTo(top / 2, -pageHeight / 2);
  ctx.lineTo(pageWidth / 2, pageHeight / 2);
  ctx.lineTo(-pageWidth / 2, pageHeight / 2);
  ctx.closePath();
  ctx.fill();
  ctx.shadowColor = "transparent";
  ctx.globalCompositeOperation = "multiply";
  for (let s = 0; s < strips; s++) {
    const t = s / strips;
    const narrow = 1 - keystone * (1 - t);
    const w = pageWidth * narrow;
    const y = -pageHeight / 2 + t * pageHeight;
    ctx.drawImage(
      page.canvas,
      0,
      s * stripSource,
      page.canvas.width,
      stripSource,
      -w / 2,
      y,
      w,
      pageHeight / strips + 1,
    );
  }
  ctx.restore();

  // Uneven light: brighter near a corner, a soft shadow (a hand, the phone) across one side.
  ctx.globalCompositeOperation = "multiply";
  const light = ctx.createRadialGradient(width * 0.3, height * 0.2, 100, width * 0.5, height * 0.5, width);
  light.addColorStop(0, "rgb(255,255,255)");
  light.addColorStop(1, "rgb(170,170,170)");
  ctx.fillStyle = light;
  ctx.fillRect(0, 0, width, height);
  const shade = ctx.createLinearGradient(width * 0.62, 0, width, height * 0.15);
  shade.addColorStop(0, "rgb(255,255,255)");
  shade.addColorStop(0.5, "rgb(150,150,155)");
  shade.addColorStop(1, "rgb(120,120,125)");
  ctx.fillStyle = shade;
  ctx.fillRect(0, 0, width, height);
  ctx.globalCompositeOperation = "source-over";

  // Sensor grain over everything.
  const image = ctx.getImageData(0, 0, width, height);
  const { data } = image;
  for (let i = 0; i < data.length; i += 4) {
    const grain = (next() - 0.5) * 18;
    for (let c = 0; c < 3; c++) data[i + c] = Math.max(0, Math.min(255, data[i + c]! + grain));
  }
  ctx.putImageData(image, 0, 0);
  return { canvas, truth: page.lines.join("\n"), lines: page.lines };
}
