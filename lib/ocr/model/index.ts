/*
 * lib/ocr's light entry: what the API's and MCP's schemas, the routes and pages need to describe a document, its
 * pages and the engine's errors. Types, zod schemas, constants and pure functions; nothing here starts or reaches an
 * engine process (no pool, no engine, no node: module: eslint.config.mjs and tests/ocr/entries.test.ts hold it).
 * Reading a document goes through the other entry, `@/lib/ocr`, which only lib/intake, lib/jobs and lib/health use.
 */
export {
  markReview,
  ocrDocumentSchema,
  REVIEW_BELOW,
  type ExtractedDocument,
  type ExtractedPage,
  type OcrDocument,
  type OcrPage,
} from "./document";
export { isOcrError, OcrError, type OcrErrorCode } from "./ocr-error";
export { formatPageRanges, parsePageSelection } from "./pages";
export { MAX_SYNC_PDF_BYTES } from "./limits";
export { ocrSettings, type OcrSettings } from "./settings";
export type { LanguageChoice } from "./languages";
export type { TesseractInUse } from "./protocol";
export { sniffFileType, type FileType } from "./detect";
