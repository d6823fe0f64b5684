import path from "node:path";
import { createCanvas, GlobalFonts, type Canvas } from "@napi-rs/canvas";

/**
 * Pages of a table of numbers, drawn upright (issue 39: such a page was read as turned by a quarter): right-aligned
 * numbers in narrow cells, many rows, a title line, with or without rules; and a page of text from the same
 * generator (the same size, font and margins) to turn on purpose.
 */
GlobalFonts.registerFromPath(path.resolve("tests/fixtures/fonts/LiberationSans-Regular.ttf"), "Table Sans");

const FONT = 28;
const WIDTH = 1400;
const LEFT = 100;
const TOP = 170;

export interface TablePage {
  canvas: Canvas;
  /** The text as drawn: the title, then one line per row (cells separated by spaces). */
  truth: string;
}

function blankPage(height: number): Canvas {
  const canvas = createCanvas(WIDTH, height);
  const ctx = canvas.getContext("2d");
  ctx.fillStyle = "#ffffff";
  ctx.fillRect(0, 0, canvas.width, canvas.height);
  ctx.fillStyle = "#000000";
  ctx.font = `${FONT}px "Table Sans"`;
  return canvas;
}

/** `columns` columns of small numbers (the first counts the rows) in `rows` rows `pitch` pixels apart. */
export function tablePage({
  ruled,
  columns = 6,
  rows = 24,
  pitch = 60,
}: {
  ruled: boolean;
  columns?: number;
  rows?: number;
  pitch?: number;
}): TablePage {
  const canvas = blankPage(TOP + rows * pitch + 80);
  const ctx = canvas.getContext("2d");
  const title = "Rainfall by station, in millimetres";
  ctx.fillText(title, LEFT, 110);
  const cellWidth = (WIDTH - 2 * LEFT) / columns;
  const lines = [title];
  ctx.textAlign = "right";
  for (let r = 0; r < rows; r++) {
    const cells = Array.from({ length: columns }, (_, c) => String(c === 0 ? r + 1 : (r * 37 + c * 11) % 97));
    cells.forEach((cell, c) =>
      ctx.fillText(cell, LEFT + (c + 1) * cellWidth - 20, TOP + (r + 1) * pitch - pitch * 0.3),
    );
    lines.push(cells.join(" "));
  }
  if (ruled) {
    ctx.fillStyle = "#222222";
    for (let r = 0; r <= rows; r++) ctx.fillRect(LEFT, TOP + r * pitch, WIDTH - 2 * LEFT, 2);
    for (let c = 0; c <= columns; c++) ctx.fillRect(LEFT + c * cellWidth, TOP, 2, rows * pitch);
  }
  return { canvas, truth: lines.join("\n") };
}

const SENTENCES = [
  "The stations along the river measured the rain",
  "every morning at nine, and the county office kept",
  "their books for more than a hundred years. The",
  "wettest month on record was the October of the",
  "great flood, when the lower bridge was closed.",
  "Most years the summer months bring little rain,",
  "and the farmers of the valley depend on the wells.",
];

/** A page of running text, drawn as tablePage draws its title. */
export function textPage(): TablePage {
  const canvas = blankPage(TOP + SENTENCES.length * 46 + 80);
  const ctx = canvas.getContext("2d");
  SENTENCES.forEach((line, i) => ctx.fillText(line, LEFT, 110 + i * 46));
  return { canvas, truth: SENTENCES.join("\n") };
}
