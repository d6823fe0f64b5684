import path from "node:path";
import { createCanvas, GlobalFonts } from "@napi-rs/canvas";

// Generated pages whose reading order is the point: two columns of running text under a title, and a table.

let registered = false;
function registerFont(): void {
  if (registered) return;
  GlobalFonts.registerFromPath(path.resolve("tests/fixtures/fonts/LiberationSans-Regular.ttf"), "Layout Sans");
  registered = true;
}

const LEFT = [
  [
    "Apples grow on trees in cool orchards",
    "and ripen late in the summer when the",
    "nights begin to shorten and the air",
    "turns crisp over the hills.",
  ],
  ["Farmers pick them by hand and store", "them in dark barns where they keep", "for many months until the spring."],
  ["In spring the trees flower again and", "bees carry pollen between the rows", "of the old orchard near the river."],
];
const RIGHT = [
  [
    "Rivers carry water from high mountains",
    "down to the open sea and shape wide",
    "valleys over many thousands of years.",
  ],
  [
    "Their banks give homes to fish, birds",
    "and otters, and towns grew where the",
    "boats could land with their cargo and",
    "the markets opened every week.",
  ],
  ["Floods bring rich soil to the fields", "but can also destroy the bridges."],
];
const TITLE = "Orchards and rivers of the northern valley";

/** The two-column page's text in reading order: the title, the left column, then the right one. */
export const TWO_COLUMN_TEXT = [TITLE, ...LEFT.flat(), ...RIGHT.flat()].join("\n");
/** The same lines read straight across the page, row by row (what a reader that ignores columns gives). */
export const TWO_COLUMN_ACROSS = (() => {
  const rows = (paragraphs: string[][]) => paragraphs.flatMap((p) => [...p, ""]);
  const [left, right] = [rows(LEFT), rows(RIGHT)];
  const across: string[] = [TITLE];
  for (let i = 0; i < Math.max(left.length, right.length); i++)
    across.push(...[left[i], right[i]].filter((l): l is string => !!l));
  return across.join("\n");
})();

/**
 * A newspaper-like page (1700×1300, 28 px text): a title across the top, then two columns of paragraphs whose breaks
 * fall at different heights, so the columns' lines stand side by side in the same rows.
 */
export function twoColumnPage(): Uint8Array {
  registerFont();
  const canvas = createCanvas(1700, 1300);
  const ctx = canvas.getContext("2d");
  ctx.fillStyle = "#fff";
  ctx.fillRect(0, 0, canvas.width, canvas.height);
  ctx.fillStyle = "#000";
  ctx.font = '40px "Layout Sans"';
  ctx.fillText(TITLE, 100, 130);
  ctx.font = '28px "Layout Sans"';
  const column = (paragraphs: string[][], x: number) => {
    let y = 240;
    for (const paragraph of paragraphs) {
      for (const text of paragraph) {
        ctx.fillText(text, x, y);
        y += 42;
      }
      y += 42;
    }
  };
  column(LEFT, 100);
  column(RIGHT, 900);
  return new Uint8Array(canvas.toBuffer("image/png"));
}

export const TABLE_ROWS = [
  ["Item", "Count", "Price"],
  ["Apples", "12", "3.50"],
  ["Pears", "7", "2.80"],
  ["Plums", "30", "4.10"],
  ["Cherries", "250", "9.95"],
  ["Quinces", "4", "6.00"],
];

/** A ruled-less table of short cells (1500×700, 30 px text): it reads row by row. */
export function tablePage(): Uint8Array {
  registerFont();
  const canvas = createCanvas(1500, 700);
  const ctx = canvas.getContext("2d");
  ctx.fillStyle = "#fff";
  ctx.fillRect(0, 0, canvas.width, canvas.height);
  ctx.fillStyle = "#000";
  ctx.font = '30px "Layout Sans"';
  TABLE_ROWS.forEach((row, r) => row.forEach((cell, c) => ctx.fillText(cell, 120 + c * 480, 120 + r * 90)));
  return new Uint8Array(canvas.toBuffer("image/png"));
}
