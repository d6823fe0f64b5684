/**
 * What happens to one page between its pixels and its reading, as an ordered list of named stages over the page's
 * state, in the manner of OCRmyPDF's page pipeline: a reader sees the whole path of a page here, in order, and each
 * stage says when it runs. The stages' work lives in their own modules (text size: recognize.ts; orientation:
 * straighten.ts; Tesseract: recognize.ts over tesseract.ts; language: language-detect.ts; PaddleOCR: paddle/ and
 * second-reading.ts; reading order: reading-order.ts); the processor time of each is measured under the names of
 * lib/ocr/model/profile.ts.
 *
 * One rule runs through it: a stage that may read the page again (`rereads`) makes the earlier readings leave their
 * further passes (Tesseract's block re-read and 1.5× rescue) until it has decided, since its reading usually replaces
 * theirs (docs/decisions.md#deferred-retries).
 */
import type { ExtractedPage } from "../model/document";
import type { LanguageChoice } from "../model/languages";
import { pageAsSent, type Quarter } from "../model/page-turn";
import { profiled, profiledAsync } from "../model/profile";
import { ENGINE_DEADLINE_SLACK_MS } from "../model/protocol";
import { detectLanguage } from "./language-detect";
import { loadPaddle, withOtherReading, type PaddleReading } from "./paddle";
import { paperOnly, type PaperRegion } from "./paper";
import { dropSheetEdge } from "./texture-lines";
import { releaseSource, type RasterSource } from "./raster";
import { recognizerModel } from "../model/recognizer-model";
import { orderReading } from "./reading-order";
import {
  isBlank,
  pageCoverage,
  prepareRaster,
  recognizeRaster,
  retryReading,
  wordScore,
  type PageReading,
  type PreparedRaster,
  type RecognizeContext,
} from "./recognize";
import {
  chooseReading,
  confidentTesseractWords,
  PADDLE_FIRST_ON_BELOW,
  PADDLE_FIRST_SURE,
  PADDLE_LATIN_LANGUAGES,
  paddlePageReading,
  paddleSuffices,
  tesseractGaps,
  wantsSecondReading,
  withAlternatives,
} from "./second-reading";
import { straightenRaster, turnTo, type StraightenedRaster } from "./straighten";
import type { TesseractReader } from "./tesseract";

/** A page on its way through the stages. */
export interface PageState {
  readonly number: number;
  /** The page as decoded (an image) or rendered (a PDF page), as sent; a photo's sheet alone after `paper`. */
  source: RasterSource;
  readonly width: number;
  readonly height: number;
  /** The languages asked for (`auto`: English, re-read in another installed language when the text is in it). */
  readonly language: LanguageChoice;
  readonly available: string[];
  readonly deadline: number;
  /** The page turned upright and straightened (`orientation`), and the raster every reading reads. */
  straight?: StraightenedRaster;
  reading?: PageReading;
  /**
   * PaddleOCR's reading, when it read the page first (`first-reading`): the page's reading when it was sure of it,
   * else what Tesseract's reading is compared with (`second-reading`).
   */
  paddle?: PageReading;
  /** The photographed sheet, when the page is a photo of one on a darker surround (`paper`). */
  paper?: PaperRegion;
  /** That reading as PaddleOCR made it, to split its words again with Tesseract's when Tesseract reads the page too. */
  paddleRaw?: PaddleReading;
  /** How its way up was decided, for the trace. */
  orientation: string;
  /** The languages the page was read in: what the rest of the document is read in. */
  languages?: LanguageChoice;
  /** The page was read again in the language its first reading was found to be in (`language`). */
  rereadInLanguage?: boolean;
  /** The finished page, its boxes on the page as sent. */
  page?: ExtractedPage;
}

/** What the stages use of the engine process. */
export interface PageTools {
  tesseract: TesseractReader;
  /** PaddleOCR may read pages here (OCR_ENGINES, and it loaded). */
  paddle: boolean;
  /** Its recognizer's directory (`OCR_MODEL_DIR`; unset: the npm PP-OCRv4 fallback). */
  modelDir?: string;
  /** The second reading's threshold (default: second-reading.ts's). */
  secondReadingBelow?: number;
  /**
   * PaddleOCR's reading read first stands alone at this confidence or more (default: second-reading.ts's); over 100,
   * PaddleOCR does not read first (Tesseract does, and PaddleOCR is its second opinion).
   */
  paddleFirstSure?: number;
  /** Keep Tesseract's idle thread while PaddleOCR reads (`ocrSettings().keepTesseractForPaddle`). */
  keepTesseract?: boolean;
  /** The pool's one memory-heavy slot (main.ts); without it no waiting. */
  heavy?: { acquire(waitMs: number): Promise<boolean>; release(): void };
}

export interface PageStage {
  name: string;
  run(state: PageState, tools: PageTools): Promise<void> | void;
  /** Whether this stage would read the page again after `reading` (the earlier readings then defer their passes). */
  rereads?(state: PageState, tools: PageTools, reading: PageReading): boolean;
}

/**
 * A page whose first reading has a mean confidence under this, and whose glyphs did not say "upright", is read upside
 * down too, and the reading Tesseract scores higher kept: the glyphs could not say which way up it stands (all
 * capitals and digits: a receipt), or turned it wrongly. Upside-down text reads at 20–45; upright pages of the
 * orientation bench at 75 or more (docs/decisions.md#orientation).
 */
const FLIP_PROBE_BELOW_CONFIDENCE = 60;
/** The upside-down reading must score this much better than the upright one to turn the page. */
const FLIP_PROBE_MARGIN = 1.3;
/** The second reading starts only with this much time left before the request's deadline (a dense page takes ~7 s). */
const SECOND_READING_RESERVE_MS = 10_000;

/** The stages, in order. */
export const PAGE_STAGES: readonly PageStage[] = [
  {
    // A photo of a sheet on a table: what lies around the sheet is painted the paper's colour before anything reads
    // the page (paper.ts), so the table's texture is neither glyphs nor words.
    name: "paper",
    run(state) {
      const found = profiled("paper", () => paperOnly(state.source, state.width, state.height));
      if (!found) return;
      // The photo as sent is not drawn again: its pixels go now (a 12-megapixel photo's copy is 48 MB more).
      releaseSource(state.source);
      state.paper = found.paper;
      state.source = found.source;
    },
  },
  {
    // Glyph heights (text size), the content box, the scale Tesseract reads at; then the page turned upright and
    // straightened from the same glyphs (straighten.ts), drawn at that scale.
    name: "orientation",
    async run(state) {
      const first = prepareRaster(state.source, state.width, state.height);
      state.straight = await profiledAsync("orientation", () =>
        straightenRaster(state.source, state.width, state.height, first),
      );
      state.orientation = state.straight.verdict;
    },
  },
  {
    // Where turned on (PADDLE_FIRST_SURE, off by default), PaddleOCR first where its recognizer reads the page's
    // languages (PP-OCRv6: every language offered); its
    // reading stands alone when it is sure of it and covers the page's text (second-reading.ts, `paddleSuffices`).
    // Otherwise Tesseract, automatic page segmentation; its further passes wait when a later stage may read again.
    name: "first-reading",
    async run(state, tools) {
      if (readsPaddleFirst(state, tools)) {
        state.paddle = (await paddleRead(state, tools, "first")) ?? undefined;
        if (state.paddle) {
          const coverage = pageCoverage(state.straight!.prepared, state.paddle.page);
          state.paddle = { ...state.paddle, coverage };
          if (paddleSuffices(state.paddle, tools.paddleFirstSure)) {
            state.reading = state.paddle;
            state.reading.page.trace = { ...state.reading.page.trace, coverage: Math.round(coverage * 100) / 100 };
            return;
          }
        }
      }
      state.reading = await recognizeRaster(
        state.straight!.prepared,
        state.number,
        firstContext(state, tools, "first-reading"),
      );
    },
  },
  {
    // A poor reading of a page the glyphs did not call upright: a band of it, then perhaps all of it, upside down.
    name: "flip-probe",
    rereads: (state, _tools, reading) => wantsFlip(state, reading),
    async run(state, tools) {
      if (!wantsFlip(state, state.reading!)) return;
      await flipProbe(state, tools);
    },
  },
  {
    // The reading is clearly in another installed language (auto): read again in it.
    name: "language",
    rereads: (state, _tools, reading) => otherLanguage(state, reading) !== null,
    async run(state, tools) {
      const guess = otherLanguage(state, state.reading!);
      // PaddleOCR's recognizer reads every offered language alike: its reading stands, and names the language the
      // rest of the document is read in.
      if (state.paddle && state.reading === state.paddle) {
        state.languages = guess ? { langs: [guess, "eng"], auto: false } : { langs: state.language.langs, auto: false };
        return;
      }
      if (!guess) {
        state.languages = { langs: state.language.langs, auto: false };
        return;
      }
      const decided: LanguageChoice = { langs: [guess, "eng"], auto: false };
      const context: RecognizeContext = { pool: tools.tesseract, deadline: state.deadline, langs: decided.langs };
      const before = state.reading!;
      const again = await profiledAsync(
        "language-reread",
        () => recognizeRaster(state.straight!.prepared, state.number, context),
        true,
      );
      again.page.trace = {
        ...again.page.trace,
        passes: (again.page.trace?.passes ?? 1) + (before.page.trace?.passes ?? 1),
      };
      state.reading = again;
      state.languages = decided;
      state.rereadInLanguage = true;
    },
  },
  {
    // PaddleOCR where Tesseract was unsure (English pages), the better reading kept; else Tesseract's deferred passes.
    name: "second-reading",
    rereads: (state, tools, reading) => wantsPaddle(state, tools, reading),
    async run(state, tools) {
      if (state.paddle && state.reading === state.paddle) return;
      if (state.rereadInLanguage && !state.paddle) return;
      state.reading = await secondReading(state, tools);
    },
  },
  {
    // A photo's sheet (`paper`): words from its painted surround and fragments of its edge (texture-lines.ts).
    name: "sheet-edge",
    run(state) {
      if (!state.paper) return;
      const { page, dropped } = dropSheetEdge(state.reading!.page, state.paper, state.straight!.turn);
      page.trace = { ...page.trace, paper: `sheet ${Math.round(state.paper.share * 100)}%, ${dropped} edge words` };
      state.reading = { ...state.reading!, page };
    },
  },
  {
    // Columns one after the other, everything else row by row (reading-order.ts), whichever recognizer read it.
    name: "layout",
    run(state) {
      const reading = state.reading!;
      reading.page.trace = { ...reading.page.trace, orientation: state.orientation };
      state.page = profiled("layout", () => orderReading(reading.page));
    },
  },
  {
    // Boxes back onto the page as it was sent (unturned, unstraightened).
    name: "page-as-sent",
    run(state) {
      state.page = pageAsSent(state.page!, state.straight!.turn);
    },
  },
];

/** Run the stages over a page; the caller releases `state.straight.turned` afterwards. */
export async function readPage(
  state: PageState,
  tools: PageTools,
  stages: readonly PageStage[] = PAGE_STAGES,
): Promise<PageState> {
  const sent = state.source;
  try {
    for (const stage of stages) await stage.run(state, tools);
  } finally {
    // A stage's copy of the page (`paper`); the caller releases the page it sent.
    if (state.source !== sent) releaseSource(state.source);
  }
  return state;
}

/** Tesseract's context for a reading made at `stage`: its further passes wait when a later stage may read again. */
function firstContext(state: PageState, tools: PageTools, stage: string): RecognizeContext {
  const later = PAGE_STAGES.slice(PAGE_STAGES.findIndex((s) => s.name === stage) + 1);
  return {
    pool: tools.tesseract,
    deadline: state.deadline,
    langs: state.language.langs,
    deferRetries: (reading) => later.some((s) => s.rereads?.(state, tools, reading) ?? false),
  };
}

/** Glyphs that said "upright" by 2:1 or more have not been wrong on corpus-dev; pages of noise read poorly stay. */
function wantsFlip(state: PageState, reading: PageReading): boolean {
  const { straight } = state;
  if (!straight?.lines || straight.verdict === "upright") return false;
  if (state.paddle && reading === state.paddle) return false;
  const words = reading.page.blocks.reduce((n, b) => n + b.lines.reduce((m, l) => m + l.words.length, 0), 0);
  return words >= 3 && reading.page.confidence < FLIP_PROBE_BELOW_CONFIDENCE;
}

function otherLanguage(state: PageState, reading: PageReading): string | null {
  return state.language.auto ? (detectLanguage(reading.page.text, state.available)?.lang ?? null) : null;
}

function wantsPaddle(state: PageState, tools: PageTools, reading: PageReading): boolean {
  // With PaddleOCR's reading made first, the same rule as for a reading made second: Tesseract's stands where it
  // was sure, on short pages and on columns; else the better of the two (chooseReading).
  const wanted =
    tools.paddle &&
    wantsSecondReading(reading, state.languages?.langs ?? state.language.langs, {
      below: tools.secondReadingBelow,
      accents: recognizerModel(tools.modelDir).latinAccents,
    });
  if (!state.paddle) return wanted;
  return wanted && reading !== state.paddle && chooseReading(reading, state.paddle) === state.paddle;
}

async function flipProbe(state: PageState, tools: PageTools): Promise<void> {
  const straight = state.straight!;
  const reading = state.reading!;
  const context = firstContext(state, tools, "flip-probe");
  const { flipped, other, band } = await profiledAsync(
    "flip-probe",
    async () => {
      const flipped = await turnTo(state.source, {
        ...straight.turn,
        rotation: ((straight.turn.rotation + 180) % 360) as Quarter,
      });
      const probeContext = { ...context, deferRetries: () => true };
      // A band of the page first: only when its lines read better upside down is the whole page read so.
      const band = flipBand(flipped.prepared, reading);
      if (band) {
        const banded = await recognizeRaster(band.prepared, state.number, probeContext);
        if (banded.score <= band.uprightScore * FLIP_PROBE_MARGIN) return { flipped, other: null, band: true };
      }
      return {
        flipped,
        other: await recognizeRaster(flipped.prepared, state.number, probeContext),
        band: band !== null,
      };
    },
    true,
  );
  if (other && other.score > reading.score * FLIP_PROBE_MARGIN) {
    if (straight.turned) releaseSource(straight.turned);
    state.straight = {
      ...flipped,
      verdict: straight.verdict === "upside-down" ? "upright" : "upside-down",
      lines: straight.lines,
    };
    state.reading = other;
    // PaddleOCR's reading, if it read first, was of the page the other way up.
    state.paddle = undefined;
    state.paddleRaw = undefined;
    state.orientation += `, flipped by a reading${band ? " (a band of it first)" : ""}`;
  } else {
    if (flipped.turned) releaseSource(flipped.turned);
    state.orientation += other
      ? `, a reading upside down was worse${band ? " (a band of it first)" : ""}`
      : ", a band of it read upside down was worse";
  }
  // Whichever was kept, its further passes run now unless a later stage may still read the page again.
  if (!context.deferRetries!(state.reading!))
    state.reading = await retryReading(state.straight!.prepared, state.reading!, state.number, context);
}

/**
 * The second recognizer (OCR_ENGINES includes `paddle`): a page Tesseract was unsure of is read by PaddleOCR too,
 * and the better reading kept (second-reading.ts). It reads the raster Tesseract read. Such a page's further Tesseract
 * passes (block re-read, rescue) were deferred: PaddleOCR's reading replaced theirs on every such page of the
 * benchmark (docs/decisions.md#deferred-retries), so they run only when Tesseract's reading is kept.
 */
async function secondReading(state: PageState, tools: PageTools): Promise<PageReading> {
  const reading = state.reading!;
  const prepared = state.straight!.prepared;
  const context: RecognizeContext = { pool: tools.tesseract, deadline: state.deadline, langs: state.languages!.langs };
  const tesseract = () => (reading.retriesDeferred ? retryReading(prepared, reading, state.number, context) : reading);
  let paddle = state.paddle;
  if (!wantsPaddle(state, tools, reading)) return tesseract();
  if (!paddle) {
    const read = await paddleRead(state, tools, "second");
    if (!read) return tesseract();
    paddle = read;
  } else if (state.paddleRaw) {
    // Read first, before Tesseract: its words split again as a reading made second would be (Tesseract's sure lines
    // and word gaps), without recognizing anything again.
    const options = { known: confidentTesseractWords(reading, prepared), gaps: tesseractGaps(reading, prepared) };
    paddle = paddlePageReading(withOtherReading(state.paddleRaw, options), prepared, state.number);
  }
  const chosen = chooseReading(reading, paddle) === paddle ? paddle : await tesseract();
  // Each word the other recognizer read differently carries that reading (`alternative`: the word needs review).
  const kept = { ...chosen, page: withAlternatives(chosen.page, (chosen === paddle ? reading : paddle).page) };
  // PaddleOCR's page keeps the trace of Tesseract's first pass; Tesseract's reading has its own (with its retries).
  kept.page.trace = {
    ...(chosen === paddle ? reading.page.trace : kept.page.trace),
    second: kept.page.engine ?? "tesseract",
  };
  return kept;
}

/**
 * PaddleOCR reads pages first where that is turned on (`paddleFirstSure` at 100 or less; PADDLE_FIRST_SURE is off),
 * its recognizer has accents (PP-OCRv6) and the page's languages are Latin.
 */
function readsPaddleFirst(state: PageState, tools: PageTools): boolean {
  return (
    tools.paddle &&
    (tools.paddleFirstSure ?? PADDLE_FIRST_SURE) <= PADDLE_FIRST_ON_BELOW &&
    recognizerModel(tools.modelDir).latinAccents &&
    state.language.langs.every((lang) => PADDLE_LATIN_LANGUAGES.has(lang)) &&
    !isBlank(state.straight!.prepared.analysis)
  );
}

/**
 * PaddleOCR's reading of the page (`first`: before Tesseract; `second`: after it, with the words and word gaps of its
 * reading), or null when it could not read it in time or failed (Tesseract's reading then stands, or is made).
 */
async function paddleRead(state: PageState, tools: PageTools, when: "first" | "second"): Promise<PageReading | null> {
  const prepared = state.straight!.prepared;
  const reading = when === "second" ? state.reading : undefined;
  // The page's one reading may not be left undone: a second opinion needs time to spare before the deadline.
  const spare = state.deadline - ENGINE_DEADLINE_SLACK_MS - Date.now() - SECOND_READING_RESERVE_MS;
  if (spare <= 0) return null;
  // A native Tesseract holds little memory while PaddleOCR reads: the pool's heavy slot is for tesseract.js's heap.
  const heavy = tools.tesseract.kind === "native" && when === "first" ? undefined : tools.heavy;
  if (heavy && !(await heavy.acquire(spare))) return null;
  let result;
  try {
    // Tesseract's idle thread gives its wasm heap back first: the two recognizers' peaks no longer add up (engine
    // processes' peak with PaddleOCR 656 → 543 MB, docs/decisions.md#shed-tesseract). A native Tesseract has nothing to
    // give back. `ocrSettings().keepTesseractForPaddle` trades that memory for CPU (docs/decisions.md#speed-profile).
    if (!tools.keepTesseract && heavy) await tools.tesseract.shed();
    // Loaded for the page and released after it: onnxruntime's memory arena keeps a page's buffers (275–508 MB
    // resident after a page) until its sessions are released, and loading takes ~0.2–0.4 s.
    const recognizer = await profiledAsync("paddle-load", () => loadPaddle(tools.modelDir));
    try {
      result = await recognizer.read(
        prepared.raster,
        reading ? { known: confidentTesseractWords(reading, prepared), gaps: tesseractGaps(reading, prepared) } : {},
      );
    } finally {
      await profiledAsync("paddle-load", () => recognizer.release());
    }
  } catch (error) {
    // A second opinion that failed is no reason to fail the page: Tesseract's reading stands (or is made).
    console.error(`[engine] PaddleOCR failed on a page; Tesseract reads it: ${String(error)}`);
    return null;
  } finally {
    heavy?.release();
  }
  if (when === "first") state.paddleRaw = result;
  return paddlePageReading(result, prepared, state.number);
}

/** A page of this many lines or more is checked upside down on a band of them first, if the band holds this much text. */
const FLIP_BAND_MIN_LINES = 6;
const FLIP_BAND_MIN_CHARACTERS = 40;

/**
 * The middle third of the lines the upright reading found, as a band of the page turned upside down (`flipped`: the
 * same page turned 180°, the same size), and the score the upright reading has on those lines. Reading a third of a
 * poor page upside down tells a page that stands upright from one that does not: a faded receipt cost a whole second
 * reading (2.8 s) only to keep its first. Null on pages of few lines (read whole).
 */
export function flipBand(
  flipped: PreparedRaster,
  reading: PageReading,
): { prepared: PreparedRaster; uprightScore: number } | null {
  const lines = reading.page.blocks.flatMap((b) => b.lines).sort((a, b) => a.bbox[1] - b.bbox[1]);
  if (lines.length < FLIP_BAND_MIN_LINES) return null;
  const chosen = lines.slice(Math.floor(lines.length / 3), Math.ceil((2 * lines.length) / 3));
  const top = Math.min(...chosen.map((l) => l.bbox[1]));
  const bottom = Math.max(...chosen.map((l) => l.bbox[3]));
  let uprightScore = 0;
  let characters = 0;
  for (const line of lines) {
    const middle = (line.bbox[1] + line.bbox[3]) / 2;
    if (middle < top || middle > bottom) continue;
    for (const word of line.words) {
      characters += word.text.length;
      uprightScore += wordScore(word.text, word.confidence);
    }
  }
  // Too little text in the band to compare two readings of it (a logo, a barcode): the whole page decides.
  if (characters < FLIP_BAND_MIN_CHARACTERS) return null;
  // Upside down, the band runs from 1 − bottom to 1 − top of the page; a line height of margin either side.
  const margin = (bottom - top) / chosen.length;
  const { raster, crop, scale, sourceHeight } = flipped;
  const row = (y: number) => Math.round((y * sourceHeight - crop.y) * scale);
  const r0 = Math.max(0, row(1 - bottom - margin));
  const r1 = Math.min(raster.height, row(1 - top + margin));
  if (r1 - r0 < 8 || r1 - r0 > raster.height * 0.8) return null;
  const band = {
    width: raster.width,
    height: r1 - r0,
    data: raster.data.subarray(r0 * raster.width, r1 * raster.width),
  };
  return {
    prepared: { ...flipped, raster: band, crop: { ...crop, y: crop.y + r0 / scale, height: (r1 - r0) / scale } },
    uprightScore,
  };
}
