const MiB = 1024 * 1024;

/**
 * The engine's constants (docs/configuration.md#which-variables-there-are-classification): tuning and safety limits
 * that were environment variables (their old names in brackets). The operator's variables (`OCR_ENGINE_PROCESSES`,
 * `OCR_ENGINE_MEMORY_MB`, `MAX_PDF_PAGES` …) stay in lib/env.ts.
 */
export interface OcrSettings {
  /** Recognition jobs allowed to wait for an engine process before `503 overloaded` (`OCR_QUEUE_LIMIT`). */
  queueLimit: number;
  /** Engine processes that only open PDFs and read their text layers (`OCR_INSPECT_PROCESSES`). */
  inspectProcesses: number;
  /**
   * Keep a process's Tesseract thread while PaddleOCR reads a page (`OCR_KEEP_TESSERACT_FOR_PADDLE`): 4–13% less
   * engine CPU per page on corpus-dev, more peak RSS (docs/decisions.md#speed-profile). Off.
   */
  keepTesseractForPaddle: boolean;
  /** Largest image in pixels, checked from the header before decoding (`MAX_IMAGE_PIXELS`). */
  maxImagePixels: number;
  /** Most bytes one PDF stream may inflate to; a PDF with a larger one is `413` (`MAX_PDF_STREAM_BYTES`). */
  maxStreamBytes: number;
  /**
   * Most processor time (ms) opening one PDF or drawing one of its pages for OCR may take; past it `413`
   * (`MAX_PDF_WORK_MS`). Opening one gets a second more per MB of file (`pdfWorkBudgetMs`).
   */
  maxPdfWorkMs: number;
}

/** The engine's constants, with `overrides` on top (lib/settings.ts). */
export function ocrSettings(overrides: Partial<OcrSettings> = {}): OcrSettings {
  return {
    queueLimit: 64,
    inspectProcesses: 2,
    keepTesseractForPaddle: false,
    maxImagePixels: 50_000_000,
    maxStreamBytes: 128 * MiB,
    maxPdfWorkMs: 10_000,
    ...overrides,
  };
}
