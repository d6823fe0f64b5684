import { blockOf, lineOf, normalizeBox, type ExtractedPage, type OcrBlock } from "./document";

/** A quarter turn, clockwise, in degrees. */
export type Quarter = 0 | 90 | 180 | 270;

/**
 * The clockwise turn applied to a page, in degrees (y down): `rotation` (a quarter) then `skew`. Maps between the
 * page as sent (`width`×`height`) and the turned raster (`turnedWidth`×`turnedHeight`), each about its centre.
 */
export interface PageTurn {
  rotation: Quarter;
  skew: number;
  width: number;
  height: number;
  turnedWidth: number;
  turnedHeight: number;
}

export function pageTurn(rotation: Quarter, skew: number, width: number, height: number): PageTurn {
  const a = ((rotation + skew) * Math.PI) / 180;
  const cos = Math.abs(Math.cos(a));
  const sin = Math.abs(Math.sin(a));
  // Quarter turns are exact (no resampling): the sides swap.
  const exact = skew === 0;
  const turnedWidth = exact ? (rotation % 180 === 0 ? width : height) : Math.ceil(width * cos + height * sin - 1e-6);
  const turnedHeight = exact ? (rotation % 180 === 0 ? height : width) : Math.ceil(width * sin + height * cos - 1e-6);
  return { rotation, skew, width, height, turnedWidth, turnedHeight };
}

export function isTurned(turn: PageTurn): boolean {
  return turn.rotation !== 0 || turn.skew !== 0;
}

/** A point of the page as sent → the turned raster. */
export function toTurned(turn: PageTurn, x: number, y: number): [number, number] {
  const a = ((turn.rotation + turn.skew) * Math.PI) / 180;
  const cos = Math.cos(a);
  const sin = Math.sin(a);
  const dx = x - turn.width / 2;
  const dy = y - turn.height / 2;
  return [dx * cos - dy * sin + turn.turnedWidth / 2, dx * sin + dy * cos + turn.turnedHeight / 2];
}

/** A point of the turned raster → the page as sent. */
export function fromTurned(turn: PageTurn, x: number, y: number): [number, number] {
  const a = ((turn.rotation + turn.skew) * Math.PI) / 180;
  const cos = Math.cos(a);
  const sin = Math.sin(a);
  const dx = x - turn.turnedWidth / 2;
  const dy = y - turn.turnedHeight / 2;
  return [dx * cos + dy * sin + turn.width / 2, -dx * sin + dy * cos + turn.height / 2];
}

type PixelBox = readonly [number, number, number, number];

/** The box on the page as sent that covers a box of the turned raster (the bounding box of its four corners). */
export function boxFromTurned(turn: PageTurn, [x0, y0, x1, y1]: PixelBox): [number, number, number, number] {
  const corners = [
    fromTurned(turn, x0, y0),
    fromTurned(turn, x1, y0),
    fromTurned(turn, x0, y1),
    fromTurned(turn, x1, y1),
  ];
  const xs = corners.map((c) => c[0]);
  const ys = corners.map((c) => c[1]);
  return [Math.min(...xs), Math.min(...ys), Math.max(...xs), Math.max(...ys)];
}

/**
 * The inverse of `boxFromTurned` for the box of an upright rectangle of the turned raster (a word): its centre maps
 * exactly, and its sides follow from the covering box's (w' = w|cos| + h|sin|, h' = w|sin| + h|cos|, solvable for
 * |skew| ≤ 45°). Lets the layout rules (markdown, tables) see words as they stood when read.
 */
export function boxToTurned(turn: PageTurn, [x0, y0, x1, y1]: PixelBox): [number, number, number, number] {
  const [cx, cy] = toTurned(turn, (x0 + x1) / 2, (y0 + y1) / 2);
  let w = x1 - x0;
  let h = y1 - y0;
  if (turn.rotation % 180 !== 0) [w, h] = [h, w];
  if (turn.skew !== 0) {
    const a = (Math.abs(turn.skew) * Math.PI) / 180;
    const cos = Math.cos(a);
    const sin = Math.sin(a);
    const det = cos * cos - sin * sin;
    const rw = Math.max(0, (w * cos - h * sin) / det);
    const rh = Math.max(0, (h * cos - w * sin) / det);
    w = rw;
    h = rh;
  }
  return [cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2];
}

/** A page's boxes, normalized to the turned raster it was read from, → boxes on the page as sent (and its size). */
export function pageAsSent(page: ExtractedPage, turn: PageTurn): ExtractedPage {
  const asSent = { ...page, width: turn.width, height: turn.height, rotation: turn.rotation, skew: turn.skew };
  if (!isTurned(turn)) return asSent;
  const map = (bbox: readonly [number, number, number, number]) => {
    const [x0, y0, x1, y1] = bbox;
    const px = boxFromTurned(turn, [
      x0 * turn.turnedWidth,
      y0 * turn.turnedHeight,
      x1 * turn.turnedWidth,
      y1 * turn.turnedHeight,
    ]);
    return normalizeBox(px, turn.width, turn.height);
  };
  const point = (x: number, y: number) => {
    const [px, py] = fromTurned(turn, x * turn.turnedWidth, y * turn.turnedHeight);
    return [px / turn.width, py / turn.height] as const;
  };
  return { ...asSent, blocks: mapBlocks(page.blocks, map, point) };
}

/**
 * A page whose boxes are on the page as sent → the same page with its boxes as the words stood when it was read
 * (upright, straight): what layout rules (markdown's lines and tables) need. Pages that were not turned come back as
 * they are.
 */
export function pageAsRead(page: ExtractedPage): ExtractedPage {
  const rotation = page.rotation ?? 0;
  const skew = page.skew ?? 0;
  if (rotation === 0 && skew === 0) return page;
  const turn = pageTurn(rotation, skew, page.width, page.height);
  const map = (bbox: readonly [number, number, number, number]) => {
    const [x0, y0, x1, y1] = bbox;
    const px = boxToTurned(turn, [x0 * turn.width, y0 * turn.height, x1 * turn.width, y1 * turn.height]);
    return normalizeBox(px, turn.turnedWidth, turn.turnedHeight);
  };
  const point = (x: number, y: number) => {
    const [px, py] = toTurned(turn, x * turn.width, y * turn.height);
    return [px / turn.turnedWidth, py / turn.turnedHeight] as const;
  };
  return {
    ...page,
    width: turn.turnedWidth,
    height: turn.turnedHeight,
    rotation: 0,
    skew: 0,
    blocks: mapBlocks(page.blocks, map, point),
  };
}

function mapBlocks(
  blocks: OcrBlock[],
  map: (bbox: readonly [number, number, number, number]) => [number, number, number, number],
  point: (x: number, y: number) => readonly [number, number],
): OcrBlock[] {
  // Lines and blocks are the union of their words' boxes, as when they were built; a baseline's two ends map as points.
  const round = (v: number) => Math.round(v * 10_000) / 10_000;
  return blocks.map((block) =>
    blockOf(
      block.lines.map((line) => {
        const mapped = lineOf(line.words.map((word) => ({ ...word, bbox: map(word.bbox) })));
        if (!line.baseline) return mapped;
        const [x0, y0, x1, y1] = line.baseline;
        const [a, b] = [point(x0, y0), point(x1, y1)];
        return {
          ...mapped,
          baseline: [round(a[0]), round(a[1]), round(b[0]), round(b[1])] as [number, number, number, number],
        };
      }),
    ),
  );
}
