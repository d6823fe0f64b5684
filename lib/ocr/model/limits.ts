/**
 * The largest searchable PDF a synchronous answer carries: as base64 (4/3 larger) it is 4,000,000 characters of
 * `extractedText`, so the whole JSON answer stays under Vercel's 4.5 MB response limit. Larger ones come from a job
 * (`GET /api/ocr/jobs/{id}/result?format=pdf` streams the file, in one piece).
 */
export const MAX_SYNC_PDF_BYTES = 3_000_000;
