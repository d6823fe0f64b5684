import {
  CLEAR_LINES,
  estimateLineDirection,
  estimateTilt,
  judgeUprightness,
  MIN_DESKEW,
  refineTilt,
  round2,
  type RefineOptions,
  type Uprightness,
} from "./orientation";
import { pageTurn, toTurned, type PageTurn, type Quarter } from "../model/page-turn";
import { drawGrey, releaseSource, type RasterSource, type Rect } from "./raster";
import { prepareRaster, type PreparedRaster } from "./recognize";
import { medianGrey, modeHeight } from "./text-size";
import { drawGreyTurned, drawTurned, imageOf, turnGlyphs, turnRaster } from "./turned-raster";

/** A page made ready to read: turned upright and straightened when it needed it. */
export interface StraightenedRaster {
  prepared: PreparedRaster;
  turn: PageTurn;
  /** How sure the glyphs were of which way up the page stands (`unsure`: a confidence probe may still turn it). */
  verdict: Uprightness | "too-few-glyphs";
  /**
   * The glyphs make lines of text, clearly running one way (not a page of noise or pictures, where reading it upside
   * down too would only double the cost of a poor reading).
   */
  lines: boolean;
  /** The turned image a quarter-turned page is read from, when there is one: the caller releases it after the page. */
  turned?: RasterSource;
}

/** The tilt of a page of many glyphs, refined from their pixels: ±1° around the glyph estimate, in 0.05° steps. */
const MANY_GLYPHS: RefineOptions = { range: 1, step: 0.05, maxPixels: 400_000 };

/**
 * Turn and straighten a page before it is read. `first` is the page prepared as it came (its glyph analysis is what
 * the decision reads); it is returned untouched when the page is upright and straight enough, which is the common
 * case and costs only the estimate.
 */
export async function straightenRaster(
  source: RasterSource,
  width: number,
  height: number,
  first: PreparedRaster,
): Promise<StraightenedRaster> {
  const asSent = pageTurn(0, 0, width, height);
  const { glyphs, textHeight } = first.analysis;
  const direction = estimateLineDirection(glyphs, textHeight);
  if (!direction) return { prepared: first, turn: asSent, verdict: "too-few-glyphs", lines: false };
  if (!direction.manyGlyphs) {
    // A few words: their glyph boxes place the lines' tilt to a degree or two, their pixels to a tenth or two.
    const { crop, scale, analysisScale } = first;
    const toRaster = (x: number, y: number): [number, number] => [
      (x / analysisScale - crop.x) * scale,
      (y / analysisScale - crop.y) * scale,
    ];
    direction.tilt = round2(
      refineTilt(first.raster, glyphs, toRaster, direction.quarter + direction.tilt, first.analysis.ink) -
        direction.quarter,
    );
  }
  const lines = direction.margin >= CLEAR_LINES;
  const aw = Math.round(width * first.analysisScale);
  const ah = Math.round(height * first.analysisScale);
  // Glyph boxes turned by a quarter are exact: which way up is judged on the boxes already found.
  const quarterGlyphs = turnGlyphs(glyphs, direction.quarter, aw, ah);
  const { verdict: judged } = judgeUprightness(quarterGlyphs, modeHeight(quarterGlyphs, Math.max(aw, ah)));
  const rotationOf = (verdict: Uprightness) =>
    ((direction.quarter + (verdict === "upside-down" ? 180 : 0)) % 360) as Quarter;
  const rotation = rotationOf(judged);
  // The tilt again on the glyphs turned as the page will be (upright, when the glyphs told which way up), on a page of
  // many glyphs: a page sent turned by a quarter then gets the upright page's own estimate (the same boxes in the same
  // place), and so its very raster. (A few words' tilt came from their pixels, to a tenth of a degree.)
  let tilt = direction.tilt;
  if (direction.manyGlyphs) {
    const turnedGlyphs = rotation === direction.quarter ? quarterGlyphs : turnGlyphs(glyphs, rotation, aw, ah);
    tilt = estimateTilt(turnedGlyphs, modeHeight(turnedGlyphs, Math.max(aw, ah)) ?? textHeight!, 0);
    // A page that will be straightened (or nearly): its glyph boxes put receipts' tilt up to 0.7° off, half a line's
    // height across a receipt; the ink pixels, to a tenth (pages read as they are never pay for it). Measured on the
    // page turned as it will be, its glyphs in one order, so a page sent turned by a quarter gets the upright page's.
    if (Math.abs(tilt) >= MIN_DESKEW / 2) {
      const upright = turnRaster(first.analysisRaster, rotation);
      const ordered = [...turnedGlyphs].sort((a, b) => a.y0 - b.y0 || a.x0 - b.x0 || a.y1 - b.y1 || a.x1 - b.x1);
      tilt = refineTilt(upright, ordered, (x, y) => [x, y], tilt, first.analysis.ink, MANY_GLYPHS);
    }
  }

  if (Math.abs(tilt) < MIN_DESKEW) {
    if (rotation === 0) return { prepared: first, turn: asSent, verdict: judged, lines };
    return { ...(await turnTo(source, pageTurn(rotation, 0, width, height))), verdict: judged, lines };
  }
  if (judged !== "unsure") {
    return {
      ...(await turnTo(source, fitToText(pageTurn(rotation, -tilt, width, height), first))),
      verdict: judged,
      lines,
    };
  }

  // Which way up is left to the straightened page's glyphs (a tilt can blur the pairs' alignment).
  const turn = fitToText(pageTurn(direction.quarter, -tilt, width, height), first);
  let turned = await turnTo(source, turn);
  const { verdict } = judgeUprightness(turned.prepared.analysis.glyphs, turned.prepared.analysis.textHeight);
  if (verdict === "upside-down") {
    if (turned.turned) releaseSource(turned.turned);
    turned = await turnTo(source, { ...turn, rotation: ((direction.quarter + 180) % 360) as Quarter });
  }
  return { ...turned, verdict, lines };
}

/**
 * A skewed page's turned raster, narrowed about its centre to the text it holds plus a margin of 8 text heights, at
 * least 5% of the page (with 4 and 2%, a table page sent at −3° lost its layout: CER 0.363 against 0.099). Turned whole, a
 * page grows by the white wedges of its rotation (a receipt 748×1574 sent at 7° and straightened: 1137×1759), and a
 * scanned page's dark edges stand across them: rules and borders Tesseract's layout analysis then takes into account.
 */
function fitToText(turn: PageTurn, first: PreparedRaster): PageTurn {
  const { glyphs, textHeight } = first.analysis;
  const scale = first.analysisScale;
  const cx = turn.turnedWidth / 2;
  const cy = turn.turnedHeight / 2;
  let halfWidth = 0;
  let halfHeight = 0;
  // Glyphs the text-size analysis keeps whichever way the page is sent (its size limits are per side of the raster:
  // a page sent sideways keeps other outsized ones), so that a page sent turned is fitted as the upright one.
  const side = (Math.min(first.sourceWidth, first.sourceHeight) * scale) / 8;
  for (const g of glyphs) {
    const w = g.x1 - g.x0 + 1;
    const h = g.y1 - g.y0 + 1;
    if (w > side || h > side || w > 4 * h || h > 4 * w) continue;
    for (const [x, y] of [
      [g.x0, g.y0],
      [g.x1 + 1, g.y0],
      [g.x0, g.y1 + 1],
      [g.x1 + 1, g.y1 + 1],
    ] as const) {
      const [tx, ty] = toTurned(turn, x / scale, y / scale);
      halfWidth = Math.max(halfWidth, Math.abs(tx - cx));
      halfHeight = Math.max(halfHeight, Math.abs(ty - cy));
    }
  }
  // The text height of the glyphs as they stand once turned (a page sent sideways measures its glyphs' widths).
  const aw = Math.round(turn.width * scale);
  const ah = Math.round(turn.height * scale);
  const standing = modeHeight(turnGlyphs(glyphs, turn.rotation, aw, ah), Math.max(aw, ah)) ?? textHeight ?? 20;
  const pad = Math.max((8 * standing) / scale, 0.05 * Math.max(turn.turnedWidth, turn.turnedHeight));
  const turnedWidth = Math.min(turn.turnedWidth, Math.ceil(2 * (halfWidth + pad)));
  const turnedHeight = Math.min(turn.turnedHeight, Math.ceil(2 * (halfHeight + pad)));
  // Same parity as the whole: the centre stays on the same pixel grid.
  return {
    ...turn,
    turnedWidth: turnedWidth + ((turn.turnedWidth - turnedWidth) % 2),
    turnedHeight: turnedHeight + ((turn.turnedHeight - turnedHeight) % 2),
  };
}

/**
 * The page turned by `turn`, prepared for reading.
 *
 * - A quarter turn moves the pixels (no resampling) into an image, read as an upright page's decoded image is: the
 *   raster Tesseract reads is the upright page's, pixel for pixel. The image is returned for the caller to release.
 * - A skew is drawn turned and scaled in one resampling, for the analysis and for the raster (and for a rescue pass),
 *   from `source` itself or from the quarter-turned image (so that a tilted page sent sideways is drawn as the same
 *   page sent upright is).
 */
export async function turnTo(
  source: RasterSource,
  turn: PageTurn,
): Promise<{ prepared: PreparedRaster; turn: PageTurn; turned?: RasterSource }> {
  if (turn.rotation === 0 && turn.skew === 0) return { prepared: prepareRaster(source, turn.width, turn.height), turn };
  let turned: RasterSource | undefined;
  let skewed = turn;
  if (turn.rotation !== 0) {
    const canvas = drawTurned(source, pageTurn(turn.rotation, 0, turn.width, turn.height));
    turned = await imageOf(canvas);
    releaseSource(canvas);
    if (turn.skew === 0) return { prepared: prepareRaster(turned, turned.width, turned.height), turn, turned };
    // Then the skew, from the quarter-turned image as from an upright page (the same turned size: a quarter turn then
    // the skew is the page's turn by rotation + skew about its centre).
    skewed = { ...turn, rotation: 0, width: turned.width, height: turned.height };
  }
  const from = turned ?? source;
  const paper = paperGrey(from);
  const draw = (w: number, h: number, crop?: Rect) => drawGreyTurned(from, skewed, w, h, crop, paper);
  return { prepared: prepareRaster(from, turn.turnedWidth, turn.turnedHeight, draw), turn, ...(turned && { turned }) };
}

/**
 * The page's paper tone: the median grey of all its pixels (most of a page is paper), what the corners a skew
 * uncovers are filled with. White corners around a photographed page (grey paper, ~150) made the text-size
 * analysis's one threshold split corners from page instead of ink from paper: no glyphs, and the page read as blank.
 * All pixels, so the same page turned by a quarter gets the same tone (the same pixels, moved).
 */
export function paperGrey(source: RasterSource): number {
  return medianGrey(drawGrey(source, source.width, source.height).data);
}
