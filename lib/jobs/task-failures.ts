/**
 * How the job runner (runner.ts) classes a failed task: engine failures bound to one page (a document's other pages
 * still read), failures worth another attempt (a process that died, a store that did not answer) against those that
 * end the page or the job, and the catalogued code and message a failure is recorded with.
 */
import { isApiError } from "@/lib/api/errors";
import { isOcrError } from "@/lib/ocr/model";
import { fromEngineError } from "./engine-errors";
import { SourceGoneError } from "./sources";

/** Engine failures that belong to one page of a document (its work, its memory, its time), not to the document. */
export const PAGE_BOUND_CODES: ReadonlySet<string> = new Set([
  "too_complex",
  "out_of_memory",
  "deadline",
  "image_too_large",
]);

/** Engine failures worth another attempt on a page: the process died or could not start, or the engine stopped. */
const TRANSIENT_ENGINE_CODES = new Set(["engine_crashed", "engine_failed", "shutting_down", "overloaded"]);

/** Whether a failed task is worth another attempt. */
export function isTransient(error: unknown): boolean {
  if (isOcrError(error)) return TRANSIENT_ENGINE_CODES.has(error.code);
  if (isApiError(error)) return error.code === "unavailable";
  if (error instanceof SourceGoneError) return false;
  return true;
}

/** A failure as the API names it (catalogued code and message). */
export function describe(error: unknown): { code: string; message: string } {
  if (error instanceof SourceGoneError)
    return { code: "internal_error", message: "The job's file is no longer stored" };
  const translated = fromEngineError(error);
  if (isApiError(translated)) {
    return {
      code: translated.code,
      message: translated.code === "internal_error" ? "The page could not be read" : translated.message,
    };
  }
  return { code: "internal_error", message: "The page could not be read" };
}

export function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}
