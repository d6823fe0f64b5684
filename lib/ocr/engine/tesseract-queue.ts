import { deadlineError, OcrError } from "../model/ocr-error";

/**
 * Why a Tesseract reader (native or tesseract.js) refuses a job at once, or null: it is shutting down, the job's
 * deadline has passed, or `queueLimit` jobs wait already.
 */
export function refuseJob(closed: boolean, deadline: number, waiting: number, queueLimit: number): OcrError | null {
  if (closed) return new OcrError("shutting_down", "The OCR engine is shutting down");
  if (deadline - Date.now() <= 0) return deadlineError();
  if (waiting >= queueLimit)
    return new OcrError("overloaded", "The OCR queue is full; retry shortly", { retryAfterSeconds: 5 });
  return null;
}
