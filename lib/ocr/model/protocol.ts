import { z } from "zod";
import type { FileType, ImageType } from "./detect";
import { ocrEngineSchema, type ExtractedPage } from "./document";
import { ocrErrorCodes, type OcrErrorData } from "./ocr-error";
import type { LanguageChoice } from "./languages";
import type { StageProfile } from "./profile";

/**
 * Messages between the server process and an engine process (lib/ocr/engine/main.ts), over Node's IPC channel with
 * `serialization: "advanced"` (structured clone: bytes travel as bytes). Each side validates the envelope of what it
 * receives; pages inside a result are produced by this codebase's own engine and are not re-parsed field by field
 * (a 50-page document of words would cost the server's event loop tens of milliseconds for nothing).
 */

/** Limits the engine process applies while reading. */
export interface ReadLimits {
  /** Most pixels of an image file, or of one image drawn inside a PDF (pdf.js `maxImageSize`). */
  maxImagePixels: number;
  /** Most bytes one PDF stream may inflate to. */
  maxStreamBytes: number;
  /** Most processor time (ms) drawing one PDF page may take (the inspect job's whole budget is the pool's). */
  maxWorkMs: number;
}

/** A document an engine process keeps open between jobs of one request (a PDF read page by page). */
export interface DocumentRef {
  id: string;
  /** Sent only to a process that does not hold the document yet. */
  bytes?: Uint8Array;
}

export interface InspectPdfJob {
  kind: "inspect-pdf";
  doc: DocumentRef;
  /** `options.pages`, parsed in the engine process against the page count. */
  pages?: string;
  maxPages: number;
  limits: ReadLimits;
  /**
   * Only the structure: inflate bombs, page count and selection, no text layers (`done` and `ocr` come back empty).
   * What accepting an asynchronous job needs before its pages are read elsewhere.
   */
  structureOnly?: boolean;
  /**
   * A synchronous request's bound on work: at most `ocrPages` pages that need OCR, a page read from its text layer
   * (or blank) counting `textPageWeight` of one. Past it, `too_many_pages` (without `limit`: the message says why).
   */
  maxWork?: {
    ocrPages: number;
    textPageWeight: number;
    /**
     * `report`: past the bound, stop looking at pages and answer with `overWork: true` (the intake then makes the
     * document a job) instead of failing. Default `refuse`.
     */
    past?: "refuse" | "report";
  };
  /**
   * A page that cannot be read (an image past the pixel limit, a broken page) is reported in `failed` instead of
   * failing the document: an asynchronous job's pages fail alone.
   */
  pageFailures?: boolean;
  /**
   * The bytes already passed the pre-check (inflate bombs, image frames) when the job was accepted: a job's chunks
   * skip it (it reads the whole file, seconds for a 200 MB scan, once per chunk otherwise).
   */
  prechecked?: boolean;
}

export interface ReadImageJob {
  kind: "read-image";
  bytes: Uint8Array;
  type: ImageType;
  language: LanguageChoice;
  available: string[];
  limits: ReadLimits;
  /** Measure the page's processor time per stage and send it back with the page (the bench's `--profile`). */
  profile?: boolean;
}

export interface ReadPdfPageJob {
  kind: "read-pdf-page";
  doc: DocumentRef;
  number: number;
  language: LanguageChoice;
  available: string[];
  limits: ReadLimits;
  /** The page's sparse text layer, kept when OCR finds little more. */
  textLayer?: ExtractedPage;
  /** As for ReadImageJob. */
  profile?: boolean;
}

/** A page of a TIFF (lib/ocr/engine/tiff.ts): the document is kept open between its pages, as a PDF is. */
export interface ReadTiffPageJob {
  kind: "read-tiff-page";
  doc: DocumentRef;
  number: number;
  language: LanguageChoice;
  available: string[];
  limits: ReadLimits;
  /** As for ReadImageJob. */
  profile?: boolean;
}

/**
 * A page drawn for display (the MCP viewer, lib/mcp/viewer): the page as sent, scaled to at most `maxWidth` pixels
 * wide and encoded as JPEG within `maxBytes`. No recognition: a job's stored page already holds the words.
 */
export interface RenderPreviewJob {
  kind: "render-preview";
  doc: DocumentRef;
  type: FileType;
  /** 1-based page (an image's only page is 1). */
  number: number;
  maxWidth: number;
  maxBytes: number;
  limits: ReadLimits;
}

/** A page drawn for display: JPEG bytes and their size in pixels. */
export interface PreviewResult {
  mimeType: "image/jpeg";
  bytes: Uint8Array;
  width: number;
  height: number;
}

export type EngineJob = InspectPdfJob | ReadImageJob | ReadPdfPageJob | ReadTiffPageJob | RenderPreviewJob;
export type JobKind = EngineJob["kind"];

export interface InspectPdfResult {
  pageCount: number;
  /** 1-based pages the request reads (what it is charged for). */
  selected: number[];
  /** Pages read from their own text layer, and blank pages: finished. */
  done: ExtractedPage[];
  /** Pages that need OCR, with their sparse text layer when they have one. */
  ocr: Array<{ number: number; textLayer?: ExtractedPage }>;
  /** With `pageFailures`: pages that could not be read, with their engine error. */
  failed?: Array<{ number: number; error: OcrErrorData }>;
  /** With `maxWork.past: "report"`: the bound was passed, and the pages were not all looked at. */
  overWork?: boolean;
}

export interface PageResult {
  page: ExtractedPage;
  /** The languages the page was read in (`auto` decides on the first scanned page). */
  language: LanguageChoice;
  /** CPU milliseconds per stage, when the job asked for it. */
  profile?: StageProfile;
}

export interface JobResults {
  "inspect-pdf": InspectPdfResult;
  "read-image": PageResult;
  "read-pdf-page": PageResult;
  "read-tiff-page": PageResult;
  "render-preview": PreviewResult;
}

/**
 * Configuration of an engine process, in its `OCR_ENGINE_CONFIG` environment variable (JSON) at start: it reads no
 * other configuration, and gets no other variable of the server's environment (no store credentials).
 */
export const engineProcessConfigSchema = z.object({
  /** Start Tesseract at once (OCR processes) rather than on the first recognition job. */
  warmLanguages: z.array(z.string()).optional(),
  maxJobsPerWorker: z.number().int().min(1),
  /** Recognizers OCR processes may use: Tesseract always; `paddle` adds the second reading of weak pages. */
  engines: z.array(ocrEngineSchema).default(["tesseract"]),
  /** Pages Tesseract read with a mean confidence under this are read by the second recognizer too (tests raise it). */
  secondReadingBelow: z.number().min(0).max(101).optional(),
  /** PaddleOCR's first reading stands alone at this confidence or more (the bench sweeps it; 101: never). */
  paddleFirstSure: z.number().min(0).max(101).optional(),
  /** Keep the Tesseract thread while PaddleOCR reads a page (less CPU: no restart; more memory at PaddleOCR's peak). */
  keepTesseract: z.boolean().optional(),
  /** Which Tesseract reads (`OCR_TESSERACT`): the system's libtesseract where it loads (`auto`), only it, or tesseract.js. */
  tesseract: z.enum(["auto", "native", "wasm"]).default("auto"),
  /** The libtesseract to load (`OCR_TESSERACT_LIBRARY`; default lib/ocr/engine/tesseract-native.ts's). */
  tesseractLibrary: z.string().optional(),
  /** PaddleOCR's recognizer directory (`OCR_MODEL_DIR`, lib/ocr/model/recognizer-model.ts); unset: the npm fallback. */
  modelDir: z.string().optional(),
  createTimeoutMs: z.number().int().min(1),
});
export type EngineProcessConfig = z.infer<typeof engineProcessConfigSchema>;

export const ENGINE_CONFIG_VARIABLE = "OCR_ENGINE_CONFIG";

/**
 * How much later than the server an engine process gives up on a job by itself (the server kills it first): a job's
 * `deadline` is the request's plus this.
 */
export const ENGINE_DEADLINE_SLACK_MS = 2_000;

/** `grant`: the process may start its memory-heavy step now (the answer to `heavy` with `acquire: true`). */
export type ToEngine =
  { type: "job"; id: number; deadline: number; job: EngineJob } | { type: "drop"; docId: string } | { type: "grant" };

/** A failed job's `OcrError`: its engine code and what the server needs to word it (its cause stays in the process). */
const jobErrorSchema = z.object({
  code: z.enum(ocrErrorCodes),
  message: z.string(),
  retryAfterSeconds: z.number().optional(),
  limit: z.number().optional(),
}) satisfies z.ZodType<OcrErrorData>;

/**
 * The Tesseract an OCR process reads with: `native` (libtesseract in the process, its `version`) or `wasm`
 * (tesseract.js); `note` says why the library was not used where `auto` fell back to tesseract.js.
 */
export const tesseractInUseSchema = z.object({
  kind: z.enum(["native", "wasm"]),
  version: z.string().max(64).optional(),
  note: z.string().max(500).optional(),
});
export type TesseractInUse = z.infer<typeof tesseractInUseSchema>;

export const fromEngineSchema = z.union([
  /** Ready for jobs; an OCR process says which Tesseract it loaded. */
  z.object({ type: z.literal("ready"), tesseract: tesseractInUseSchema.optional() }),
  /** Ask for (`acquire`) or give back the pool's one memory-heavy slot (the second recognizer's pass). */
  z.object({ type: z.literal("heavy"), acquire: z.boolean() }),
  z.object({ type: z.literal("result"), id: z.number().int(), ok: z.literal(true), value: z.unknown() }),
  z.object({ type: z.literal("result"), id: z.number().int(), ok: z.literal(false), error: jobErrorSchema }),
]);
export type FromEngine = z.infer<typeof fromEngineSchema>;

export const toEngineEnvelopeSchema = z.object({ type: z.enum(["job", "drop", "grant"]) }).loose();
