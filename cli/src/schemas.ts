import { z } from "zod";
import type { OcrResponse } from "@/lib/api-schemas";

/*
 * The service's answers as the CLI reads them. These mirror lib/api-schemas.ts rather than import it: that module
 * pulls in the OCR engine (tesseract.js, pdf.js) for one enum, and the CLI is a client of the HTTP surface only.
 * Loose objects, so a field the service adds later does not break an installed CLI; the type check below fails the
 * build if the service's own response type stops fitting.
 */

export const OUTPUT_FORMATS = ["text", "json", "markdown"] as const;
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];

/** `POST /api/ocr/process` 200 body. */
export const ocrResultSchema = z.looseObject({
  success: z.literal(true),
  userId: z.string(),
  inputSource: z.string(),
  extractedText: z.string(),
  confidence: z.number(),
  processingTime: z.number(),
  creditsUsed: z.number(),
  pageCount: z.number().optional(),
  requestId: z.string().optional(),
});
export type OcrResult = z.infer<typeof ocrResultSchema>;

// Compile-time: every answer the service's schema allows is one this schema accepts.
type Assignable<T, U> = [T] extends [U] ? true : false;
const _serviceResponseFits: Assignable<OcrResponse, OcrResult> = true;
void _serviceResponseFits;

/** Every failure: `{ success: false, error: { code, message }, requestId }` (SPEC.md, Errors). */
export const errorBodySchema = z.looseObject({
  success: z.literal(false),
  error: z.looseObject({ code: z.string(), message: z.string() }),
  requestId: z.string().optional(),
});
export type ErrorBody = z.infer<typeof errorBodySchema>;

/** `GET /api/credits` 200 body (the balance endpoint; the header `x-credits-remaining` carries the same number). */
export const balanceSchema = z.looseObject({
  success: z.literal(true).optional(),
  balance: z.number().int(),
});

/** `x-credits-remaining`: a non-negative integer, or null when absent or malformed. */
export function parseCreditsHeader(value: string | null): number | null {
  if (value === null || !/^\s*\d+\s*$/.test(value)) return null;
  return Number(value);
}
