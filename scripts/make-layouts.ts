/**
 * npm run layouts [-- DIR]: the generated layout suite (docs/benchmark.md#layouts). Pages whose reading order is
 * known, drawn with the repository's Liberation fonts: two and three columns under running headers and footers, text
 * wrapped around a figure, a magazine page whose photograph sits in one column, ruled and unruled tables, a
 * line-numbered transcript, an article with a sidebar and a form (labels and values in rows, checkboxes, boxed fields). Each `<name>.png` gets a `<name>.gt.txt` holding its text in
 * the order people read it. Deterministic: the same bytes on every run (fixed text, fixed layout, no randomness), so
 * the bench and the tests judge the same pages.
 *
 * The order the ground truth gives, per kind of content: a running header, then the title, then each column top to
 * bottom, left column first; a figure's caption after the text beside the figure (the figure and its caption stand in
 * the text as one more column) and before the text under it; a table row by row, each row's cells left to right; a
 * line number before its line; a sidebar after the article it stands beside; a form row by row, each label before its
 * value; the footer last.
 */
import { mkdirSync, writeFileSync, existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { createCanvas, GlobalFonts, type SKRSContext2D } from "@napi-rs/canvas";

// The bench runs a bundled copy from node_modules/.cache and says where the repository is (bench/index.mjs).
const ROOT = process.env.OCR_BENCH_ROOT ?? path.resolve(import.meta.dirname, "..");
/** Where the suite is written (git-ignored, beside the generated test fixtures). */
export const LAYOUT_DIR = path.join(ROOT, "tests/.generated/layouts");
const FONT_DIR = path.join(ROOT, "tests/fixtures/fonts");

const SANS = "Layout Suite Sans";
const BOLD = "Layout Suite Bold";
const MONO = "Layout Suite Mono";

let fontsRegistered = false;
function registerFonts(): void {
  if (fontsRegistered) return;
  GlobalFonts.registerFromPath(path.join(FONT_DIR, "LiberationSans-Regular.ttf"), SANS);
  GlobalFonts.registerFromPath(path.join(FONT_DIR, "LiberationSans-Bold.ttf"), BOLD);
  GlobalFonts.registerFromPath(path.join(FONT_DIR, "LiberationMono-Regular.ttf"), MONO);
  fontsRegistered = true;
}

/** Plain prose of common words (OCR reads it well: the scores measure order, not letters). */
const PROSE = [
  "The river rises in the high hills and runs for many miles through quiet farms before it reaches the sea.",
  "In early spring the water is cold and fast, and the fishermen wait on the banks for the first warm days.",
  "Small towns grew along its course wherever a bridge could be built or a boat could safely land its cargo.",
  "Each town kept a market once a week, where farmers sold apples, cheese, wool and bread to their neighbours.",
  "The old mill still stands beside the weir, although its wheel has not turned for more than fifty years.",
  "Children learn to swim in the shallow pools below the mill, watched by parents sitting in the long grass.",
  "When the autumn rains come, the river climbs its banks and covers the low meadows with a thin brown sheet.",
  "The floods leave rich soil behind them, and the next harvest in those fields is often the best of the decade.",
  "Travellers who follow the path from the coast can walk from one town to the next in a single easy day.",
  "Most of them stop at the inn by the stone bridge, which has served hot meals to walkers for two centuries.",
  "The landlord keeps a book in which every guest may write a line about the weather, the road or the food.",
  "Some of the oldest pages are kept under glass in the hall, and visitors read them while they wait for dinner.",
  "Further upstream the valley narrows, the woods close in, and the road climbs slowly towards the high pass.",
  "Snow lies on the pass until late in May, and the shepherds bring their flocks up only when it has melted.",
  "In summer the hills are green and loud with birds, and the evenings stay light until close to midnight.",
  "A small school in the last village teaches twelve children, who walk there every morning from the farms.",
  "Their teacher has written a short history of the valley, printed by the council and sold at the post office.",
  "It tells how the first families arrived, how they cleared the forest, and how they learned to live with floods.",
  "The book also lists the names of every bridge, every mill and every chapel that was ever built by the river.",
  "Readers who finish it often say that they will never again cross a bridge without asking who first built it.",
  "The council plans to repair the towpath next year so that cyclists can ride from the sea to the pass.",
  "Money for the work will come from the county, from local firms and from a fair held in the town square.",
  "Volunteers have already cleared the worst of the brambles and marked the places where the bank has fallen.",
  "Engineers say the whole path could be open again within two summers if the weather is kind to the crews.",
];

/** Sentences from `start`, wrapping around the list, `count` of them. */
function sentences(start: number, count: number): string {
  return Array.from({ length: count }, (_, i) => PROSE[(start + i) % PROSE.length]!).join(" ");
}

/** A page being drawn, and its text in reading order. */
class Page {
  readonly ctx: SKRSContext2D;
  readonly truth: string[] = [];
  private readonly canvas;

  constructor(
    readonly width: number,
    readonly height: number,
  ) {
    registerFonts();
    this.canvas = createCanvas(width, height);
    this.ctx = this.canvas.getContext("2d");
    this.ctx.fillStyle = "#ffffff";
    this.ctx.fillRect(0, 0, width, height);
    this.ctx.textBaseline = "alphabetic";
  }

  font(size: number, family = SANS): void {
    this.ctx.font = `${size}px "${family}"`;
  }

  /** One line of text at (x, baseline y); `read` false draws it without a place in the ground truth (yet). */
  text(text: string, x: number, y: number, read = true): void {
    this.ctx.fillStyle = "#111111";
    this.ctx.fillText(text, x, y);
    if (read) this.truth.push(text);
  }

  /** Words of `text` in lines no wider than `width(i)` for line i (greedy; no hyphens). */
  wrap(text: string, width: (line: number) => number): string[] {
    const lines: string[] = [];
    let current = "";
    for (const word of text.split(" ")) {
      const next = current ? `${current} ${word}` : word;
      if (current && this.ctx.measureText(next).width > width(lines.length)) {
        lines.push(current);
        current = word;
      } else current = next;
    }
    if (current) lines.push(current);
    return lines;
  }

  /** A line set flush left and right across `width` (spaces stretched), as justified columns are. */
  justified(text: string, x: number, y: number, width: number): void {
    const words = text.split(" ");
    const inked = words.reduce((sum, w) => sum + this.ctx.measureText(w).width, 0);
    const space = words.length > 1 ? (width - inked) / (words.length - 1) : 0;
    let left = x;
    this.ctx.fillStyle = "#111111";
    for (const word of words) {
      this.ctx.fillText(word, left, y);
      left += this.ctx.measureText(word).width + space;
    }
    this.truth.push(text);
  }

  /** A photograph-like picture: shaded sky, hills and a sun, no text. */
  picture(x: number, y: number, w: number, h: number): void {
    const ctx = this.ctx;
    ctx.fillStyle = "#9fb8d0";
    ctx.fillRect(x, y, w, h);
    ctx.fillStyle = "#5d7a4a";
    ctx.beginPath();
    ctx.moveTo(x, y + h);
    ctx.lineTo(x, y + h * 0.6);
    ctx.lineTo(x + w * 0.3, y + h * 0.35);
    ctx.lineTo(x + w * 0.55, y + h * 0.65);
    ctx.lineTo(x + w * 0.8, y + h * 0.45);
    ctx.lineTo(x + w, y + h * 0.6);
    ctx.lineTo(x + w, y + h);
    ctx.closePath();
    ctx.fill();
    ctx.fillStyle = "#f2d16b";
    ctx.beginPath();
    ctx.arc(x + w * 0.75, y + h * 0.22, Math.min(w, h) * 0.1, 0, 2 * Math.PI);
    ctx.fill();
    ctx.strokeStyle = "#333333";
    ctx.lineWidth = 2;
    ctx.strokeRect(x, y, w, h);
  }

  png(): Uint8Array {
    return new Uint8Array(this.canvas.toBuffer("image/png"));
  }
}

/** Paragraphs set in a column from `top`; returns the baseline after the last line. */
function column(
  page: Page,
  paragraphs: string[],
  x: number,
  top: number,
  width: number,
  leading: number,
  justify = false,
): number {
  let y = top;
  for (const paragraph of paragraphs) {
    const lines = page.wrap(paragraph, () => width);
    lines.forEach((line, i) => {
      if (justify && i < lines.length - 1) page.justified(line, x, y, width);
      else page.text(line, x, y);
      y += leading;
    });
    y += leading * 0.6;
  }
  return y;
}

/** A running header (left and right on one row, read as one line) and its rule. */
function runningHeader(page: Page, left: string, right: string, size = 24): void {
  page.font(size);
  const width = page.ctx.measureText(right).width;
  page.text(left, 120, 90, false);
  page.text(right, page.width - 120 - width, 90, false);
  page.truth.push(`${left} ${right}`);
  page.ctx.fillStyle = "#444444";
  page.ctx.fillRect(120, 110, page.width - 240, 2);
}

function footer(page: Page, text: string, size = 24): void {
  page.font(size);
  const width = page.ctx.measureText(text).width;
  page.text(text, (page.width - width) / 2, page.height - 80);
}

function title(page: Page, text: string, y: number, size = 48): void {
  page.font(size, BOLD);
  page.text(text, 120, y);
}

/** Two columns of prose under a title, a running header and a page number. */
function twoColumns(): Page {
  const page = new Page(1700, 2200);
  runningHeader(page, "The Valley Review", "Spring issue, page 12");
  title(page, "A river and the towns along its banks", 200);
  page.font(30);
  column(page, [sentences(0, 4), sentences(4, 3), sentences(7, 4)], 120, 300, 700, 44);
  column(page, [sentences(11, 3), sentences(14, 4), sentences(18, 3)], 880, 300, 700, 44);
  footer(page, "Page 12");
  return page;
}

/** Three justified columns in a smaller size, with a subtitle. */
function threeColumns(): Page {
  const page = new Page(1700, 2200);
  runningHeader(page, "Notes from the upper valley", "Number 4");
  title(page, "Walking from the sea to the high pass", 200);
  page.font(28, BOLD);
  page.text("A short guide for travellers who come on foot", 120, 260);
  page.font(26);
  const width = 460;
  column(page, [sentences(8, 4), sentences(12, 3)], 120, 350, width, 38, true);
  column(page, [sentences(15, 3), sentences(18, 4)], 620, 350, width, 38, true);
  column(page, [sentences(22, 3), sentences(1, 4)], 1120, 350, width, 38, true);
  footer(page, "Printed by the valley council");
  return page;
}

/** One column whose lines wrap around a figure on the right; the caption under it; the text goes on below. */
function figureWrap(): Page {
  const page = new Page(1700, 2200);
  title(page, "The old mill beside the weir", 160);
  page.font(30);
  const [x, width, leading, top] = [120, 1460, 44, 260];
  const [figX, figY, figW, figH] = [1020, 240, 560, 420];
  const captionY = figY + figH + 40;
  const besideUntil = captionY + 20;
  const text = sentences(4, 16);
  // Lines beside the figure stop short of it; below it they run the full width.
  const narrow = figX - 40 - x;
  const lines = page.wrap(text, (i) => (top + i * leading - 30 < besideUntil ? narrow : width));
  page.picture(figX, figY, figW, figH);
  let y = top;
  let captioned = false;
  for (const line of lines) {
    if (!captioned && y - 30 >= besideUntil) {
      page.font(24, BOLD);
      page.text("The mill wheel in spring", figX, captionY);
      page.font(30);
      captioned = true;
    }
    page.text(line, x, y);
    y += leading;
  }
  return page;
}

/** Two columns; a photograph set into the right part of the left column, its lines wrapped around it. */
function magazine(): Page {
  const page = new Page(1700, 2200);
  runningHeader(page, "Country life", "Autumn");
  title(page, "Floods, fields and the harvest", 200, 52);
  page.font(29);
  const leading = 42;
  const [leftX, rightX, width, top] = [120, 890, 690, 310];
  const [photoX, photoY, photoW, photoH] = [470, 290, 340, 520];
  const left = page.wrap(sentences(6, 9), (i) =>
    top + i * leading - 30 < photoY + photoH + 20 ? photoX - 35 - leftX : width,
  );
  page.picture(photoX, photoY, photoW, photoH);
  left.forEach((line, i) => page.text(line, leftX, top + i * leading));
  column(page, [sentences(15, 4), sentences(19, 4)], rightX, top, width, leading);
  footer(page, "12");
  return page;
}

/** Two columns with a photograph over the gutter: the lines of both columns beside it stop short or start late. */
function photoAcross(): Page {
  const page = new Page(1700, 2200);
  title(page, "Markets of the river towns", 170, 50);
  page.font(29);
  const leading = 42;
  const [leftX, rightX, width, top] = [120, 890, 690, 280];
  const [photoX, photoY, photoW, photoH] = [600, 560, 500, 420];
  const beside = (i: number) => {
    const y = top + i * leading;
    return y > photoY - 10 && y - 30 < photoY + photoH + 20;
  };
  const left = page.wrap(sentences(1, 11), (i) => (beside(i) ? photoX - 30 - leftX : width));
  const rightStart = (i: number) => (beside(i) ? photoX + photoW + 30 : rightX);
  const right = page.wrap(sentences(13, 10), (i) => rightX + width - rightStart(i));
  page.picture(photoX, photoY, photoW, photoH);
  left.forEach((line, i) => page.text(line, leftX, top + i * leading));
  right.forEach((line, i) => page.text(line, rightStart(i), top + i * leading));
  return page;
}

const TABLE = [
  ["Town", "Bridge built", "Market day", "Inhabitants"],
  ["Millford", "1712", "Tuesday", "4 310"],
  ["Stonebridge", "1654", "Friday", "12 845"],
  ["Upper Weir", "1803", "Monday", "960"],
  ["Hollow End", "1790", "Saturday", "2 207"],
  ["Greenbank", "1688", "Thursday", "7 530"],
  ["Long Meadow", "1820", "Wednesday", "1 118"],
];

/** A table with a grid of rules, a sentence above and below. */
function table(ruled: boolean): Page {
  const page = new Page(1700, 1400);
  title(page, ruled ? "Towns along the river" : "Markets of the valley", 150, 40);
  page.font(28);
  page.text(
    ruled ? "The table lists every town with a bridge, oldest first." : "Every town keeps one market day a week.",
    120,
    230,
  );
  const xs = [120, 560, 910, 1230, 1580];
  const rowHeight = 80;
  const top = 300;
  const rows = ruled ? TABLE : TABLE.map((r) => [r[0]!, r[2]!, r[3]!, r[1]!]);
  rows.forEach((row, r) => {
    page.font(30, r === 0 ? BOLD : SANS);
    row.forEach((cell, c) => page.text(cell, xs[c]! + 20, top + r * rowHeight + 52, false));
    page.truth.push(row.join(" "));
  });
  if (ruled) {
    page.ctx.fillStyle = "#222222";
    for (let r = 0; r <= rows.length; r++) page.ctx.fillRect(xs[0]!, top + r * rowHeight, xs[4]! - xs[0]!, 2);
    for (const x of xs) page.ctx.fillRect(x, top, 2, rows.length * rowHeight);
  }
  page.font(28);
  page.text("Figures from the county records office.", 120, top + rows.length * rowHeight + 80);
  return page;
}

/** A hearing transcript: each line numbered in a narrow gutter, the numbers right-aligned. */
function transcript(): Page {
  const page = new Page(1700, 2200);
  page.font(30, BOLD);
  page.text("Valley council, public hearing on the towpath", 260, 140);
  page.font(28, MONO);
  const speakers = ["CHAIR:", "MS. HALE:", "MR. ORR:"];
  const lines = [
    ...page.wrap(`${speakers[0]} ${sentences(20, 2)}`, () => 1180),
    ...page.wrap(`${speakers[1]} ${sentences(22, 3)}`, () => 1180),
    ...page.wrap(`${speakers[2]} ${sentences(8, 2)}`, () => 1180),
    ...page.wrap(`${speakers[0]} ${sentences(10, 2)}`, () => 1180),
  ].slice(0, 25);
  lines.forEach((line, i) => {
    const y = 260 + i * 68;
    const number = String(i + 1);
    page.font(28, SANS);
    page.text(number, 190 - page.ctx.measureText(number).width, y, false);
    page.font(28, MONO);
    page.text(line, 300, y, false);
    page.truth.push(`${number} ${line}`);
  });
  return page;
}

/** An article with a shaded sidebar of its own beside it. */
function sidebar(): Page {
  const page = new Page(1700, 2200);
  runningHeader(page, "The Valley Review", "Page 3");
  title(page, "A school of twelve children", 200);
  page.font(30);
  column(page, [sentences(15, 4), sentences(19, 4), sentences(0, 3)], 120, 300, 930, 44);
  page.ctx.fillStyle = "#e4e4e4";
  page.ctx.fillRect(1130, 280, 450, 900);
  page.font(30, BOLD);
  page.text("In brief", 1160, 340);
  page.font(26);
  column(page, [sentences(9, 2), sentences(12, 2)], 1160, 400, 390, 38);
  footer(page, "3");
  return page;
}

/**
 * A form: labels down the left, each with its value beside it on the same row and room to write between the rows, a
 * row of checkboxes, a row of boxed fields and a line to sign on. Read row by row, each label before its value: the
 * labels (three words, a ruled column of them) and the values (several words each) each look like a column of text,
 * and a page read as two columns puts every label away from its value.
 */
function form(): Page {
  const page = new Page(1700, 2200);
  title(page, "Application for a market stall", 170, 44);
  page.font(24);
  page.text("Please write clearly and return this form to the town hall before the first of May.", 120, 240);
  const fields = [
    ["Name of applicant:", "Margaret Hollis of Long Meadow"],
    ["Postal address:", "14 Mill Lane, Stonebridge"],
    ["Date of application:", "the third of April this year"],
    ["Goods to be sold:", "apples, cheese and fresh bread"],
    ["Stall size requested:", "three metres by two metres"],
    ["Name of helper:", "Thomas Hollis, her brother"],
  ];
  const [labelX, valueX, top, pitch] = [120, 560, 360, 120];
  fields.forEach(([label, value], i) => {
    const y = top + i * pitch;
    page.font(30, BOLD);
    page.text(label!, labelX, y, false);
    page.font(30);
    page.text(value!, valueX, y, false);
    page.truth.push(`${label} ${value}`);
    // The line the value is written on.
    page.ctx.fillStyle = "#666666";
    page.ctx.fillRect(valueX - 10, y + 14, 1020, 2);
  });
  const ctx = page.ctx;
  // A row of checkboxes: an empty square before each day, a ticked one (a cross) before the chosen days.
  let y = top + fields.length * pitch + 20;
  page.font(30, BOLD);
  page.text("Market days wanted:", labelX, y, false);
  page.font(30);
  let x = valueX;
  const days: string[] = [];
  for (const [day, ticked] of [
    ["Monday", false],
    ["Wednesday", true],
    ["Friday", false],
    ["Saturday", true],
  ] as const) {
    ctx.strokeStyle = "#222222";
    ctx.lineWidth = 2;
    ctx.strokeRect(x, y - 24, 26, 26);
    if (ticked) {
      ctx.beginPath();
      ctx.moveTo(x + 5, y - 19);
      ctx.lineTo(x + 21, y - 3);
      ctx.moveTo(x + 21, y - 19);
      ctx.lineTo(x + 5, y - 3);
      ctx.stroke();
    }
    page.text(day, x + 40, y, false);
    days.push(day);
    x += 60 + ctx.measureText(day).width + 40;
  }
  page.truth.push(`Market days wanted: ${days.join(" ")}`);
  // Boxed fields, label and value inside each box, side by side on one row.
  y += 150;
  const boxes = [
    ["Stall number:", "17"],
    ["Fee paid:", "12.50"],
    ["Permit:", "yes"],
  ];
  x = labelX;
  const row: string[] = [];
  for (const [label, value] of boxes) {
    page.font(28, BOLD);
    const labelWidth = ctx.measureText(label!).width;
    page.font(28);
    const width = labelWidth + 30 + ctx.measureText(value!).width + 60;
    ctx.strokeStyle = "#222222";
    ctx.lineWidth = 3;
    ctx.strokeRect(x, y - 50, width, 76);
    page.font(28, BOLD);
    page.text(label!, x + 30, y, false);
    page.font(28);
    page.text(value!, x + 30 + labelWidth + 30, y, false);
    row.push(`${label} ${value}`);
    x += width + 80;
  }
  page.truth.push(row.join(" "));
  // The line to sign on, and the date beside it.
  y += 200;
  page.font(30, BOLD);
  page.text("Signed:", labelX, y, false);
  page.text("Date:", 1100, y, false);
  page.font(30);
  page.text("M. Hollis", 300, y, false);
  page.text("3 April", 1200, y, false);
  page.truth.push("Signed: M. Hollis Date: 3 April");
  footer(page, "Town hall, market office");
  return page;
}

/** The suite's pages by name, in the order the bench prints them. */
export const LAYOUTS: Record<string, () => Page> = {
  "two-columns": twoColumns,
  "three-columns": threeColumns,
  "figure-wrap": figureWrap,
  magazine,
  "photo-across": photoAcross,
  "table-ruled": () => table(true),
  "table-unruled": () => table(false),
  transcript,
  sidebar,
  form,
};

/** Write every page and its ground truth to `dir` (a file left alone when it holds the same bytes already). */
export function generateLayouts(dir = LAYOUT_DIR): string[] {
  mkdirSync(dir, { recursive: true });
  return Object.entries(LAYOUTS).map(([name, draw]) => {
    const file = path.join(dir, `${name}.png`);
    const truthFile = path.join(dir, `${name}.gt.txt`);
    const page = draw();
    const truth = `${page.truth.join("\n")}\n`;
    const png = page.png();
    const same = (at: string, bytes: Uint8Array) => existsSync(at) && Buffer.from(bytes).equals(readFileSync(at));
    if (!same(file, png)) writeFileSync(file, png);
    if (!same(truthFile, new TextEncoder().encode(truth))) writeFileSync(truthFile, truth);
    return file;
  });
}

// Run as a script (not when bundled into the bench, whose own file is then argv[1]).
if (process.argv[1]?.endsWith("make-layouts.ts")) {
  const dir = path.resolve(process.argv[2] ?? LAYOUT_DIR);
  const files = generateLayouts(dir);
  console.log(`${files.length} layout pages written to ${path.relative(process.cwd(), dir)}`);
}
