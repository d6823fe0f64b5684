/*
 * lib/ocr's server-side entry: reading documents through the engine processes. Only lib/process (a request),
 * lib/jobs (a job's pages), lib/health (the self-test) and the server's start import it (eslint.config.mjs); what
 * describes pages, formats, languages and errors is the light entry, `@/lib/ocr/model`.
 */
export { ocrSettings, type OcrSettings } from "./model/settings";
export {
  documentConfidence,
  extractDocument,
  getOcrPool,
  openDocument,
  type OpenEnv,
  type OpenedDocument,
} from "./read";
export {
  describeDocument,
  inspectJobPages,
  readJobPage,
  renderJobPagePreview,
  type DescribedDocument,
  type JobDocument,
  type PagePreview,
} from "./job-pages";
export { pagedFormats, render } from "./render";
export { renderSearchablePdf } from "./render/pdf-off-thread";
export { availableLanguages, fromLanguageSpec, languageSpec } from "./model/languages";
export { detectFileType } from "./model/detect";
export { recognizerInUse } from "./model/recognizer-model";
export type { OcrPool } from "./pool/pool";
