/*
 * lib/ocr's server-side entry: reading documents through the engine processes (documents.ts, the engine client). Only lib/intake (a read now),
 * lib/jobs (a job's pages), lib/health (the self-test) and the server's start import it (eslint.config.mjs); what
 * describes pages, formats, languages and errors is the light entry, `@/lib/ocr/model`.
 */
export { ocrSettings, type OcrSettings } from "./model/settings";
export { processOcrPool } from "./pool/process-wide";
export {
  describeDocument,
  documentConfidence,
  extractDocument,
  inspectPages,
  openDocument,
  readPage,
  renderPagePreview,
  type DescribedDocument,
  type EngineDocument,
  type OpenEnv,
  type OpenedDocument,
  type PagePreview,
} from "./documents";
export { pagedFormats, render } from "./render";
export { renderSearchablePdf } from "./render/pdf-off-thread";
export { availableLanguages, fromLanguageSpec, languageSpec } from "./model/languages";
export { detectFileType } from "./model/detect";
export { recognizerInUse } from "./model/recognizer-model";
export type { OcrPool } from "./pool/pool";
