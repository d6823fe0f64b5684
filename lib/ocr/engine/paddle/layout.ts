/** Words from the decoded characters of each text box, and lines in reading order. */
import { latinize, type DecodedChar } from "./decode";
import type { TextBox } from "./detect";

export interface PaddleWord {
  text: string;
  /** 0–100: mean probability of the word's characters. */
  confidence: number;
  /** `[x0, y0, x1, y1]` in raster pixels. */
  box: [number, number, number, number];
}

/** A gap between two words, `[x0, x1]` in raster pixels at the box's centre line. */
export type Gap = [number, number];

export interface PaddleLine {
  words: PaddleWord[];
}

/** One text box: its recognized characters and how frames map back onto the box, or words known already. */
export type BoxReading =
  | {
      box: TextBox;
      chars: DecodedChar[];
      /** Source pixels per recognizer frame, along the box. */
      frameWidth: number;
      /** Word gaps another reading saw in the box (PaddleReadOptions.gaps), in raster pixels. */
      gaps?: Gap[];
    }
  | {
      box: TextBox;
      /** The box's words from another reading (PaddleReadOptions.known): not recognized again. */
      words: PaddleWord[];
    };

/**
 * A word boundary wherever the space class scored above this on a frame between two characters. The Chinese
 * recognizer seldom lets the space class win (it runs English words together), but it still gives it some
 * probability at word gaps, where the blank wins: greedy decoding alone loses those spaces. Word F1 (docs/decisions.md#paddle-spaces)
 * (20 pages): 0.71 with the winning space only, 0.82 at 0.05–0.1, 0.80 at 0.2, 0.77 at 0.3; spaces from the
 * distance between character positions instead: 0.43 (a frame is 1/6 of the line height, too coarse for a space).
 */
export const SPACE_PROBABILITY = 0.1;

/**
 * No word ends before a closing mark or starts after an opening one: `CORP.`, `(S)` are one word. A recognizer's
 * frames (a sixth of the line's height) put a gap seen in the ink one character off, and the space class scores
 * a little before a full stop. The French space before `:`, `;`, `!`, `?` and `%` stays possible.
 */
function mayPart(before: string, after: string): boolean {
  return !/^[.,)\]}]/u.test(after) && !/[(\[{]$/u.test(before);
}

/** Split one box's characters into words; each word's box spans its characters' frames, across the box height. */
function boxWords(reading: BoxReading, space: number): PaddleWord[] {
  if ("words" in reading) return reading.words;
  const { box, chars, frameWidth } = reading;
  const words: PaddleWord[] = [];
  const cos = Math.cos(box.angle);
  const sin = Math.sin(box.angle);
  let from = 0;
  const flush = (to: number) => {
    const group = chars.slice(from, to);
    from = to;
    if (group.length === 0) return;
    const text = latinize(group.map((c) => c.text).join(""));
    if (!text.trim()) return;
    const first = group[0]!;
    const last = group[group.length - 1]!;
    // Along the box: half a frame of margin on either side of the characters' frames.
    const u0 = Math.max(0, (first.first - 0.5) * frameWidth) - box.w / 2;
    const u1 = Math.min(box.w, (last.last + 1.5) * frameWidth) - box.w / 2;
    const um = (u0 + u1) / 2;
    const cx = box.cx + um * cos;
    const cy = box.cy + um * sin;
    const ex = (Math.abs(cos) * (u1 - u0) + Math.abs(sin) * box.h) / 2;
    const ey = (Math.abs(sin) * (u1 - u0) + Math.abs(cos) * box.h) / 2;
    const confidence = (group.reduce((sum, c) => sum + c.prob, 0) / group.length) * 100;
    words.push({
      text: text.replace(/\s+/gu, ""),
      confidence,
      box: [Math.max(box.x0, cx - ex), Math.max(box.y0, cy - ey), Math.min(box.x1, cx + ex), Math.min(box.y1, cy + ey)],
    });
  };
  const split = gapSplits(reading, space);
  for (let i = 1; i < chars.length; i++) {
    if ((chars[i]!.spaceBefore > space || split.has(i)) && mayPart(chars[i - 1]!.text, chars[i]!.text)) flush(i);
  }
  flush(chars.length);
  return words;
}

/**
 * Where another reading's word gaps fall between two characters this box ran together: for each gap, the character
 * boundary nearest its middle, when that boundary lies within the gap widened by a frame on each side and no
 * space was found in the gap already. Tesseract finds word gaps from the ink (its segmentation is good where its
 * character recognition is not); the recognizer's frames are too coarse to find them (docs/decisions.md#paddle-spaces).
 */
function gapSplits(reading: Extract<BoxReading, { chars: DecodedChar[] }>, space: number): Set<number> {
  const { box, chars, frameWidth, gaps } = reading;
  const splits = new Set<number>();
  if (!gaps?.length || chars.length < 2) return splits;
  const cos = Math.cos(box.angle);
  // Position along the box, from its left end, of a point on its centre line at raster x.
  const along = (x: number) => (Math.abs(cos) > 1e-6 ? (x - box.cx) / cos : 0) + box.w / 2;
  // Boundary i lies between chars[i - 1] and chars[i].
  const boundary = (i: number) => ((chars[i - 1]!.last + 1 + chars[i]!.first) / 2) * frameWidth;
  for (const [gx0, gx1] of gaps) {
    const u0 = along(gx0) - frameWidth;
    const u1 = along(gx1) + frameWidth;
    const middle = (u0 + u1) / 2;
    let nearest = -1;
    let spaced = false;
    for (let i = 1; i < chars.length; i++) {
      const u = boundary(i);
      if (u < u0 || u > u1 || !mayPart(chars[i - 1]!.text, chars[i]!.text)) continue;
      if (chars[i]!.spaceBefore > space) spaced = true;
      if (nearest < 0 || Math.abs(u - middle) < Math.abs(boundary(nearest) - middle)) nearest = i;
    }
    if (nearest > 0 && !spaced) splits.add(nearest);
  }
  return splits;
}

/** Each detected box's words, as a line of its own, boxes sorted by their vertical centre. */
export function boxLines(readings: BoxReading[], space = SPACE_PROBABILITY): PaddleLine[] {
  return readings
    .map((reading) => ({ box: reading.box, words: boxWords(reading, space) }))
    .filter((b) => b.words.length > 0)
    .sort((a, b) => a.box.cy - b.box.cy)
    .map(({ words }) => ({ words }));
}

/**
 * Lines across the page: boxes sorted by their vertical centre join the line they overlap vertically by more
 * than half the smaller height (boxes of one visual line can be detected apart: table cells, prices), then each
 * line reads left to right. Columns are not separated here: the engine orders a page's lines, whichever recognizer read
 * it, from the boxes (`boxLines`; lib/ocr/engine/reading-order.ts).
 */
export function readingOrder(readings: BoxReading[], space = SPACE_PROBABILITY): PaddleLine[] {
  const boxes = readings
    .map((reading) => ({ box: reading.box, words: boxWords(reading, space) }))
    .filter((b) => b.words.length > 0)
    .sort((a, b) => a.box.cy - b.box.cy);
  const lines: Array<{ y0: number; y1: number; items: typeof boxes }> = [];
  for (const b of boxes) {
    const { y0, y1 } = b.box;
    let target: (typeof lines)[number] | undefined;
    // Only the last few lines can still overlap a box further down the page.
    for (let i = lines.length - 1; i >= Math.max(0, lines.length - 3); i--) {
      const line = lines[i]!;
      const overlap = Math.min(line.y1, y1) - Math.max(line.y0, y0);
      if (overlap > 0.5 * Math.min(y1 - y0, line.y1 - line.y0)) {
        target = line;
        break;
      }
    }
    if (target) {
      target.items.push(b);
      target.y0 = Math.min(target.y0, y0);
      target.y1 = Math.max(target.y1, y1);
    } else lines.push({ y0, y1, items: [b] });
  }
  return lines.map((line) => ({ words: line.items.sort((a, b) => a.box.x0 - b.box.x0).flatMap((b) => b.words) }));
}
