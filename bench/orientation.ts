/**
 * npm run bench -- --orientation [folder] [--before DIR] [--variants 90,180,270,3,-3,7,-7] [--filter S] [--json FILE]
 *
 * Pages in any orientation (docs/engine.md#orientation). Takes a sample of corpus-dev's page images (ORIENTATION_SAMPLE,
 * or every image under the folders given), turns each by 90°, 180° and 270° and skews it by ±3° and ±7° in memory
 * (never written anywhere), reads every variant and prints its CER next to the upright page's, with the rotation and
 * skew the engine reported.
 *
 * CPU: the upright pages are also read by the engine processes of another checkout (`--before DIR`, e.g. a git
 * worktree of the commit before; its engine bundle is built there first), alternately with this one's, and the
 * engine processes' user+sys time (from /proc, not wall-clock: the machine is shared) is compared page by page.
 */
import { execFile } from "node:child_process";
import fs from "node:fs/promises";
import path from "node:path";
import { parseArgs, promisify } from "node:util";
import { createCanvas, loadImage, type Image } from "@napi-rs/canvas";
import { envSchema, getEnv } from "../lib/env";
import { extractDocument, render } from "../lib/ocr";
import { OcrPool } from "../lib/ocr/pool/pool";
import { findCorpusFiles } from "./corpus";
import { benchModelDir } from "./model-dir";

const MODEL_DIR = benchModelDir();
import { characterErrorRate } from "./metrics";
import { cpuDelta, cpuSnapshot } from "./procfs";

/**
 * The sample: 12 pages of every kind corpus-dev holds — receipts (all capitals: the glyphs cannot tell which way up),
 * grey business forms, multi-column and table pages, a screenshot with a white-on-grey header, a book page in Times.
 * The 4000×3000 phone photo is left out (one page would take a third of the run's time) and so are PDFs (their pages
 * are rasters by the time the orientation is decided, like images).
 */
export const ORIENTATION_SAMPLE = [
  "sroie/045.jpg",
  "sroie/245.jpg",
  "sroie/553.jpg",
  "funsd/0000971160.png",
  "funsd/71202511.png",
  "funsd/91355841.png",
  "scribe/multicol_01.png",
  "scribe/multicol_11.png",
  "scribe/table_01.png",
  "scribe/table_07.png",
  "tesseract-test/segmodeimg.png",
  "tesseract-test/trainingtimes.png",
  // A phone photo (grey paper): skewed by the bench, it lies inside white corners (three tones; read as blank until
  // docs/decisions.md#orientation-third-round). Not in the sample of the first two rounds: compare those with 12 pages.
  "photos/present_indicatif_photo.jpg",
];

const execFileAsync = promisify(execFile);
const ENGINES = envSchema.shape.OCR_ENGINES.parse(process.env.OCR_ENGINES);

interface Variant {
  name: string;
  /** Clockwise turn applied to the upright page, degrees. */
  degrees: number;
}

/** The page as a caller would send it: the upright image turned clockwise by `degrees`, as a PNG. */
function turnedPng(image: Image, degrees: number): Uint8Array {
  const a = (degrees * Math.PI) / 180;
  const cos = Math.abs(Math.cos(a));
  const sin = Math.abs(Math.sin(a));
  const width = Math.round(image.width * cos + image.height * sin);
  const height = Math.round(image.width * sin + image.height * cos);
  const canvas = createCanvas(width, height);
  const ctx = canvas.getContext("2d");
  ctx.fillStyle = "#ffffff";
  ctx.fillRect(0, 0, width, height);
  const { width: w, height: h } = image;
  // Quarter turns pixel on pixel, as a scanner's or a viewer's are (about the centre, odd sides would resample).
  const quarters: Record<number, [number, number, number, number, number, number]> = {
    90: [0, 1, -1, 0, h, 0],
    180: [-1, 0, 0, -1, w, h],
    270: [0, -1, 1, 0, 0, w],
  };
  const quarter = quarters[((degrees % 360) + 360) % 360];
  if (quarter) ctx.setTransform(...quarter);
  else {
    ctx.translate(width / 2, height / 2);
    ctx.rotate(a);
    ctx.translate(-w / 2, -h / 2);
  }
  ctx.drawImage(image, 0, 0);
  return new Uint8Array(canvas.toBuffer("image/png"));
}

/** Engine processes' CPU seconds (user+sys) while `work` runs; only this bench's descendants are counted. */
async function engineCpu<T>(work: () => Promise<T>): Promise<{ value: T; cpu: number }> {
  const start = cpuSnapshot(process.pid)!;
  const value = await work();
  const end = cpuSnapshot(process.pid)!;
  return { value, cpu: cpuDelta(start, end).descendantSeconds };
}

export async function orientationMain(argv: string[], root: string): Promise<void> {
  const { values: args, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      orientation: { type: "boolean" },
      before: { type: "string" },
      variants: { type: "string", default: "90,180,270,3,-3,7,-7" },
      filter: { type: "string" },
      json: { type: "string" },
      "cpu-rounds": { type: "string", default: "2" },
    },
  });
  const corpus = path.resolve(root, "../shared/corpus-dev");
  const files = positionals.length
    ? (await findCorpusFiles(positionals, args.filter))
        .filter((f) => f.ext !== ".pdf")
        .map((f) => ({ file: f.file, truthFile: f.truthFile }))
    : ORIENTATION_SAMPLE.filter((name) => !args.filter || name.includes(args.filter)).map((name) => {
        const file = path.join(corpus, name);
        return { file, truthFile: file.replace(/\.[a-z]+$/, ".gt.txt") };
      });
  const variants: Variant[] = args.variants
    .split(",")
    .map(Number)
    .map((degrees) => ({
      name: Number.isInteger(degrees / 90) ? `${degrees}°` : `skew ${degrees > 0 ? "+" : ""}${degrees}°`,
      degrees,
    }));

  const makePool = (engineScript?: string) =>
    new OcrPool({
      size: 1,
      queueLimit: 100,
      maxJobsPerWorker: 1000,
      createTimeoutMs: 60_000,
      engines: ENGINES,
      engineScript,
      ...(MODEL_DIR && { modelDir: MODEL_DIR }),
    });
  const pool = makePool();
  let before: OcrPool | null = null;
  if (args.before) {
    const dir = path.resolve(args.before);
    await execFileAsync(process.execPath, [path.join(dir, "scripts/build-engine.mjs")], { cwd: dir });
    before = makePool(path.join(dir, "build/engine/ocr-worker.mjs"));
    await before.warm({ ocr: 1 });
  }
  await pool.warm({ ocr: 1 });
  const read = async (target: OcrPool, bytes: Uint8Array) => {
    const doc = await extractDocument(bytes, { env: getEnv(), pool: target, deadline: Date.now() + 600_000 });
    return { text: render(doc, "text"), page: doc.pages[0], trace: doc.pages[0]?.trace };
  };

  interface Row {
    name: string;
    upright: number;
    variants: Record<string, { cer: number; rotation: number; skew: number }>;
    cpuAfter: number;
    cpuBefore?: number;
    uprightBefore?: number;
    /** CER of the upright page re-encoded as the variants are. */
    reference?: number;
    confidence: number;
    trace: string;
  }
  const rows: Row[] = [];
  const rounds = Number(args["cpu-rounds"]);
  for (const { file, truthFile } of files) {
    const truth = await fs.readFile(truthFile, "utf8");
    const bytes = new Uint8Array(await fs.readFile(file));
    const name = path.relative(corpus, file).startsWith("..") ? path.basename(file) : path.relative(corpus, file);
    // Upright: this checkout and the one before, alternately, `rounds` times each.
    let cpuAfter = 0;
    let cpuBefore = 0;
    let upright: Awaited<ReturnType<typeof read>> | null = null;
    let uprightBefore: Awaited<ReturnType<typeof read>> | null = null;
    for (let r = 0; r < rounds; r++) {
      if (before) {
        const result = await engineCpu(() => read(before!, bytes));
        cpuBefore += result.cpu;
        uprightBefore = result.value;
      }
      const after = await engineCpu(() => read(pool, bytes));
      cpuAfter += after.cpu;
      upright = after.value;
    }
    const row: Row = {
      name,
      upright: characterErrorRate(upright!.text, truth),
      variants: {},
      cpuAfter: cpuAfter / rounds,
      confidence: upright!.page?.confidence ?? 0,
      trace: JSON.stringify(upright!.trace ?? {}),
    };
    if (before) {
      row.cpuBefore = cpuBefore / rounds;
      row.uprightBefore = characterErrorRate(uprightBefore!.text, truth);
    }
    const image = await loadImage(Buffer.from(bytes));
    // The reference for the variants: the upright page re-encoded as they are (a PNG of the decoded pixels), so that
    // only the turn differs (a greyscale PNG or a JPEG decoded again as RGBA reads a little differently).
    row.reference = characterErrorRate((await read(pool, turnedPng(image, 0))).text, truth);
    for (const variant of variants) {
      const { text, page } = await read(pool, turnedPng(image, variant.degrees));
      row.variants[variant.name] = {
        cer: characterErrorRate(text, truth),
        rotation: page?.rotation ?? 0,
        skew: page?.skew ?? 0,
      };
    }
    rows.push(row);
    const cells = Object.entries(row.variants).map(([v, r]) => `${v} ${r.cer.toFixed(3)} (${r.rotation}/${r.skew})`);
    const cpu = before
      ? ` (before ${row.uprightBefore!.toFixed(3)}) cpu ${row.cpuBefore!.toFixed(2)} → ${row.cpuAfter.toFixed(2)} s`
      : ` cpu ${row.cpuAfter.toFixed(2)} s`;
    console.log(
      `${name}: upright ${row.upright.toFixed(3)} as PNG ${row.reference.toFixed(3)} (${upright!.page?.rotation ?? 0}/${upright!.page?.skew ?? 0})${cpu} conf ${row.confidence} | ${cells.join(" | ")}\n  ${row.trace}`,
    );
  }
  await pool.terminate();
  await before?.terminate();

  const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / Math.max(1, values.length);
  console.log(
    "\nvariant      mean CER  mean Δ vs upright  worst Δ  pages within 0.01   (Δ against the upright page re-encoded as PNG)",
  );
  console.log(
    `upright      ${mean(rows.map((r) => r.upright)).toFixed(3)}${before ? ` (before: ${mean(rows.map((r) => r.uprightBefore ?? 0)).toFixed(3)})` : ""}`,
  );
  console.log(`as PNG       ${mean(rows.map((r) => r.reference ?? r.upright)).toFixed(3)}`);
  for (const variant of variants) {
    const deltas = rows.map((r) => r.variants[variant.name]!.cer - (r.reference ?? r.upright));
    console.log(
      `${variant.name.padEnd(12)} ${mean(rows.map((r) => r.variants[variant.name]!.cer)).toFixed(3)}     ${mean(deltas).toFixed(3).padStart(6)}             ${Math.max(...deltas).toFixed(3)}    ${deltas.filter((d) => d <= 0.01).length}/${rows.length}`,
    );
  }
  const totalAfter = rows.reduce((a, r) => a + r.cpuAfter, 0);
  if (before) {
    const totalBefore = rows.reduce((a, r) => a + (r.cpuBefore ?? 0), 0);
    console.log(
      `\nupright engine CPU (user+sys, mean of ${rounds}): before ${totalBefore.toFixed(2)} s, after ${totalAfter.toFixed(2)} s (${(((totalAfter - totalBefore) / totalBefore) * 100).toFixed(1)}%)`,
    );
  } else
    console.log(
      `\nupright engine CPU (user+sys, mean of ${rounds}): ${totalAfter.toFixed(2)} s (no --before DIR to compare with)`,
    );
  if (args.json) await fs.writeFile(args.json, JSON.stringify({ rows, variants }, null, 2));
}
