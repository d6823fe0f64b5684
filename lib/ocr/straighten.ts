import { drawGreyTurned, drawTurned, estimateLineDirection, imageOf, judgeUprightness, MIN_DESKEW, refineTilt, turnGlyphs, type Uprightness } from "./orientation";
import { pageTurn, toTurned, type PageTurn, type Quarter } from "./page-turn";
import { releaseSource, type RasterSource, type Rect } from "./raster";
import { prepareRaster, type PreparedRaster } from "./recognize";
import { modeHeight } from "./text-size";

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

/** Glyphs pile up in lines (or their nearest neighbours line up) this much more one way than the other: lines. */
const CLEAR_LINES = 1.25;

/**
 * Turn and straighten a page before it is read. `first` is the page prepared as it came (its glyph analysis is what
 * the decision reads); it is returned untouched when the page is upright and straight enough, which is the common
 * case and costs only the estimate.
 */
export async function straightenRaster(source: RasterSource, width: number, height: number, first: PreparedRaster): Promise<StraightenedRaster> {
  const asSent = pageTurn(0, 0, width, height);
  const { glyphs, textHeight } = first.analysis;
  const direction = estimateLineDirection(glyphs, textHeight);
  if (!direction) return { prepared: first, turn: asSent, verdict: "too-few-glyphs", lines: false };
  if (!direction.manyGlyphs) {
    // A few words: their glyph boxes place the lines' tilt to a degree or two, their pixels to a tenth or two.
    const { crop, scale, analysisScale } = first;
    const toRaster = (x: number, y: number): [number, number] => [(x / analysisScale - crop.x) * scale, (y / analysisScale - crop.y) * scale];
    direction.tilt = refineTilt(first.raster, glyphs, toRaster, direction.quarter + direction.tilt) - direction.quarter;
  }
  const lines = direction.margin >= CLEAR_LINES;
  const skew = Math.abs(direction.tilt) >= MIN_DESKEW ? -direction.tilt : 0;

  if (skew === 0) {
    // A quarter turn keeps glyph boxes exact: judge which way up on the boxes already found, draw once.
    const aw = Math.round(width * first.analysisScale);
    const ah = Math.round(height * first.analysisScale);
    const turnedGlyphs = turnGlyphs(glyphs, direction.quarter, aw, ah);
    const { verdict } = judgeUprightness(turnedGlyphs, modeHeight(turnedGlyphs, Math.max(aw, ah)));
    const rotation = ((direction.quarter + (verdict === "upside-down" ? 180 : 0)) % 360) as Quarter;
    if (rotation === 0) return { prepared: first, turn: asSent, verdict, lines };
    return { ...(await turnTo(source, pageTurn(rotation, 0, width, height))), verdict, lines };
  }

  const turn = fitToText(pageTurn(direction.quarter, skew, width, height), first);
  let turned = await turnTo(source, turn);
  const { verdict } = judgeUprightness(turned.prepared.analysis.glyphs, turned.prepared.analysis.textHeight);
  if (verdict === "upside-down") turned = await turnTo(source, { ...turn, rotation: ((direction.quarter + 180) % 360) as Quarter });
  return { ...turned, verdict, lines };
}

/**
 * A skewed page's turned raster, narrowed about its centre to the text it holds plus a margin (the margin
 * `prepareRaster` keeps around a cropped page's content: 4 text heights, at least 2% of the page). Turned whole, a
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
  for (const g of glyphs) {
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
  const pad = Math.max((4 * (textHeight ?? 20)) / scale, 0.02 * Math.max(turn.turnedWidth, turn.turnedHeight));
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
 * - A skew is drawn turned and scaled in one resampling from `source` itself, for the analysis and for the raster
 *   (and for a rescue pass): no turned copy of the page is made.
 */
export async function turnTo(source: RasterSource, turn: PageTurn): Promise<{ prepared: PreparedRaster; turn: PageTurn; turned?: RasterSource }> {
  if (turn.skew === 0) {
    const canvas = drawTurned(source, turn);
    const turned = await imageOf(canvas);
    releaseSource(canvas);
    return { prepared: prepareRaster(turned, turned.width, turned.height), turn, turned };
  }
  const draw = (w: number, h: number, crop?: Rect) => drawGreyTurned(source, turn, w, h, crop);
  return { prepared: prepareRaster(source, turn.turnedWidth, turn.turnedHeight, draw), turn };
}
