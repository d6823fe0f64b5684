import type { BBox, ExtractedPage, OcrWord } from "../../model/document";

/*
 * What the word-level formats (hOCR, ALTO, TSV, the searchable PDF's text layer) share: the page model walked in
 * reading order, with boxes in whole pixels of the page as the caller sent it (the model's 0–1 boxes times the page's
 * `width` × `height`), and text made safe for XML.
 */

/** `[left, top, right, bottom]` in whole pixels of the page. */
export type PixelBox = [number, number, number, number];

export function pixelBox([x0, y0, x1, y1]: BBox, page: Pick<ExtractedPage, "width" | "height">): PixelBox {
  const left = Math.round(x0 * page.width);
  const top = Math.round(y0 * page.height);
  // At least one pixel wide and high: a box of no size is no place for a word to be selected or drawn.
  const right = Math.max(left + 1, Math.round(x1 * page.width));
  const bottom = Math.max(top + 1, Math.round(y1 * page.height));
  return [left, top, right, bottom];
}

/** A word as the formats write it: its text on one line (a word never holds a tab or a line break). */
export function wordText(word: Pick<OcrWord, "text">): string {
  return word.text.replace(/[\t\r\n\f\v]+/g, " ").trim();
}

/** Words of a line that have text (the formats skip empty ones, so all of them list the same words). */
export function wordsOf<W extends Pick<OcrWord, "text">>(words: readonly W[]): W[] {
  return words.filter((word) => wordText(word) !== "");
}

/** Characters XML 1.0 cannot carry at all (controls other than tab and line breaks, lone surrogates, U+FFFE/F). */
const XML_INVALID =
  /[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** Text for XML or HTML content and attribute values (either quote style). */
export function escapeXml(text: string): string {
  return text
    .replace(XML_INVALID, "")
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;")
    .replace(/'/g, "&#39;");
}

/** A confidence 0–100 as a whole number (hOCR's `x_wconf`). */
export function wholeConfidence(confidence: number): number {
  return Math.max(0, Math.min(100, Math.round(confidence)));
}

/**
 * The page's `rotation` (0, 90, 180, 270): how far the engine turned the page as sent, clockwise, to read it upright,
 * when the page model carries it (issue 23's orientation work); 0 otherwise.
 */
export function pageRotation(page: ExtractedPage): number {
  const rotation = (page as ExtractedPage & { rotation?: unknown }).rotation;
  return rotation === 90 || rotation === 180 || rotation === 270 ? rotation : 0;
}

/**
 * How far the text lies turned counterclockwise on the page as sent, in degrees (hOCR's `textangle`, ALTO's
 * `ROTATION`): the page's `rotation` plus its `skew` (the engine turned it clockwise by both to read it), 0–360.
 */
export function textAngle(page: ExtractedPage): number {
  const skew = (page as ExtractedPage & { skew?: unknown }).skew;
  const angle = pageRotation(page) + (typeof skew === "number" && Number.isFinite(skew) ? skew : 0);
  return Math.round((((angle % 360) + 360) % 360) * 100) / 100;
}
