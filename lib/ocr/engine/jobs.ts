import { createCanvas } from "@napi-rs/canvas";
import type { PDFPageProxy } from "pdfjs-dist";
import { inLanes } from "@/lib/async";
import { isOcrError, OcrError } from "../model/ocr-error";
import type { ExtractedPage } from "../model/document";
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
import { decodeImage, releaseSource, type RasterSource } from "./raster";
import { closeTiff, decodeTiffPage, openTiff } from "./tiff";
import { openTesseract, type TesseractReader } from "./tesseract";
import { checkPaddle } from "./paddle";
import { profiledAsync, startProfile, takeProfile } from "../model/profile";
import { readPage, type PageState, type PageTools } from "./page-pipeline";
import { findPdfHazard, type PdfHazard } from "./pdf-streams";
import {
  type DocumentRef,
  type EngineJob,
  type EngineProcessConfig,
  type InspectPdfJob,
  type InspectPdfResult,
  type PageResult,
  type ReadImageJob,
  type ReadLimits,
  type ReadPdfPageJob,
  type ReadTiffPageJob,
  type PreviewResult,
  type RenderPreviewJob,
  type TesseractInUse,
} from "../model/protocol";

/** Pages whose text layer has fewer characters than this are also OCR'd (a scan with a stamped page number). */
const SPARSE_TEXT_LAYER = 40;
/** A text layer with more unmapped glyphs than this share is unusable: OCR instead. */
const MAX_GARBAGE = 0.3;
/** pdf.js's in-thread worker yields between messages, so several pages in flight roughly halve a long document. */
const TEXT_LAYER_CONCURRENCY = 8;
/** Open documents one engine process keeps (the server decides which, and drops them when a request ends). */
const MAX_OPEN_DOCUMENTS = 4;

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
        await checkPaddle(this.config.modelDir);
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
      case "read-tiff-page":
        return this.profiledPage(job.profile, () => this.readTiffPage(job, deadline));
      case "render-preview":
        return this.renderPreview(job);
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
    closeTiff(docId);
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
    // Past the bound, a request is refused; a document that may become a job (`past: "report"`) says so and stops.
    const report = job.maxWork?.past === "report";
    let overBound = false;
    const passed = (): boolean => {
      const over = overWork();
      if (over && !report) throw over;
      overBound ||= Boolean(over);
      return overBound;
    };
    const overResult = (): InspectPdfResult => ({ pageCount: handle.pageCount, selected, done, ocr, overWork: true });
    await inLanes(selected, TEXT_LAYER_CONCURRENCY, async (number) => {
      // Stop as soon as the request cannot fit (a long scan is refused before all its pages are looked at).
      if (passed()) return;
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
      if (passed()) {
        page.cleanup();
        continue;
      }
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
    if (passed()) return overResult();
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

  private async readTiffPage(job: ReadTiffPageJob, deadline: number): Promise<PageResult> {
    const tiff = openTiff(job.doc);
    const image = await profiledAsync("decode", () =>
      decodeTiffPage(tiff.bytes, job.number, job.limits.maxImagePixels, tiff.pages),
    );
    try {
      return await this.readSource(
        image.source,
        image.width,
        image.height,
        job.number,
        job.language,
        job.available,
        deadline,
      );
    } finally {
      releaseSource(image.source);
    }
  }

  /**
   * Read a page drawn in `source` (a decoded image, a rendered PDF page) through the page's stages
   * (lib/ocr/engine/page-pipeline.ts): turned upright and straightened, read, its lines put in reading order, its boxes
   * mapped back onto the page as sent.
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
    const state: PageState = { number, source, width, height, language, available, deadline, orientation: "" };
    const tools: PageTools = {
      tesseract: await this.reader(),
      paddle: this.paddle,
      ...(this.config.modelDir && { modelDir: this.config.modelDir }),
      ...(this.config.secondReadingBelow !== undefined && { secondReadingBelow: this.config.secondReadingBelow }),
      ...(this.config.paddleFirstSure !== undefined && { paddleFirstSure: this.config.paddleFirstSure }),
      ...(this.config.keepTesseract && { keepTesseract: true }),
      ...(this.heavy && { heavy: this.heavy }),
    };
    try {
      await readPage(state, tools);
      return { page: state.page!, language: state.languages! };
    } finally {
      if (state.straight?.turned) releaseSource(state.straight.turned);
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
      const { page: read, language } = await this.readSource(
        canvas,
        canvas.width,
        canvas.height,
        job.number,
        job.language,
        job.available,
        deadline,
      );
      return { page: pickSparsePage(job.textLayer, read), language };
    } finally {
      releaseSource(canvas);
    }
  }

  /**
   * A page drawn for display (the MCP viewer): the page as sent (no turn, no straightening: the words' boxes are on
   * it), scaled to at most `maxWidth` pixels wide, as a JPEG within `maxBytes` (lower quality, then smaller, until it
   * fits).
   */
  private async renderPreview(job: RenderPreviewJob): Promise<PreviewResult> {
    let source: RasterSource;
    let width: number;
    let height: number;
    if (job.type === "pdf") {
      const handle = await this.document(job.doc, job.limits);
      const page = await getPdfPage(handle, job.number);
      takePdfWarnings();
      try {
        source = await renderPdfPage(page, pageWork(job.limits));
      } finally {
        page.cleanup();
      }
      checkImageLimit(job.number, job.limits);
      ({ width, height } = source);
    } else if (job.type === "tiff") {
      const tiff = openTiff(job.doc);
      ({ source, width, height } = await decodeTiffPage(tiff.bytes, job.number, job.limits.maxImagePixels, tiff.pages));
    } else {
      if (!job.doc.bytes) throw new Error(`image ${job.doc.id} came without bytes`);
      ({ source, width, height } = await decodeImage(job.doc.bytes, job.type, job.limits.maxImagePixels));
    }
    try {
      let scale = Math.min(1, job.maxWidth / width);
      for (;;) {
        const w = Math.max(1, Math.round(width * scale));
        const h = Math.max(1, Math.round(height * scale));
        const canvas = createCanvas(w, h);
        const context = canvas.getContext("2d");
        context.fillStyle = "#fff";
        context.fillRect(0, 0, w, h);
        context.imageSmoothingEnabled = true;
        context.drawImage(source, 0, 0, w, h);
        for (const quality of [80, 60, 45]) {
          const bytes = await canvas.encode("jpeg", quality);
          if (bytes.byteLength <= job.maxBytes) {
            releaseSource(canvas);
            return { mimeType: "image/jpeg", bytes: new Uint8Array(bytes), width: w, height: h };
          }
        }
        releaseSource(canvas);
        if (w <= 64)
          throw new OcrError("unreadable", `Page ${job.number} could not be drawn within ${job.maxBytes} bytes`);
        scale *= 0.7;
      }
    } finally {
      releaseSource(source);
    }
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
      return new OcrError(
        "unreadable",
        "The PDF is built so that reading its objects would take far more work than its size: it was not read",
      );
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
