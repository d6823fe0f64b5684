import { blockOf, lineOf, ocrPageOf, type ExtractedPage, type LineStyle, type OcrBlock } from "../model/document";
import { fromTurned, type PageTurn } from "../model/page-turn";
import { insidePaper, type PaperRegion } from "./paper";

/**
 * What is left of a photo's surround after paper.ts painted it: the sheet's own edge. Its outline is found on a copy
 * of the photo 320 pixels long, so a sliver of the edge (the paper's rim, its shadow) stays inside it, and a sliver
 * read beside a line of text comes back as a stray "1", "i" or "|" at the line's end (a synthetic photo of a page on
 * wood: four of its lines so, word F1 0.979 → 1), or as a line of its own ("oss", confidence 0, at a sheet's corner).
 * Such words are dropped: a word whose centre lies outside the sheet (what was painted), or a fragment within
 * EDGE_BAND of one of the sheet's edges that is not the photo's own border (where a close-up cuts the sheet, text may
 * run to the border).
 */

/** The band along the sheet's edges where fragments are the edge's, as a share of the photo's long side. */
const EDGE_BAND = 0.015;
/** Fragments: words of FRAGMENT_LENGTH characters or fewer, under UNSURE confidence, or with no letter or digit. */
const FRAGMENT_LENGTH = 2;
const UNSURE = 50;

/**
 * The reading's page without the sheet's edge (see above). `page`'s boxes are on the raster read (`turn` of the photo,
 * `width`×`height`); the outline is on the photo as sent. Returns the page itself when nothing was dropped.
 */
export function dropSheetEdge(
  page: ExtractedPage,
  paper: PaperRegion,
  turn: PageTurn,
): { page: ExtractedPage; dropped: number } {
  const { width, height } = turn;
  const band = EDGE_BAND * Math.max(width, height);
  // One pixel of the outline's grid, and a little: an edge this close to the photo's border runs along it.
  const onBorder = 1.5 * (Math.max(width, height) / 320) + 1;
  const along = (v: number, size: number) => v <= onBorder || v >= size - onBorder;
  const edges = paper.outline
    .map((start, i) => [start, paper.outline[(i + 1) % paper.outline.length]!] as const)
    .filter(
      ([[x0, y0], [x1, y1]]) =>
        !(
          (along(x0, width) && along(x1, width) && Math.abs(x0 - x1) < onBorder) ||
          (along(y0, height) && along(y1, height) && Math.abs(y0 - y1) < onBorder)
        ),
    );
  let dropped = 0;
  const blocks: OcrBlock[] = [];
  const lineStyles: LineStyle[][] = [];
  page.blocks.forEach((block, b) => {
    const lines = [];
    const styles = [];
    for (const [l, line] of block.lines.entries()) {
      const words = line.words.filter((word) => {
        const [x, y] = fromTurned(
          turn,
          ((word.bbox[0] + word.bbox[2]) / 2) * page.width,
          ((word.bbox[1] + word.bbox[3]) / 2) * page.height,
        );
        const outside = !insidePaper(paper, x, y);
        const fragment =
          word.text.length <= FRAGMENT_LENGTH || word.confidence < UNSURE || !/[\p{L}\p{N}]/u.test(word.text);
        const nearEdge = fragment && edges.some(([a, c]) => Math.abs(segmentDistance(a, c, x, y)) < band);
        if (outside || nearEdge) dropped++;
        return !outside && !nearEdge;
      });
      if (words.length === 0) continue;
      lines.push(words.length === line.words.length ? line : { ...line, ...lineOf(words) });
      styles.push(page.lineStyles[b]?.[l] ?? { size: 0 });
    }
    if (lines.length === 0) return;
    blocks.push(
      lines.length === block.lines.length && lines.every((l, i) => l === block.lines[i]) ? block : blockOf(lines),
    );
    lineStyles.push(styles);
  });
  if (dropped === 0) return { page, dropped };
  const rebuilt = ocrPageOf(
    { number: page.number, width: page.width, height: page.height, engine: page.engine ?? "tesseract" },
    blocks,
    lineStyles,
  );
  return { page: { ...page, ...rebuilt }, dropped };
}

/** The distance of a point from a segment. */
function segmentDistance([x0, y0]: [number, number], [x1, y1]: [number, number], x: number, y: number): number {
  const dx = x1 - x0;
  const dy = y1 - y0;
  const t = Math.max(0, Math.min(1, ((x - x0) * dx + (y - y0) * dy) / (dx * dx + dy * dy || 1)));
  return Math.hypot(x - (x0 + t * dx), y - (y0 + t * dy));
}
