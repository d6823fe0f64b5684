import { OcrError } from "./ocr-error";

/** Syntax of a page selection: comma-separated page numbers and ranges, 1-based; `7-` runs to the last page. */
const PAGE_SELECTION_PATTERN = /^\s*\d+\s*(-\s*\d*\s*)?(,\s*\d+\s*(-\s*\d*\s*)?)*$/;

/**
 * Parse `"1-3,5"` against a document of `pageCount` pages: sorted, unique, 1-based page numbers.
 * Pages that do not exist are a `bad_page_list`, so a typo never silently reads nothing; a selection of more than
 * `maxPages` pages is `too_many_pages` (checked before any page list of that size is built). The messages name no
 * request field: the caller says where the selection came from.
 */
export function parsePageSelection(spec: string | undefined, pageCount: number, maxPages = Infinity): number[] {
  const tooMany = () =>
    new OcrError("too_many_pages", `The document has ${pageCount} pages and at most ${maxPages} are read per request`, {
      limit: maxPages,
    });
  if (spec === undefined || spec.trim() === "") {
    if (pageCount > maxPages) throw tooMany();
    return Array.from({ length: pageCount }, (_, i) => i + 1);
  }
  if (!PAGE_SELECTION_PATTERN.test(spec)) {
    throw new OcrError("bad_page_list", `"${spec.slice(0, 40)}" is not a page list like "1-3,5"`);
  }
  const pages = new Set<number>();
  for (const part of spec.split(",")) {
    const [startText, endText] = part.split("-").map((s) => s.trim());
    const start = Number(startText);
    const end = endText === undefined ? start : endText === "" ? pageCount : Number(endText);
    if (start < 1 || end < start) {
      throw new OcrError("bad_page_list", `"${part.trim()}" is not a valid range`);
    }
    if (end > pageCount) {
      throw new OcrError(
        "bad_page_list",
        `page ${end} does not exist; the document has ${pageCount} page${pageCount === 1 ? "" : "s"}`,
      );
    }
    for (let page = start; page <= end; page++) {
      pages.add(page);
      if (pages.size > maxPages) {
        throw new OcrError("too_many_pages", `The selection has more than ${maxPages} pages, the limit per request`, {
          limit: maxPages,
        });
      }
    }
  }
  return [...pages].sort((a, b) => a - b);
}

/** Page numbers as a compact selection: `[1,2,3,5]` → `"1-3,5"` (what `parsePageSelection` reads back). */
export function formatPageRanges(pages: readonly number[]): string {
  const parts: string[] = [];
  for (let i = 0; i < pages.length;) {
    let j = i;
    while (j + 1 < pages.length && pages[j + 1] === pages[j]! + 1) j++;
    parts.push(i === j ? String(pages[i]) : `${pages[i]}-${pages[j]}`);
    i = j + 1;
  }
  return parts.join(",");
}
