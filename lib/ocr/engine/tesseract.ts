/**
 * Which Tesseract an OCR process reads with (`OCR_TESSERACT`): the system's libtesseract 5 loaded in the process
 * (tesseract-native.ts) where it loads, tesseract.js's WebAssembly build (tesseract-pool.ts) otherwise. Both read the
 * same language data (the `@tesseract.js-data` packages' best_int models), take the same jobs and return Tesseract's
 * own TSV and hOCR, so everything after them (recognize.ts) is the same code.
 */
import type { TesseractInUse } from "../model/protocol";
import type { GreyRaster } from "./raster";
import { NativeTesseract, DEFAULT_TESSERACT_LIBRARY, loadLibtesseract } from "./tesseract-native";
import { TesseractPool, type PoolOptions } from "./tesseract-pool";

export interface RecognizeJob {
  /**
   * The page: 8-bit grey pixels (what the engine reads), or encoded image bytes for tesseract.js (PGM, PNG, …). Never
   * a string: tesseract.js would fetch or read it as a path.
   */
  image: GreyRaster | Uint8Array;
  /** Tesseract language codes, primary first. */
  langs: string[];
  /** Tesseract parameters for this job only. */
  params: Record<string, string>;
  /** Epoch ms after which the job is abandoned with a `deadline` error. */
  deadline: number;
  pixels: number;
  /** Ask for Tesseract's hOCR too (its lines' baselines). */
  hocr?: boolean;
}

/** What one recognition returns: Tesseract's TSV, and its hOCR when the job asked for it. */
export interface TesseractOutput {
  tsv: string;
  hocr?: string;
}

/** One Tesseract in an engine process: native or WebAssembly, the same jobs and answers. */
export interface TesseractReader {
  readonly kind: TesseractInUse["kind"];
  recognizeOutput(job: RecognizeJob): Promise<TesseractOutput>;
  /** Load the languages ahead of the first job. */
  warm(langs: string[]): Promise<void>;
  /** Give back what memory an idle reader can before another recognizer runs (tesseract.js: its threads' heaps). */
  shed(): Promise<void>;
  terminate(): Promise<void>;
}

export type TesseractMode = "auto" | "native" | "wasm";

export interface OpenedTesseract {
  reader: TesseractReader;
  inUse: TesseractInUse;
}

/**
 * The reader `mode` asks for. `auto`: libtesseract when koffi and the library load and the library is version 5,
 * tesseract.js otherwise (`inUse.note` says why); `native`: the library, or a thrown error; `wasm`: tesseract.js.
 */
export async function openTesseract(
  mode: TesseractMode,
  options: PoolOptions & { library?: string },
): Promise<OpenedTesseract> {
  const { library = DEFAULT_TESSERACT_LIBRARY, ...poolOptions } = options;
  if (mode !== "wasm") {
    try {
      const api = await loadLibtesseract(library);
      return {
        reader: new NativeTesseract(api, { queueLimit: poolOptions.queueLimit }),
        inUse: { kind: "native", version: api.version },
      };
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      if (mode === "native")
        throw new Error(`OCR_TESSERACT=native, but ${library} could not be loaded: ${reason}`, { cause: error });
      return {
        reader: new TesseractPool(poolOptions),
        inUse: { kind: "wasm", note: `${library} not used: ${reason}`.slice(0, 500) },
      };
    }
  }
  return { reader: new TesseractPool(poolOptions), inUse: { kind: "wasm" } };
}
