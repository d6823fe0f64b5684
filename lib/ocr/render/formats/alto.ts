import type { ExtractedPage } from "../../model/document";
import { escapeXml, pixelBox, textAngle, wordsOf, wordText } from "./common";

/*
 * ALTO 4 (https://www.loc.gov/standards/alto/), valid against the published alto-4-4.xsd (tests/fixtures/alto): one
 * `Page` per page (WIDTH × HEIGHT in pixels, MeasurementUnit `pixel`, PHYSICAL_IMG_NR its number in the file), one
 * `PrintSpace` covering it, a `TextBlock` per block of the page model, `TextLine`s, and `String`s with
 * HPOS/VPOS/WIDTH/HEIGHT in pixels of the page as the caller sent it and WC the word confidence as 0–1, an `SP`
 * between words. IDs carry the page number, so they stay unique in a document of many pages.
 */

function position(left: number, top: number, right: number, bottom: number): string {
  return `HPOS="${left}" VPOS="${top}" WIDTH="${right - left}" HEIGHT="${bottom - top}"`;
}

/** A confidence 0–100 as ALTO's WC, 0–1. */
function wc(confidence: number): string {
  return String(Math.round(Math.max(0, Math.min(100, confidence))) / 100);
}

/** One page: its `Page` element (the document's `Layout` holds them in order). */
export function renderAltoPage(page: ExtractedPage): string {
  const n = page.number;
  const out: string[] = [];
  // A page the engine read turned: ROTATION (ALTO 4.4, counterclockwise degrees) says how its text lies.
  const turned = textAngle(page);
  const rotation = turned === 0 ? "" : ` ROTATION="${turned}"`;
  out.push(
    `    <Page ID="page_${n}" WIDTH="${page.width}" HEIGHT="${page.height}" PHYSICAL_IMG_NR="${n}"${rotation}>\n`,
  );
  out.push(`      <PrintSpace ID="space_${n}" ${position(0, 0, page.width, page.height)}>\n`);
  let lineId = 0;
  let wordId = 0;
  page.blocks.forEach((block, b) => {
    const lines = block.lines.filter((line) => wordsOf(line.words).length > 0);
    if (lines.length === 0) return;
    out.push(`        <TextBlock ID="block_${n}_${b + 1}" ${position(...pixelBox(block.bbox, page))}>\n`);
    for (const line of lines) {
      lineId++;
      out.push(`          <TextLine ID="line_${n}_${lineId}" ${position(...pixelBox(line.bbox, page))}>\n`);
      const words = wordsOf(line.words);
      words.forEach((word, w) => {
        wordId++;
        const [left, top, right, bottom] = pixelBox(word.bbox, page);
        out.push(
          `            <String ID="word_${n}_${wordId}" CONTENT="${escapeXml(wordText(word))}" ${position(left, top, right, bottom)} WC="${wc(word.confidence)}"/>\n`,
        );
        const next = words[w + 1];
        if (next) {
          const nextLeft = pixelBox(next.bbox, page)[0];
          out.push(`            <SP WIDTH="${Math.max(0, nextLeft - right)}" HPOS="${right}" VPOS="${top}"/>\n`);
        }
      });
      out.push("          </TextLine>\n");
    }
    out.push("        </TextBlock>\n");
  });
  out.push("      </PrintSpace>\n", "    </Page>\n");
  return out.join("");
}
