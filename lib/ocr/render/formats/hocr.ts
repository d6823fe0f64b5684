import type { ExtractedPage, OcrLine } from "../../model/document";
import { escapeXml, pixelBox, textAngle, wholeConfidence, wordsOf, wordText, type PixelBox } from "./common";

/*
 * hOCR 1.2 (http://kba.github.io/hocr-spec/1.2/), as Tesseract writes it: an XHTML document with one `ocr_page` per
 * page, holding `ocr_carea` (a block of the page model) → `ocr_par` (the same block: the model has no paragraphs
 * inside a block) → `ocr_line` → `ocrx_word`. Boxes are `bbox left top right bottom` in pixels of the page as the
 * caller sent it (its `width` × `height` in the model); words carry `x_wconf` (0–100). Lines carry `baseline slope
 * offset` where the model has the line's baseline (Tesseract gives one; PaddleOCR does not): y = slope·(x − left) +
 * offset from the line box's bottom-left corner, in pixels, as Tesseract writes it. On a page the engine read turned,
 * lines carry `textangle` instead and no baseline (the spec's baseline runs along the text, which there is not the
 * page's x axis).
 */

/** `; baseline slope offset` for a line whose baseline the model has, on a page read as sent; "" otherwise. */
function baselineOf(line: OcrLine, [left, , , bottom]: PixelBox, page: ExtractedPage): string {
  if (!line.baseline) return "";
  const [x0, y0, x1, y1] = line.baseline;
  const [ax, ay, bx, by] = [x0 * page.width, y0 * page.height, x1 * page.width, y1 * page.height];
  if (!(bx > ax)) return "";
  const slope = (by - ay) / (bx - ax);
  const offset = ay + slope * (left - ax) - bottom;
  return `; baseline ${Number(slope.toFixed(3))} ${Math.round(offset)}`;
}

function bbox([left, top, right, bottom]: PixelBox): string {
  return `bbox ${left} ${top} ${right} ${bottom}`;
}

/** One page: its `ocr_page` element (the document's body holds them in order). */
export function renderHocrPage(page: ExtractedPage): string {
  const n = page.number;
  const out: string[] = [];
  out.push(
    `  <div class="ocr_page" id="page_${n}" title="image &quot;page-${n}&quot;; bbox 0 0 ${page.width} ${page.height}; ppageno ${n - 1}">\n`,
  );
  // A page the engine read turned: its lines say how their text lies on the page as sent.
  const turned = textAngle(page);
  const angle = turned === 0 ? "" : `; textangle ${turned}`;
  let lineId = 0;
  let wordId = 0;
  page.blocks.forEach((block, b) => {
    const lines = block.lines.filter((line) => wordsOf(line.words).length > 0);
    if (lines.length === 0) return;
    const box = bbox(pixelBox(block.bbox, page));
    out.push(`   <div class="ocr_carea" id="block_${n}_${b + 1}" title="${box}">\n`);
    out.push(`    <p class="ocr_par" id="par_${n}_${b + 1}" title="${box}">\n`);
    for (const line of lines) {
      lineId++;
      const lineBox = pixelBox(line.bbox, page);
      const baseline = turned === 0 ? baselineOf(line, lineBox, page) : "";
      out.push(`     <span class="ocr_line" id="line_${n}_${lineId}" title="${bbox(lineBox)}${baseline}${angle}">`);
      const words = wordsOf(line.words).map((word) => {
        wordId++;
        const title = `${bbox(pixelBox(word.bbox, page))}; x_wconf ${wholeConfidence(word.confidence)}`;
        return `<span class="ocrx_word" id="word_${n}_${wordId}" title="${title}">${escapeXml(wordText(word))}</span>`;
      });
      out.push(words.join(" "), "</span>\n");
    }
    out.push("    </p>\n", "   </div>\n");
  });
  out.push("  </div>\n");
  return out.join("");
}
