/**
 * npm run bench -- --layouts [--filter S] [--json FILE] [--text-dir DIR] [--paddle-sure N]
 *
 * The generated layout suite (scripts/make-layouts.ts, docs/benchmark.md#layouts): pages whose reading order is
 * known — columns, a figure with wrapped text, a magazine page with a photograph, ruled and unruled tables, a
 * line-numbered transcript, a sidebar — read by the full engine (every recognizer OCR_ENGINES names, the page pipeline
 * as the service runs it). Prints per page the order-sensitive CER (plain CER over the whole text in order: a line read
 * in the wrong place costs its length twice) next to the order-free word F1 (what the letters alone score), so a
 * high CER with a high F1 is order, not recognition. Target (issue 40): CER ≤ 0.05 on every page.
 */
import fs from "node:fs/promises";
import path from "node:path";
import { parseArgs } from "node:util";
import { envSchema, getEnv } from "../lib/env";
import { extractDocument, render } from "../lib/ocr";
import { OcrPool } from "../lib/ocr/pool/pool";
import { generateLayouts } from "../scripts/make-layouts";
import { characterErrorRate, wordF1 } from "./metrics";
import { benchModelDir } from "./model-dir";

const MODEL_DIR = benchModelDir();

/** The bound every page of the suite is held to (issue 40, item 3). */
export const LAYOUT_CER_TARGET = 0.05;

export async function layoutsMain(argv: string[]): Promise<void> {
  const { values: args } = parseArgs({
    args: argv.filter((a) => a !== "--layouts"),
    allowPositionals: true,
    strict: false,
    options: {
      filter: { type: "string" },
      json: { type: "string" },
      "text-dir": { type: "string" },
      "paddle-sure": { type: "string" },
    },
  });
  const filter = typeof args.filter === "string" ? args.filter : undefined;
  const files = generateLayouts().filter((f) => !filter || f.includes(filter));
  const pool = new OcrPool({
    size: 1,
    queueLimit: 100,
    maxJobsPerWorker: 1000,
    createTimeoutMs: 60_000,
    engines: envSchema.shape.OCR_ENGINES.parse(process.env.OCR_ENGINES),
    // The recognizer the corpus bench reads with (bench/model-dir.ts), and PaddleOCR first when asked.
    ...(MODEL_DIR && { modelDir: MODEL_DIR }),
    ...(typeof args["paddle-sure"] === "string" && { paddleFirstSure: Number(args["paddle-sure"]) }),
  });
  await pool.warm({ ocr: 1 });
  const rows: Array<{ name: string; cer: number; cerFolded: number; f1: number }> = [];
  try {
    console.log(
      `layouts: ${files.length} generated pages, engines ${process.env.OCR_ENGINES ?? "(default)"}, recognizer ${MODEL_DIR ?? "npm PP-OCRv4"}`,
    );
    console.log(`${"page".padEnd(16)} ${"CER".padStart(7)} ${"CER(cf)".padStart(8)} ${"word F1".padStart(8)}`);
    for (const file of files) {
      const name = path.basename(file, ".png");
      const truth = await fs.readFile(file.replace(/\.png$/, ".gt.txt"), "utf8");
      const doc = await extractDocument(new Uint8Array(await fs.readFile(file)), {
        env: getEnv(),
        pool,
        deadline: Date.now() + 600_000,
      });
      const text = render(doc, "text");
      if (typeof args["text-dir"] === "string") {
        await fs.mkdir(args["text-dir"], { recursive: true });
        await fs.writeFile(path.join(args["text-dir"], `${name}.txt`), text);
      }
      const row = {
        name,
        cer: characterErrorRate(text, truth),
        cerFolded: characterErrorRate(text, truth, true),
        f1: wordF1(text, truth),
      };
      rows.push(row);
      const mark = row.cer <= LAYOUT_CER_TARGET ? "" : "  > target";
      console.log(
        `${name.padEnd(16)} ${row.cer.toFixed(4).padStart(7)} ${row.cerFolded.toFixed(4).padStart(8)} ${row.f1.toFixed(3).padStart(8)}${mark}`,
      );
    }
  } finally {
    await pool.terminate();
  }
  const worst = Math.max(...rows.map((r) => r.cer));
  console.log(
    `worst CER ${worst.toFixed(4)}; ${rows.filter((r) => r.cer <= LAYOUT_CER_TARGET).length}/${rows.length} pages at or under ${LAYOUT_CER_TARGET}`,
  );
  if (typeof args.json === "string") await fs.writeFile(args.json, JSON.stringify(rows, null, 2));
}
