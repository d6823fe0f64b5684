import type { ExtractedPage } from "../../model/document";
import { pixelBox, wordsOf, wordText } from "./common";

/*
 * Tesseract's TSV (`tesseract image out tsv`): a header row, then per page one row of each level — 1 page, 2 block,
 * 3 paragraph, 4 line, 5 word — with page_num (the page's number in the file), block/par/line/word numbers (1-based
 * within their parent, 0 where the level is above them), the box as left top width height in pixels of the page as
 * the caller sent it, conf (-1 above word level, as Tesseract writes it; the word's confidence 0–100 otherwise) and
 * the text (words only). A paragraph is the block (the page model has none inside a block).
 */

function row(
  level: number,
  ids: [number, number, number, number, number],
  [left, top, right, bottom]: [number, number, number, number],
  conf: number,
  text: string,
): string {
  return [level, ...ids, left, top, right - left, bottom - top, conf, text].join("\t");
}

/** A page's rows, without the header, each ending with a line break. */
export function renderTsvPage(page: ExtractedPage): string {
  const n = page.number;
  const rows: string[] = [row(1, [n, 0, 0, 0, 0], [0, 0, page.width, page.height], -1, "")];
  let blockNum = 0;
  for (const block of page.blocks) {
    const lines = block.lines.filter((line) => wordsOf(line.words).length > 0);
    if (lines.length === 0) continue;
    blockNum++;
    const box = pixelBox(block.bbox, page);
    rows.push(row(2, [n, blockNum, 0, 0, 0], box, -1, ""));
    rows.push(row(3, [n, blockNum, 1, 0, 0], box, -1, ""));
    lines.forEach((line, l) => {
      rows.push(row(4, [n, blockNum, 1, l + 1, 0], pixelBox(line.bbox, page), -1, ""));
      wordsOf(line.words).forEach((word, w) => {
        const conf = Math.round(Math.max(0, Math.min(100, word.confidence)) * 100) / 100;
        rows.push(row(5, [n, blockNum, 1, l + 1, w + 1], pixelBox(word.bbox, page), conf, wordText(word)));
      });
    });
  }
  return `${rows.join("\n")}\n`;
}
