/**
 * `npm run bench:synthetic [-- --seed N]`: the engine with both recognizers against Tesseract alone, on generated
 * receipt-like pages nobody tuned on — 3 fonts × 3 sizes × 3 degrees of shrinking (blur), with noise, grey ink and
 * JPEG compression. Each page has its own random words, so another seed is another set of documents. Prints per page
 * which reading was kept and both readings' scores, then the means (CER capped at 1 per page: Tesseract reading
 * noise as text can score 10).
 *
 * Runs the engine bundle in build/engine (npm run build:engine first after changing lib/ocr).
 */
import path from "node:path";
import { parseArgs } from "node:util";
import { createCanvas, GlobalFonts } from "@napi-rs/canvas";
import { characterErrorRate, wordF1 } from "./metrics";
import { extractDocument, render } from "../lib/ocr";
import { OcrPool } from "../lib/ocr/pool/pool";
import { getEnv } from "../lib/env";
import { benchModelDir } from "./model-dir";

const { values: args } = parseArgs({ options: { seed: { type: "string", default: "7" } } });

const FONTS_DIR = path.resolve(import.meta.dirname, "../tests/fixtures/fonts");
const FONTS = {
  sans: "LiberationSans-Regular.ttf",
  mono: "LiberationMono-Regular.ttf",
  bold: "LiberationSans-Bold.ttf",
};
for (const [family, file] of Object.entries(FONTS))
  GlobalFonts.registerFromPath(path.join(FONTS_DIR, file), `Synthetic ${family}`);

const WORDS = (
  "total amount due paid by card cash change items sold quantity member points earned please keep this receipt " +
  "invoice date time table cashier thank you for shopping with us again tax rate subtotal discount price unit " +
  "coffee milk bread sugar rice chicken"
).split(" ");

let seed = Number(args.seed);
const random = () => (seed = (seed * 1664525 + 1013904223) >>> 0) / 2 ** 32;

interface Page {
  bytes: Uint8Array;
  truth: string;
}

/** 14 lines of 2–5 words (some upper case, some with a price), degraded as described above. */
function page(family: keyof typeof FONTS, px: number, shrink: number): Page {
  const lines: string[] = [];
  for (let i = 0; i < 14; i++) {
    const words = Array.from(
      { length: 2 + Math.floor(random() * 4) },
      () => WORDS[Math.floor(random() * WORDS.length)]!,
    );
    if (random() < 0.5) words.push((random() * 100).toFixed(2));
    if (random() < 0.5) words[0] = words[0]!.toUpperCase();
    lines.push(words.join(" "));
  }
  const ink = 90 + Math.floor(random() * 60);
  const width = 700;
  const height = 40 + lines.length * px * 2;
  const canvas = createCanvas(width, height);
  const ctx = canvas.getContext("2d");
  ctx.fillStyle = `rgb(${ink + 60},${ink + 60},${ink + 60})`;
  ctx.fillRect(0, 0, width, height);
  ctx.fillStyle = `rgb(${ink},${ink},${ink})`;
  ctx.font = `${px}px "Synthetic ${family}"`;
  lines.forEach((line, i) => ctx.fillText(line, 15, 30 + i * px * 2));
  const pixels = ctx.getImageData(0, 0, width, height);
  for (let i = 0; i < pixels.data.length; i += 4) {
    const noise = (random() - 0.5) * 40;
    for (let c = 0; c < 3; c++) pixels.data[i + c] = Math.max(0, Math.min(255, pixels.data[i + c]! + noise));
  }
  ctx.putImageData(pixels, 0, 0);
  const small = createCanvas(Math.round(width * shrink), Math.round(height * shrink));
  small.getContext("2d").drawImage(canvas, 0, 0, small.width, small.height);
  return { bytes: new Uint8Array(small.toBuffer("image/jpeg", 50)), truth: lines.join("\n") };
}

const modelDir = benchModelDir();
const options = {
  size: 1,
  queueLimit: 16,
  maxJobsPerWorker: 500,
  createTimeoutMs: 60_000,
  ...(modelDir && { modelDir }),
};
const both = new OcrPool({ ...options, engines: ["tesseract", "paddle"] });
const alone = new OcrPool({ ...options, engines: ["tesseract"] });
const scores: number[][] = [];
const f3 = (n: number) => n.toFixed(3);
console.log(`seed ${args.seed}: font px shrink | kept | CER both / Tesseract alone | word F1 both / Tesseract alone`);
for (const family of Object.keys(FONTS) as Array<keyof typeof FONTS>) {
  for (const px of [14, 18, 24]) {
    for (const shrink of [0.5, 0.7, 1]) {
      const { bytes, truth } = page(family, px, shrink);
      const [a, b] = await Promise.all(
        [both, alone].map((pool) => extractDocument(bytes, { env: getEnv(), pool, language: "eng" })),
      );
      const [textA, textB] = [render(a!, "text"), render(b!, "text")];
      const row = [
        characterErrorRate(textA, truth, true),
        characterErrorRate(textB, truth, true),
        wordF1(textA, truth),
        wordF1(textB, truth),
      ];
      scores.push(row);
      console.log(
        `${family} ${px} ${shrink} | ${a!.pages[0]!.engine ?? "-"} | ${f3(row[0]!)} / ${f3(row[1]!)} | ${f3(row[2]!)} / ${f3(row[3]!)}`,
      );
    }
  }
}
await Promise.all([both.terminate(), alone.terminate()]);
const mean = (i: number, cap = Infinity) =>
  scores.reduce((sum, row) => sum + Math.min(cap, row[i]!), 0) / scores.length;
console.log(
  `mean: both CER ${f3(mean(0, 1))} word F1 ${f3(mean(2))} | Tesseract alone CER ${f3(mean(1, 1))} word F1 ${f3(mean(3))}`,
);
