import { z } from "zod";
import type { OcrPage } from "@/lib/ocr/model";

/*
 * What needs a second look (issue 42): the runs of words the reading marked `review` (low confidence, or the two
 * recognizers disagree), counted and the first of them placed on their page — told to the model by `show_extraction`
 * (./viewer/tools.ts) and by `extract_text` when the pages it read have any.
 */

/** Review spans listed to the model (the count is of all). */
const LISTED_SPANS = 12;
/** Pages whose words the review summary looks at. */
export const REVIEW_PAGES = 200;

const spanSchema = z.object({
  page: z.number().int(),
  text: z.string(),
  confidence: z.number(),
  bbox: z.tuple([z.number(), z.number(), z.number(), z.number()]),
  alternative: z.string().optional(),
});
type ReviewSpan = z.infer<typeof spanSchema>;

export const reviewSchema = z.object({
  words: z.number().int().describe("words that need a second look, on the pages read so far"),
  spans: z.number().int().describe("runs of such words on one line"),
  pagesChecked: z.number().int(),
  first: z.array(spanSchema),
});
export type ReviewSummary = z.infer<typeof reviewSchema>;

/** The review summary of `pages` (at most `REVIEW_PAGES` of them are looked at by the callers). */
export function reviewSummary(pages: readonly OcrPage[]): ReviewSummary {
  const spans = pages.flatMap(reviewSpans);
  return {
    words: spans.reduce((sum, span) => sum + span.words, 0),
    spans: spans.length,
    pagesChecked: pages.length,
    first: spans.slice(0, LISTED_SPANS).map(({ words: _words, ...span }) => span),
  };
}

/** The summary in lines the model reads: how many spans, and where the first ones are. */
export function describeReview(review: ReviewSummary, shownWhere?: string): string[] {
  if (review.words === 0) return [`No word needs a second look on the ${review.pagesChecked} page(s) read so far.`];
  const lines = [
    `${review.spans} span(s) (${review.words} word(s)) on the ${review.pagesChecked} page(s) read need a second look ` +
      `(low confidence, or the two recognizers disagree)${shownWhere ? `; ${shownWhere}` : ""}. Ask the user to check:`,
  ];
  for (const span of review.first) {
    const [x0, y0] = span.bbox;
    const other = span.alternative !== undefined ? `, other reading "${span.alternative}"` : "";
    lines.push(
      `- page ${span.page}: "${span.text}" (confidence ${Math.round(span.confidence)}${other}) at ` +
        `${Math.round(y0 * 100)}% from the top, ${Math.round(x0 * 100)}% from the left`,
    );
  }
  if (review.spans > review.first.length) lines.push(`- and ${review.spans - review.first.length} more.`);
  return lines;
}

/** Runs of words marked `review` on one line of a page, with their lowest confidence. */
function reviewSpans(page: OcrPage): Array<ReviewSpan & { words: number }> {
  const spans: Array<ReviewSpan & { words: number }> = [];
  for (const block of page.blocks) {
    for (const line of block.lines) {
      let run: OcrPage["blocks"][number]["lines"][number]["words"] = [];
      const close = () => {
        if (run.length === 0) return;
        const alternatives = run.filter((word) => word.alternative !== undefined);
        spans.push({
          page: page.number,
          text: run.map((word) => word.text).join(" "),
          confidence: Math.min(...run.map((word) => word.confidence)),
          bbox: [
            Math.min(...run.map((word) => word.bbox[0])),
            Math.min(...run.map((word) => word.bbox[1])),
            Math.max(...run.map((word) => word.bbox[2])),
            Math.max(...run.map((word) => word.bbox[3])),
          ],
          ...(alternatives.length > 0 && { alternative: run.map((word) => word.alternative ?? word.text).join(" ") }),
          words: run.length,
        });
        run = [];
      };
      for (const word of line.words) {
        if (word.review) run.push(word);
        else close();
      }
      close();
    }
  }
  return spans;
}
