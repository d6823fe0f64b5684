import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { getEnv } from "../lib/env";
import { extractDocument } from "../lib/ocr";
import { DISPUTED_SURE, REVIEW_BELOW, REVIEW_BELOW_PADDLE, toPublicDocument } from "../lib/ocr/model/document";
import { OcrPool } from "../lib/ocr/pool/pool";
import { findCorpusFiles } from "./corpus";
import { benchModelDir } from "./model-dir";

const MODEL_DIR = benchModelDir();

/*
 * `npm run bench -- --review [folder] [--json F]`: how well `review` marks the words that are wrong. Each document's
 * OCR pages are read as the service reads them (Tesseract, and PaddleOCR where OCR_ENGINES names it); each word of the
 * `json` output is aligned to the ground truth (`<name>.gt.txt`) by a word-level edit distance, case-folded and without
 * the punctuation around words (the SROIE truth is upper case), and counts as wrong when it is not matched exactly
 * there nor found among the truth's words left unmatched (a word read right in another order).
 * Reported: of the words marked, how many are wrong (precision); of the wrong words, how many are marked (recall);
 * for the rule in force and for other confidence cut-offs. Text-layer pages are not marked and are left out (a PDF
 * with one is skipped: its truth covers those pages too). Words with no letter or digit are never marked: left out.
 */

interface ScoredWord {
  confidence: number;
  marked: boolean;
  wrong: boolean;
  /** The other recognizer read it differently (`alternative`). */
  disputed: boolean;
  /** The recognizer whose reading of the page was kept. */
  engine: string;
}

const norm = (word: string) =>
  word
    .normalize("NFKC")
    .toLowerCase()
    .replace(/^[^\p{L}\p{N}]+|[^\p{L}\p{N}]+$/gu, "");

/** For each of `hyp`, whether an edit-distance alignment to `ref` matches it exactly. */
export function alignedMatches(hyp: string[], ref: string[]): boolean[] {
  const n = hyp.length;
  const m = ref.length;
  const width = m + 1;
  const cost = new Uint32Array((n + 1) * width);
  for (let i = 0; i <= n; i++) cost[i * width] = i;
  for (let j = 0; j <= m; j++) cost[j] = j;
  for (let i = 1; i <= n; i++) {
    for (let j = 1; j <= m; j++) {
      const same = hyp[i - 1] === ref[j - 1] ? 0 : 1;
      cost[i * width + j] = Math.min(
        cost[(i - 1) * width + j - 1]! + same,
        cost[(i - 1) * width + j]! + 1,
        cost[i * width + j - 1]! + 1,
      );
    }
  }
  const matched = new Array<boolean>(n).fill(false);
  const used = new Array<boolean>(m).fill(false);
  let i = n;
  let j = m;
  while (i > 0 && j > 0) {
    const here = cost[i * width + j]!;
    const same = hyp[i - 1] === ref[j - 1] ? 0 : 1;
    if (here === cost[(i - 1) * width + j - 1]! + same) {
      matched[i - 1] = same === 0;
      used[j - 1] = same === 0;
      i--;
      j--;
    } else if (here === cost[(i - 1) * width + j]! + 1) i--;
    else j--;
  }
  // Reading order is where the references disagree with any engine (corpus-dev's README): a word the alignment left
  // out that the truth holds elsewhere, not yet matched, was read right.
  const rest = new Map<string, number>();
  ref.forEach((word, index) => {
    if (!used[index]) rest.set(word, (rest.get(word) ?? 0) + 1);
  });
  hyp.forEach((word, index) => {
    const left = rest.get(word) ?? 0;
    if (matched[index] || left === 0) return;
    matched[index] = true;
    rest.set(word, left - 1);
  });
  return matched;
}

function scores(words: ScoredWord[], marked: (word: ScoredWord) => boolean) {
  const flagged = words.filter(marked);
  const wrong = words.filter((word) => word.wrong);
  const hits = flagged.filter((word) => word.wrong).length;
  return {
    marked: flagged.length,
    wrong: wrong.length,
    precision: flagged.length ? hits / flagged.length : 0,
    recall: wrong.length ? hits / wrong.length : 0,
  };
}

export async function reviewMain(argv: string[], defaultCorpus: string): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv.filter((arg) => arg !== "--review"),
    allowPositionals: true,
    strict: false,
    options: {
      json: { type: "string" },
      words: { type: "string" },
      filter: { type: "string" },
      workers: { type: "string" },
      "paddle-sure": { type: "string" },
    },
  });
  const files = await findCorpusFiles(
    positionals.length ? positionals : [defaultCorpus],
    typeof values.filter === "string" ? values.filter : undefined,
  );
  const size = Number(typeof values.workers === "string" ? values.workers : Math.min(2, os.availableParallelism()));
  const pool = new OcrPool({
    size,
    queueLimit: 1000,
    maxJobsPerWorker: 200,
    createTimeoutMs: 60_000,
    engines: getEnv().OCR_ENGINES,
    // The recognizer the corpus bench reads with (bench/model-dir.ts), and PaddleOCR first when asked.
    ...(MODEL_DIR && { modelDir: MODEL_DIR }),
    ...(typeof values["paddle-sure"] === "string" && { paddleFirstSure: Number(values["paddle-sure"]) }),
  });
  await pool.warm({ ocr: size });
  const all: ScoredWord[] = [];
  // --words F: every word scored (text, other reading, confidence, wrong), to try other rules without reading again.
  const rows: Array<{ text: string; alternative?: string; confidence: number; wrong: boolean; engine: string }> = [];
  const perDocument: Array<{ name: string; words: number; wrong: number; marked: number; hits: number }> = [];
  for (const { file, truthFile } of files) {
    const name = path.relative(defaultCorpus, file);
    const bytes = new Uint8Array(await fs.readFile(file));
    let document;
    try {
      document = await extractDocument(bytes, { env: getEnv(), pool, deadline: Date.now() + 600_000 });
    } catch (error) {
      console.log(`${name}: not read (${String(error)})`);
      continue;
    }
    const pages = toPublicDocument(document).pages;
    if (pages.some((page) => page.source !== "ocr")) {
      console.log(`${name}: has text-layer pages, skipped`);
      continue;
    }
    const words = pages.flatMap((page) =>
      page.blocks.flatMap((b) => b.lines.flatMap((l) => l.words.map((w) => ({ ...w, engine: page.engine ?? "" })))),
    );
    const kept = words.filter((word) => norm(word.text) !== "");
    const truth = (await fs.readFile(truthFile, "utf8")).split(/\s+/).map(norm).filter(Boolean);
    const matched = alignedMatches(
      kept.map((word) => norm(word.text)),
      truth,
    );
    const scored = kept.map((word, index) => ({
      confidence: word.confidence,
      marked: word.review === true,
      wrong: !matched[index],
      disputed: word.alternative !== undefined && word.alternative !== word.text,
      engine: word.engine,
    }));
    all.push(...scored);
    kept.forEach((word, index) =>
      rows.push({
        text: word.text,
        ...(word.alternative !== undefined && { alternative: word.alternative }),
        confidence: word.confidence,
        wrong: scored[index]!.wrong,
        engine: word.engine,
      }),
    );
    const hits = scored.filter((word) => word.marked && word.wrong).length;
    perDocument.push({
      name,
      words: scored.length,
      wrong: scored.filter((word) => word.wrong).length,
      marked: scored.filter((word) => word.marked).length,
      hits,
    });
  }
  await pool.terminate();
  const inForce = scores(all, (word) => word.marked);
  const cutoffs = [50, 60, 70, 75, 80, 85, 88, 90, 92, 94, 96].map((below) => ({
    below,
    ...scores(all, (word) => word.confidence < below),
  }));
  // The same cut-offs with the words the two recognizers read differently marked too (the rule's second signal).
  const withDisputed = [0, 50, 60, 70, 75, 80, 85].map((below) => ({
    below,
    ...scores(all, (word) => word.disputed || word.confidence < below),
  }));
  // PaddleOCR's confidences run higher than Tesseract's (a word it read at 80–90 was wrong 5 times in 6 on corpus-dev's
  // receipts and forms): a cut-off of its own.
  const byEngine = [
    [60, 90],
    [70, 90],
    [60, 93],
    [70, 93],
  ].map(([tesseract, paddle]) => ({
    below: `${tesseract}/${paddle}`,
    ...scores(all, (word) => word.disputed || word.confidence < (word.engine === "paddle" ? paddle! : tesseract!)),
  }));
  const f = (value: number) => value.toFixed(3);
  console.log("document                                    words  wrong  marked  marked∧wrong");
  for (const row of perDocument) {
    console.log(
      `${row.name.padEnd(42)} ${String(row.words).padStart(6)} ${String(row.wrong).padStart(6)} ${String(row.marked).padStart(7)} ${String(row.hits).padStart(13)}`,
    );
  }
  console.log(
    `\nreview as in force (confidence < ${REVIEW_BELOW}, ${REVIEW_BELOW_PADDLE} on PaddleOCR's pages; or another reading, ` +
      `unless read at ${DISPUTED_SURE}+ and agreed on the word's ends): ${inForce.marked} marked of ` +
      `${all.length} words, ${inForce.wrong} wrong; precision ${f(inForce.precision)}, recall ${f(inForce.recall)}`,
  );
  console.log("\ncut-off  marked  precision  recall");
  for (const row of cutoffs) {
    console.log(
      `${String(row.below).padStart(7)} ${String(row.marked).padStart(7)} ${f(row.precision).padStart(10)} ${f(row.recall).padStart(7)}`,
    );
  }
  console.log("\ncut-off, or read differently  marked  precision  recall");
  for (const row of [...withDisputed, ...byEngine]) {
    console.log(
      `${String(row.below).padStart(27)} ${String(row.marked).padStart(7)} ${f(row.precision).padStart(10)} ${f(row.recall).padStart(7)}`,
    );
  }
  if (typeof values.words === "string") await fs.writeFile(values.words, JSON.stringify(rows));
  if (typeof values.json === "string") {
    await fs.writeFile(
      values.json,
      JSON.stringify(
        { reviewBelow: REVIEW_BELOW, inForce, cutoffs, withDisputed, byEngine, documents: perDocument },
        null,
        2,
      ),
    );
  }
}
