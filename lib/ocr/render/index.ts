import { ALTO_HEAD, ALTO_TAIL, HOCR_HEAD, HOCR_TAIL, TSV_HEAD, type TextFormat } from "@/lib/vocabulary";
import { toPublicDocument, type ExtractedDocument, type ExtractedPage } from "../model/document";
import { renderAltoPage } from "./formats/alto";
import { renderHocrPage } from "./formats/hocr";
import { renderTsvPage } from "./formats/tsv";
import { renderMarkdown } from "./markdown";

/**
 * A text format rendered from the page model: `text` (pages separated by a form feed), `json` (the document model),
 * `markdown` (reconstructed layout), `hocr`, `alto`, `tsv` (word boxes in pixels of the page as the caller sent it).
 * `pdf` is binary and needs the source file: `renderSearchablePdf` (render/formats/pdf.ts).
 */
export function render(document: ExtractedDocument, format: TextFormat): string {
  switch (format) {
    case "json":
      return JSON.stringify(toPublicDocument(document));
    case "markdown":
      return renderMarkdown(document);
    default: {
      const paged = pagedFormats[format];
      return paged.join(document.pages.map((page) => paged.page(page)));
    }
  }
}

/** A format whose document is its pages' pieces, in order, between a head and a tail. */
export interface PagedFormat {
  /** `extra`: fields added to a page of the JSON document (a job's pages say which process read them). */
  page(page: ExtractedPage, extra?: Record<string, string>): string;
  /** What comes before the first page and after the last, and between two pages. */
  head: string;
  separator: string;
  tail: string;
  join(pieces: string[]): string;
}

function paged(page: PagedFormat["page"], head: string, separator: string, tail: string): PagedFormat {
  return { page, head, separator, tail, join: (pieces) => head + pieces.join(separator) + tail };
}

/**
 * A document rendered page by page, as a job's result is (a response holds as many pages as fit): each page on its
 * own, and how the pieces join into what `render` gives for the same pages.
 */
export const pagedFormats: { readonly [F in TextFormat]: PagedFormat } = {
  text: paged((page) => page.text, "", "\f", ""),
  markdown: {
    ...paged((page) => renderMarkdown({ pages: [page], pageCount: 1 }), "", "\n\n---\n\n", ""),
    join: (pieces) => pieces.join("\n\n---\n\n").trim(),
  },
  json: paged(
    (page, extra) => JSON.stringify({ ...toPublicDocument({ pages: [page], pageCount: 1 }).pages[0], ...extra }),
    '{"pages":[',
    ",",
    "]}",
  ),
  hocr: paged(renderHocrPage, HOCR_HEAD, "", HOCR_TAIL),
  alto: paged(renderAltoPage, ALTO_HEAD, "", ALTO_TAIL),
  tsv: paged(renderTsvPage, TSV_HEAD, "", ""),
};
