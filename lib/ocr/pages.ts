import { ApiError } from "@/lib/errors";

/** Syntax of `options.pages`: comma-separated page numbers and ranges, 1-based; `7-` runs to the last page. */
export const PAGE_SELECTION_PATTERN = /^\s*\d+\s*(-\s*\d*\s*)?(,\s*\d+\s*(-\s*\d*\s*)?)*$/;

/**
 * Parse `"1-3,5"` against a document of `pageCount` pages: sorted, unique, 1-based page numbers.
 * Pages that do not exist are a `400`, so a typo never silently reads nothing; a selection of more than
 * `maxPages` pages is a `413` (checked before any page list of that size is built).
 */
export function parsePageSelection(spec: string | undefined, pageCount: number, maxPages = Infinity): number[] {
  const tooMany = () =>
    new ApiError(
      "payload_too_large",
      `The document has ${pageCount} pages and at most ${maxPages} are read per request; choose pages with options.pages (e.g. "1-${maxPages}")`,
    );
  if (spec === undefined || spec.trim() === "") {
    if (pageCount > maxPages) throw tooMany();
    return Array.from({ length: pageCount }, (_, i) => i + 1);
  }
  if (!PAGE_SELECTION_PATTERN.test(spec)) {
    throw new ApiError("invalid_request", `options.pages: "${spec.slice(0, 40)}" is not a page list like "1-3,5"`);
  }
  const pages = new Set<number>();
  for (const part of spec.split(",")) {
    const [startText, endText] = part.split("-").map((s) => s.trim());
    const start = Number(startText);
    const end = endText === undefined ? start : endText === "" ? pageCount : Number(endText);
    if (start < 1 || end < start) {
      throw new ApiError("invalid_request", `options.pages: "${part.trim()}" is not a valid range`);
    }
    if (end > pageCount) {
      throw new ApiError(
        "invalid_request",
        `options.pages: page ${end} does not exist; the document has ${pageCount} page${pageCount === 1 ? "" : "s"}`,
      );
    }
    for (let page = start; page <= end; page++) {
      pages.add(page);
      if (pages.size > maxPages) {
        throw new ApiError("payload_too_large", `options.pages selects more than ${maxPages} pages, the limit per request`);
      }
    }
  }
  return [...pages].sort((a, b) => a - b);
}
