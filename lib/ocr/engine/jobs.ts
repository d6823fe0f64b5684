import type { PDFPageProxy } from "pdfjs-dist";
import { inLanes } from "@/lib/async";
import { isOcrError, OcrError } from "../model/ocr-error";
import type { ExtractedPage } from "../model/document";
import { detectLanguage } from "./language-detect";
import type { LanguageChoice } from "../model/languages";
import { parsePageSelection } from "../model/pages";
import {
  DEFAULT_PAGE_WORK,
  getPdfPage,
  openPdf,
  pageHasInk,
  readTextLayer,
  removedOversizedImage,
  renderPdfPage,
  takePdfWarnings,
  type PdfHandle,
} from "./pdf";
import { pageAsSent, type Quarter } from "../model/page-turn";
import { decodeImage, releaseSource, type RasterSource } from "./raster";
import { prepareRaster, recognizeRaster, retryReading, wordScore, type PageReading, type PreparedRaster, type RecognizeContext } from "./recognize";
import { straightenRaster, turnTo, type StraightenedRaster } from "./straighten";
import { openTesseract, type TesseractReader } from "./tesseract";
import { checkPaddle, loadPaddle } from "./paddle";
import { profiled, profiledAsync, startProfile, takeProfile } from "../model/profile";
import { orderReading } from "./reading-order";
import { chooseReading, confidentTesseractWords, paddlePageReading, tesseractGaps, wantsSecondReading } from "./second-reading";
import { findPdfHazard, type PdfHazard } from "./pdf-streams";
import {
  ENGINE_DEADLINE_SLACK_MS,
  type DocumentRef,
  type EngineJob,
  type EngineProcessConfig,
  type InspectPdfJob,
  type InspectPdfResult,
  type PageResult,
  type ReadImageJob,
  type ReadLimits,
  type ReadPdfPageJob,
  type TesseractInUse,
} from "../model/protocol";

/** Pages whose text layer has fewer characters than this are also OCR'd (a scan with a stamped page number). */
const SPARSE_TEXT_LAYER = 40;
/** A text layer with more unmapped glyphs than this share is unusable: OCR instead. */
const MAX_GARBAGE = 0.3;
/** pdf.js's in-thread worker yields between messages, so several pages in flight roughly halve a long document. */
const TEXT_LAYER_CONCURRENCY = 8;
/** The second reading starts only with this much time left before the request's deadline (a dense page takes ~7 s). */
const SECOND_READING_RESERVE_MS = 10_000;
/** Open documents one engine process keeps (the server decides which, and drops them when a request ends). */
const MAX_OPEN_DOCUMENTS = 4;
/**
 * A page whose first reading has a mean confidence under this, and whose glyphs did not say "upright", is read upside
 * down too, and the reading Tesseract scores higher kept: the glyphs could not say which way up it stands (all
 * capitals and digits: a receipt), or turned it wrongly. Upside-down text reads at 20–45; upright pages of the
 * orientation bench at 75 or more (docs/decisions.md#orientation).
 */
const FLIP_PROBE_BELOW_CONFIDENCE = 60;
/** The upside-down reading must score this much better than the upright one to turn the page. */
const FLIP_PROBE_MARGIN = 1.3;

/**
 * What one engine process does: everything from a file's bytes to a page reading — decoding, EXIF, text-size
 * analysis, pdf.js parsing, text layers, rendering and Tesseract. It runs in a child process of the server
 * (lib/ocr/engine/main.ts), one job at a time, so the server's event loop never touches pixels and a job past its
 * deadline or its memory ceiling can be stopped by killing the process.
 */
export class Engine {
  /** The process's Tesseract (native or tesseract.js, `OCR_TESSERACT`), opened by the first page or `warm`. */
  private tesseract?: Promise<TesseractReader>;
  /** Which Tesseract that is, once opened (the `ready` message and `/api/health` name it). */
  tesseractInUse?: TesseractInUse;
  /** Whether pages may get a second reading by PaddleOCR: OCR_ENGINES names it, and it could be loaded. */
  private paddle: boolean;
  private readonly documents = new Map<string, PdfHandle>();

  constructor(
    private readonly config: EngineProcessConfig,
    /** The pool's one memory-heavy slot (see main.ts); without it (tests, the bench's in-process use) no waiting. */
    private readonly heavy?: { acquire(waitMs: number): Promise<boolean>; release(): void },
  ) {
    this.paddle = config.engines.includes("paddle");
  }

  /** Start Tesseract ahead of the first job (OCR processes; the inspect process never needs it). */
  async warm(langs: string[]): Promise<void> {
    await (await this.reader()).warm(langs);
    if (this.paddle) {
      // A deployment without onnxruntime's native runtime or the model files says so in its log at once (pages are
      // still read by Tesseract). Only checked, not loaded: every replaced process passes here.
      try {
        await checkPaddle();
      } catch (error) {
        this.paddle = false;
        console.error(`[engine] PaddleOCR could not load; pages are read by Tesseract alone: ${String(error)}`);
      }
    }
  }

  run(job: EngineJob, deadline: number): Promise<unknown> {
    switch (job.kind) {
      case "inspect-pdf":
        return this.inspectPdf(job);
      case "read-image":
        return this.profiledPage(job.profile, () => this.readImage(job, deadline));
      case "read-pdf-page":
        return this.profiledPage(job.profile, () => this.readPdfPage(job, deadline));
    }
  }

  /** A page read with its processor time per stage (`--profile` of the bench), or as it is when not asked. */
  private async profiledPage(profile: boolean | undefined, read: () => Promise<PageResult>): Promise<PageResult> {
    if (!profile) return read();
    startProfile();
    try {
      const result = await read();
      return { ...result, profile: takeProfile() };
    } finally {
      takeProfile();
    }
  }

  /** Release Tesseract (the process is about to exit). */
  async close(): Promise<void> {
    const reader = await this.tesseract?.catch(() => undefined);
    await reader?.terminate();
  }

  async drop(docId: string): Promise<void> {
    const handle = this.documents.get(docId);
    this.documents.delete(docId);
    await handle?.close().catch(() => undefined);
  }

  private reader(): Promise<TesseractReader> {
    this.tesseract ??= openTesseract(this.config.tesseract, {
      size: 1,
      queueLimit: 16,
      maxJobsPerWorker: this.config.maxJobsPerWorker,
      createTimeoutMs: this.config.createTimeoutMs,
      ...(this.config.tesseractLibrary && { library: this.config.tesseractLibrary }),
    }).then(
      ({ reader, inUse }) => {
        this.tesseractInUse = inUse;
        return reader;
      },
      (error: unknown) => {
        this.tesseract = undefined;
        throw new OcrError("engine_failed", "The OCR engine could not start", { cause: error });
      },
    );
    return this.tesseract;
  }

  /**
   * Everything about a PDF that is cheap next to OCR, so the server can refuse or charge before any OCR: inflate
   * bombs, structure, page count and selection, then each selected page's text layer; pages with no text get a
   * 36-DPI look for ink (a blank page needs no OCR). Images over the pixel limit show here, in that look.
   */
  private async inspectPdf(job: InspectPdfJob): Promise<InspectPdfResult> {
    if (job.doc.bytes && !job.prechecked) {
      const hazard = await findPdfHazard(job.doc.bytes, job.limits);
      if (hazard) throw hazardError(hazard);
    }
    const handle = await this.document(job.doc, job.limits);
    const selected = parsePageSelection(job.pages, handle.pageCount, job.maxPages);
    if (job.structureOnly) return { pageCount: handle.pageCount, selected, done: [], ocr: [] };
    const done: ExtractedPage[] = [];
    const ocr: InspectPdfResult["ocr"] = [];
    const inkChecks: Array<{ number: number; page: PDFPageProxy; layer: ExtractedPage }> = [];

    const overWork = () =>
      job.maxWork &&
      ocr.length + done.length * job.maxWork.textPageWeight > job.maxWork.ocrPages &&
      new OcrError(
        "too_many_pages",
        `This PDF has more than ${job.maxWork.ocrPages} pages of work for one request: at least ${ocr.length} of its ` +
          `pages need OCR (at most ${job.maxWork.ocrPages}), a page read from its text layer counting ` +
          `${job.maxWork.textPageWeight} of one`,
      );
    const failed: NonNullable<InspectPdfResult["failed"]> = [];
    /** A page's failure: the document's (a request), or the page's alone (`pageFailures`: a job). */
    const pageFailed = (number: number, error: unknown) => {
      if (!job.pageFailures || !isOcrError(error)) throw error;
      failed.push({ number, error: { code: error.code, message: error.message } });
    };
    await inLanes(selected, TEXT_LAYER_CONCURRENCY, async (number) => {
      // Stop as soon as the request cannot fit (a long scan is refused before all its pages are looked at).
      const over = overWork();
      if (over) throw over;
      let page: PDFPageProxy;
      let layer: Awaited<ReturnType<typeof readTextLayer>>;
      try {
        page = await getPdfPage(handle, number);
        layer = await readTextLayer(page, number);
      } catch (error) {
        pageFailed(number, error);
        return;
      }
      if (layer.chars >= SPARSE_TEXT_LAYER && layer.garbage <= MAX_GARBAGE) {
        done.push(layer.page);
        page.cleanup();
      } else if (layer.chars === 0) {
        inkChecks.push({ number, page, layer: layer.page });
      } else {
        ocr.push({ number, ...(layer.garbage <= MAX_GARBAGE && { textLayer: layer.page }) });
        page.cleanup();
      }
    });

    // One page at a time, so a removed oversized image is attributed to its page.
    inkChecks.sort((a, b) => a.number - b.number);
    for (const { number, page, layer } of inkChecks) {
      takePdfWarnings();
      const ink = await pageHasInk(page, pageWork(job.limits));
      page.cleanup();
      try {
        checkImageLimit(number, job.limits);
      } catch (error) {
        pageFailed(number, error);
        continue;
      }
      if (ink) ocr.push({ number });
      else done.push(layer); // nothing to read and nothing drawn: blank
    }
    const over = overWork();
    if (over) throw over;
    ocr.sort((a, b) => a.number - b.number);
    done.sort((a, b) => a.number - b.number);
    return { pageCount: handle.pageCount, selected, done, ocr, ...(job.pageFailures && { failed }) };
  }

  private async readImage(job: ReadImageJob, deadline: number): Promise<PageResult> {
    const image = await profiledAsync("decode", () => decodeImage(job.bytes, job.type, job.limits.maxImagePixels));
    try {
      return await this.readSource(image.source, image.width, image.height, 1, job.language, job.available, deadline);
    } finally {
      releaseSource(image.source);
    }
  }

  /**
   * Read a page drawn in `source` (a decoded image, a rendered PDF page): turned upright and straightened first when
   * it needs it (lib/ocr/engine/straighten.ts), its boxes then mapped back onto the page as sent.
   */
  private async readSource(
    source: RasterSource,
    width: number,
    height: number,
    number: number,
    language: LanguageChoice,
    available: string[],
    deadline: number,
  ): Promise<PageResult> {
    const prepared = prepareRaster(source, width, height);
    let straight = await profiledAsync("orientation", () => straightenRaster(source, width, height, prepared));
    try {
      const result = await this.readWithLanguage(straight, number, language, available, deadline, (flipped) => {
        if (straight.turned) releaseSource(straight.turned);
        straight = flipped;
      }, source);
      const ordered = profiled("layout", () => orderReading(result.reading.page));
      return { page: pageAsSent(ordered, straight.turn), language: result.language };
    } finally {
      if (straight.turned) releaseSource(straight.turned);
    }
  }

  private async readPdfPage(job: ReadPdfPageJob, deadline: number): Promise<PageResult> {
    const handle = await this.document(job.doc, job.limits);
    const page = await getPdfPage(handle, job.number);
    takePdfWarnings();
    let canvas;
    try {
      canvas = await profiledAsync("pdf-render", () => renderPdfPage(page, pageWork(job.limits)));
    } finally {
      page.cleanup();
    }
    try {
      checkImageLimit(job.number, job.limits);
      const { page: read, language } = await this.readSource(canvas, canvas.width, canvas.height, job.number, job.language, job.available, deadline);
      return { page: pickSparsePage(job.textLayer, read), language };
    } finally {
      releaseSource(canvas);
    }
  }

  /**
   * Read a page; in `auto` mode, re-read it in another installed language when the English reading is clearly in
   * that language. Returns the languages to use for the rest of the document.
   */
  private async readWithLanguage(
    straight: StraightenedRaster,
    number: number,
    language: LanguageChoice,
    available: string[],
    deadline: number,
    onFlip: (flipped: StraightenedRaster) => void,
    source: RasterSource,
  ): Promise<{ reading: PageReading; language: LanguageChoice }> {
    const context = { pool: await this.reader(), deadline };
    // Glyphs that said "upright" by 2:1 or more have not been wrong on corpus-dev; what they left unsure or turned is
    // checked, when they make lines of text (a page of noise read poorly stays as it is).
    const probe = (r: PageReading) => straight.lines && straight.verdict !== "upright" && wantsFlipProbe(r);
    // A page that reads as another language is read again in it: the English reading's own further passes would be
    // thrown away, so they wait until the language is known (they run in secondReading when it stays English).
    const otherLanguage = (r: PageReading) => language.auto && detectLanguage(r.page.text, available) !== null;
    const first: RecognizeContext = {
      ...context,
      langs: language.langs,
      deferRetries: (r) => probe(r) || this.wantsPaddle(r, language.langs) || otherLanguage(r),
    };
    let prepared = straight.prepared;
    let reading = await recognizeRaster(prepared, number, first);
    let orientation: string = straight.verdict;
    if (probe(reading)) {
      // The reading is poor: perhaps the page stands the other way up (the glyphs could not tell, or told wrong).
      const { turn } = straight;
      const { flipped, other, band } = await profiledAsync(
        "flip-probe",
        async () => {
          const flipped = await turnTo(source, { ...turn, rotation: ((turn.rotation + 180) % 360) as Quarter });
          const probeContext = { ...first, deferRetries: () => true };
          // A band of the page first: only when its lines read better upside down is the whole page read so.
          const band = flipBand(flipped.prepared, reading);
          if (band) {
            const banded = await recognizeRaster(band.prepared, number, probeContext);
            if (banded.score <= band.uprightScore * FLIP_PROBE_MARGIN) return { flipped, other: null, band: true };
          }
          return { flipped, other: await recognizeRaster(flipped.prepared, number, probeContext), band: band !== null };
        },
        true,
      );
      if (other && other.score > reading.score * FLIP_PROBE_MARGIN) {
        onFlip({ ...flipped, verdict: straight.verdict === "upside-down" ? "upright" : "upside-down", lines: straight.lines });
        prepared = flipped.prepared;
        reading = other;
        orientation += `, flipped by a reading${band ? " (a band of it first)" : ""}`;
      } else {
        if (flipped.turned) releaseSource(flipped.turned);
        if (!other) orientation += ", a band of it read upside down was worse";
        else orientation += `, a reading upside down was worse${band ? " (a band of it first)" : ""}`;
      }
      // Whichever was kept, its further passes run as they would have.
      if (!this.wantsPaddle(reading, language.langs) && !otherLanguage(reading)) reading = await retryReading(prepared, reading, number, first);
    }
    const guess = language.auto ? detectLanguage(reading.page.text, available) : null;
    if (!guess) {
      const kept = await this.secondReading(reading, prepared, number, first);
      kept.page.trace = { ...kept.page.trace, orientation };
      return { reading: kept, language: { langs: language.langs, auto: false } };
    }
    const decided: LanguageChoice = { langs: [guess.lang, "eng"], auto: false };
    const again = await profiledAsync("language-reread", () => recognizeRaster(prepared, number, { ...context, langs: decided.langs }), true);
    again.page.trace = { ...again.page.trace, orientation, passes: (again.page.trace?.passes ?? 1) + (reading.page.trace?.passes ?? 1) };
    return { reading: again, language: decided };
  }

  private wantsPaddle(reading: PageReading, langs: string[]): boolean {
    return this.paddle && wantsSecondReading(reading, langs, this.config.secondReadingBelow);
  }

  /**
   * The second recognizer (OCR_ENGINES includes `paddle`): a page Tesseract was unsure of is read by PaddleOCR too,
   * and the better reading kept (lib/ocr/engine/second-reading.ts). It reads the raster Tesseract read. Such a page's
   * further Tesseract passes (block re-read, rescue) were deferred: PaddleOCR's reading replaced theirs on every such
   * page of the benchmark (docs/decisions.md#deferred-retries), so they run only when Tesseract's reading is kept.
   */
  private async secondReading(
    reading: PageReading,
    prepared: PreparedRaster,
    number: number,
    context: RecognizeContext,
  ): Promise<PageReading> {
    const tesseract = () => (reading.retriesDeferred ? retryReading(prepared, reading, number, context) : reading);
    if (!this.wantsPaddle(reading, context.langs)) return tesseract();
    const { deadline } = context;
    // Tesseract's reading is an answer already: the second one is only tried with time to spare before the deadline.
    const spare = deadline - ENGINE_DEADLINE_SLACK_MS - Date.now() - SECOND_READING_RESERVE_MS;
    if (spare <= 0) return tesseract();
    if (this.heavy && !(await this.heavy.acquire(spare))) return tesseract();
    let result;
    try {
      // Tesseract's idle thread gives its wasm heap back first: the two recognizers' peaks no longer add up
      // (engine processes' peak with PaddleOCR 656 → 543 MB, docs/decisions.md#shed-tesseract). This process is usually replaced after
      // such a page anyway (it keeps PaddleOCR's buffers), and otherwise starts a thread for its next page.
      // OCR_KEEP_TESSERACT_FOR_PADDLE trades that memory for CPU: restarting the thread for the next page costs ~0.5 s
      // of CPU there (its start, and a first pass in wasm code not yet optimized again): docs/decisions.md#speed-profile.
      if (!this.config.keepTesseract) await (await this.tesseract)?.shed();
      // Loaded for the page and released after it: onnxruntime's memory arena keeps a page's buffers (275–508 MB
      // resident after a page) until its sessions are released, and loading takes ~0.2–0.4 s.
      const recognizer = await profiledAsync("paddle-load", () => loadPaddle());
      try {
        result = await recognizer.read(prepared.raster, {
          known: confidentTesseractWords(reading, prepared),
          gaps: tesseractGaps(reading, prepared),
        });
      } finally {
        await profiledAsync("paddle-load", () => recognizer.release());
      }
    } catch (error) {
      // A second opinion that failed is no reason to fail the page: Tesseract's reading stands.
      console.error(`[engine] PaddleOCR failed on a page; Tesseract's reading kept: ${String(error)}`);
      return tesseract();
    } finally {
      this.heavy?.release();
    }
    const paddle = paddlePageReading(result, prepared, number);
    const kept = chooseReading(reading, paddle) === paddle ? paddle : await tesseract();
    // PaddleOCR's page keeps the trace of Tesseract's first pass; Tesseract's reading has its own (with its retries).
    kept.page.trace = { ...(kept === paddle ? reading.page.trace : kept.page.trace), second: kept.page.engine ?? "tesseract" };
    return kept;
  }

  /** The open document `ref` names, opened from its bytes when this process does not hold it yet. */
  private async document(ref: DocumentRef, limits: ReadLimits): Promise<PdfHandle> {
    const open = this.documents.get(ref.id);
    if (open) return open;
    if (!ref.bytes) throw new Error(`document ${ref.id} is not open in this engine process and came without bytes`);
    // The bytes came over IPC for this document alone (the pre-check, if any, has read them): pdf.js may have them.
    const handle = await openPdf(ref.bytes, { maxImagePixels: limits.maxImagePixels, give: true });
    this.documents.set(ref.id, handle);
    while (this.documents.size > MAX_OPEN_DOCUMENTS) {
      const oldest = this.documents.keys().next().value!;
      await this.drop(oldest);
    }
    return handle;
  }
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
export function flipBand(flipped: PreparedRaster, reading: PageReading): { prepared: PreparedRaster; uprightScore: number } | null {
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
  const band = { width: raster.width, height: r1 - r0, data: raster.data.subarray(r0 * raster.width, r1 * raster.width) };
  return {
    prepared: { ...flipped, raster: band, crop: { ...crop, y: crop.y + r0 / scale, height: (r1 - r0) / scale } },
    uprightScore,
  };
}

/** A reading worth checking upside down: some words, read poorly. */
function wantsFlipProbe(reading: PageReading): boolean {
  const words = reading.page.blocks.reduce((n, b) => n + b.lines.reduce((m, l) => m + l.words.length, 0), 0);
  return words >= 3 && reading.page.confidence < FLIP_PROBE_BELOW_CONFIDENCE;
}

function checkImageLimit(number: number, limits: ReadLimits): void {
  if (removedOversizedImage(takePdfWarnings())) {
    throw new OcrError(
      "image_too_large",
      `Page ${number} of the PDF draws an image of more than ${Math.round(limits.maxImagePixels / 1e6)} megapixels, the limit per image`,
    );
  }
}

function pageWork(limits: ReadLimits) {
  return { ...DEFAULT_PAGE_WORK, maxCpuMs: limits.maxWorkMs };
}

/** What the pre-check found, as the engine's error. */
function hazardError(hazard: PdfHazard): OcrError {
  const object = (name?: string) => (name ? ` (object ${name})` : "");
  switch (hazard.kind) {
    case "stream":
      return new OcrError(
        "stream_too_large",
        `The PDF holds a stream${object(hazard.object)} that inflates to more than ${formatBytes(hazard.limit)}, the limit per stream`,
      );
    case "image":
      return new OcrError(
        "image_too_large",
        `The PDF holds ${hazard.inline ? "an inline image" : "an image"} of more than ${Math.round(hazard.limit / 1e6)} megapixels, the limit per image${object(hazard.object)}: it is ${hazard.width}×${hazard.height} pixels`,
      );
    case "structure":
      return new OcrError("unreadable", "The PDF is built so that reading its objects would take far more work than its size: it was not read");
  }
}

/** A sparse text layer against OCR of the same page: keep the exact text unless OCR found clearly more. */
function pickSparsePage(textLayer: ExtractedPage | undefined, ocr: ExtractedPage): ExtractedPage {
  if (!textLayer) return ocr;
  const count = (p: ExtractedPage) => p.text.replace(/\s+/g, "").length;
  return count(ocr) > count(textLayer) * 1.5 + 10 ? ocr : textLayer;
}

function formatBytes(bytes: number): string {
  return bytes >= 1024 * 1024 ? `${Math.round(bytes / (1024 * 1024))} MB` : `${Math.round(bytes / 1024)} KB`;
}
