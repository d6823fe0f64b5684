/**
 * Reading order over a recognized page's line boxes, whichever recognizer read it: columns of running text are read
 * one after the other, everything else (forms, receipts, tables, single columns) row by row across the page, left to
 * right. A recursive cut in the manner of XY-cut (Nagy & Seth 1984; Ha, Haralick & Phillips 1995), with two changes the
 * documents here need:
 *
 * - A vertical cut (a gutter) is taken only between two columns of running text — lines of several words that fill
 *   their column, three or more rows of them side by side. Between the items and the prices of a receipt, the labels
 *   and values of a form or the cells of a table the same whitespace runs down the page, and there the reader (and
 *   every ground truth of corpus-dev) reads across.
 * - Lines that cross the gutter (a title over both columns, a caption under a figure, a footer) do not stop the
 *   cut: they split the columns into stretches, read in order: the stretch above, the spanning line, the stretch below
 *   (plain XY-cut would find no gutter under a title, and cutting the page into bands first interleaves the
 *   columns wherever their lines happen to line up).
 *
 * What is not a column is read as rows: lines side by side (vertical overlap, no horizontal overlap) are one row, left
 * to right, and become one line of the document. Blocks start where the recognizer's own blocks change, at a gap of
 * more than a line, and at every cut. Boxes, words and confidences are untouched: only the order and the grouping
 * into lines and blocks change.
 */
import { blockOf, lineOf, ocrPageOf, type ExtractedPage, type LineStyle, type OcrLine } from "../model/document";

/** A gutter is at least this many text heights wide (a word space is ~0.3, the narrowest corpus gutter ~1.5). */
const MIN_GUTTER = 0.8;
/** Rows of lines a column of running text has at least. */
const MIN_COLUMN_ROWS = 3;
/** Words on a median line of running text. */
const MIN_COLUMN_WORDS = 3;
/** A column's median line spans at least this share of the column's width (justified or ragged prose). */
const MIN_COLUMN_FILL = 0.55;
/** Two columns overlap vertically over at least this share of the shorter one (they stand side by side). */
const MIN_SIDE_BY_SIDE = 0.5;
/**
 * A recognizer's line is cut where two words stand this many text heights apart (a word space is ~0.3; justified
 * prose stretches it to ~0.8): Tesseract runs a line across the gutter of two columns whose lines stand in the same
 * rows, and across the cells of a table. The pieces of one row join again below unless a gutter parts them.
 */
const SEGMENT_GAP = 1.2;
/** A gap between rows larger than this many line heights starts a new block. */
const BLOCK_GAP = 0.8;

/** A line of the page with its box in page pixels. */
interface Unit {
  line: OcrLine;
  style: LineStyle;
  /** The recognizer's block it came in. */
  block: number;
  /** Its place in the recognizer's order. */
  order: number;
  x0: number;
  y0: number;
  x1: number;
  y1: number;
}

/** Units in reading order, grouped: each group is read as rows and may hold several blocks. */
type Stretch = Unit[];

/**
 * The page with its lines in reading order (module comment). A page of one line, or none, comes back as it is.
 */
export function orderReading(page: ExtractedPage): ExtractedPage {
  const { width, height } = page;
  const wordHeight = median(
    page.blocks.flatMap((b) => b.lines.flatMap((l) => l.words.map((w) => (w.bbox[3] - w.bbox[1]) * height))),
  );
  const units: Unit[] = page.blocks.flatMap((block, b) =>
    block.lines.flatMap((line, l) =>
      segmentsOf(line, SEGMENT_GAP * wordHeight, width).map((segment) => ({
        line: segment,
        style: page.lineStyles[b]?.[l] ?? { size: 0 },
        block: b,
        order: 0,
        x0: segment.bbox[0] * width,
        y0: segment.bbox[1] * height,
        x1: segment.bbox[2] * width,
        y1: segment.bbox[3] * height,
      })),
    ),
  );
  if (units.length < 2) return page;
  units.forEach((unit, i) => (unit.order = i));
  const textHeight = median(units.map((u) => u.y1 - u.y0)) || 1;
  const stretches: Stretch[] = [];
  cut(units, textHeight, stretches);
  const blocks = [];
  const lineStyles: LineStyle[][] = [];
  // A recognizer's block that the cuts parted (Tesseract ran it across a gutter) says nothing of paragraphs.
  const stretchesOf = new Map<number, Set<number>>();
  stretches.forEach((stretch, i) =>
    stretch.forEach((u) => stretchesOf.set(u.block, (stretchesOf.get(u.block) ?? new Set()).add(i))),
  );
  const parted = new Set([...stretchesOf].filter(([, seen]) => seen.size > 1).map(([block]) => block));
  for (const stretch of stretches) {
    for (const cells of tablesOf(stretch)) {
      for (const group of blocksOf(rowsOf(cells), parted)) {
        blocks.push(blockOf(group.map((row) => row.line)));
        lineStyles.push(group.map((row) => row.style));
      }
    }
  }
  // The same words: the page's confidence stays; its text follows the new order.
  const { text } = ocrPageOf(
    { number: page.number, width, height, engine: page.engine ?? "tesseract" },
    blocks,
    lineStyles,
  );
  return { ...page, blocks, lineStyles, text };
}

/** A line's words in runs split at wide gaps, each a line of its own (its baseline the part of the line's under it). */
function segmentsOf(line: OcrLine, gap: number, width: number): OcrLine[] {
  const runs: Array<OcrLine["words"]> = [];
  let previous: OcrLine["words"][number] | undefined;
  for (const word of line.words) {
    if (!previous || (word.bbox[0] - previous.bbox[2]) * width >= gap) runs.push([word]);
    else runs[runs.length - 1]!.push(word);
    previous = word;
  }
  if (runs.length <= 1) return [line];
  return runs.map((words) => {
    const segment = lineOf(words);
    const baseline = line.baseline;
    if (!baseline) return segment;
    const [bx0, by0, bx1, by1] = baseline;
    const at = (x: number) => (bx1 === bx0 ? by0 : by0 + ((by1 - by0) * (x - bx0)) / (bx1 - bx0));
    const round = (v: number) => Math.round(v * 10_000) / 10_000;
    return {
      ...segment,
      baseline: [segment.bbox[0], round(at(segment.bbox[0])), segment.bbox[2], round(at(segment.bbox[2]))],
    };
  });
}

/** Split `units` at gutters between columns of running text, recursively; push the stretches in reading order. */
function cut(units: Unit[], textHeight: number, out: Stretch[]): void {
  const gutter = findGutter(units, textHeight);
  if (!gutter) {
    out.push(units);
    return;
  }
  // Lines crossing the gutter split the columns into stretches: above it, the crossing line, below it.
  const crossing = units.filter((u) => u.x0 < gutter.x1 && u.x1 > gutter.x0).sort((a, b) => a.y0 - b.y0);
  let rest = units.filter((u) => !crossing.includes(u));
  for (const span of crossing) {
    const middle = (span.y0 + span.y1) / 2;
    const above = rest.filter((u) => (u.y0 + u.y1) / 2 < middle);
    rest = rest.filter((u) => !above.includes(u));
    columns(above, gutter, textHeight, out);
    out.push([span]);
  }
  columns(rest, gutter, textHeight, out);
}

function columns(units: Unit[], gutter: { x0: number; x1: number }, textHeight: number, out: Stretch[]): void {
  if (units.length === 0) return;
  const left = units.filter((u) => u.x1 <= gutter.x0);
  const right = units.filter((u) => u.x0 >= gutter.x1);
  if (left.length > 0) cut(left, textHeight, out);
  if (right.length > 0) cut(right, textHeight, out);
}

/**
 * The widest gutter between two columns of running text standing side by side, or null. Candidate gutters are the
 * gaps in the horizontal projection of the lines that do not span most of the region (a title over both columns
 * would close every gap).
 */
function findGutter(units: Unit[], textHeight: number): { x0: number; x1: number } | null {
  if (units.length < 2 * MIN_COLUMN_ROWS) return null;
  const regionX0 = Math.min(...units.map((u) => u.x0));
  const regionX1 = Math.max(...units.map((u) => u.x1));
  const narrow = units.filter((u) => u.x1 - u.x0 < 0.6 * (regionX1 - regionX0));
  const spans = narrow.map((u) => [u.x0, u.x1] as const).sort((a, b) => a[0] - b[0]);
  let best: { x0: number; x1: number } | null = null;
  let reach = -Infinity;
  for (const [x0, x1] of spans) {
    if (reach > -Infinity && x0 - reach >= MIN_GUTTER * textHeight) {
      // The wide lines left out of the projection narrow the gap where they start or end inside it; those that span it
      // whole are the lines crossing the gutter.
      const gap = { x0: reach, x1: x0 };
      for (const u of units) {
        if (u.x0 > gap.x0 && u.x0 < gap.x1) gap.x1 = u.x0;
        if (u.x1 > gap.x0 && u.x1 < gap.x1) gap.x0 = u.x1;
      }
      const wide = gap.x1 - gap.x0 >= MIN_GUTTER * textHeight;
      if (wide && (!best || gap.x1 - gap.x0 > best.x1 - best.x0) && separatesColumns(units, gap, textHeight))
        best = gap;
    }
    reach = Math.max(reach, x1);
  }
  return best;
}

/** Both sides of the gap hold a column of running text, and the two stand side by side. */
function separatesColumns(units: Unit[], gap: { x0: number; x1: number }, textHeight: number): boolean {
  const left = units.filter((u) => u.x1 <= gap.x0);
  const right = units.filter((u) => u.x0 >= gap.x1);
  if (!isRunningText(left, textHeight) || !isRunningText(right, textHeight)) return false;
  const [ly0, ly1] = [Math.min(...left.map((u) => u.y0)), Math.max(...left.map((u) => u.y1))];
  const [ry0, ry1] = [Math.min(...right.map((u) => u.y0)), Math.max(...right.map((u) => u.y1))];
  const overlap = Math.min(ly1, ry1) - Math.max(ly0, ry0);
  return overlap >= MIN_SIDE_BY_SIDE * Math.min(ly1 - ly0, ry1 - ry0);
}

/** Lines of several words filling their column, in three rows or more (not a column of labels, prices or cells). */
function isRunningText(units: Unit[], textHeight: number): boolean {
  const rows = rowsOf(units);
  if (rows.length < MIN_COLUMN_ROWS) return false;
  const x0 = Math.min(...units.map((u) => u.x0));
  const x1 = Math.max(...units.map((u) => u.x1));
  if (x1 - x0 < 4 * textHeight) return false;
  const words = median(rows.map((r) => r.line.words.length));
  const fill = median(rows.map((r) => (r.x1 - r.x0) / (x1 - x0)));
  return words >= MIN_COLUMN_WORDS && fill >= MIN_COLUMN_FILL;
}

/**
 * A stretch's lines as the recognizer grouped them (its blocks, in its order), except that blocks standing side by
 * side with their lines in the same rows — the cells of a table set as blocks of their own, a box beside a box — are
 * one group, read row by row. Blocks of two lines are left alone (a name over a title beside a phone over an e-mail:
 * a card, read cell by cell), and so are blocks of different numbers of rows and a block of running text beside
 * anything (a sidebar beside an article).
 */
function tablesOf(units: Unit[]): Unit[][] {
  const byBlock = new Map<number, Unit[]>();
  for (const unit of units) byBlock.set(unit.block, [...(byBlock.get(unit.block) ?? []), unit]);
  const blocks = [...byBlock.values()].map((members) => ({ members, rows: rowsOf(members) }));
  const group = blocks.map((_, i) => i);
  const find = (i: number): number => (group[i] === i ? i : (group[i] = find(group[i]!)));
  for (let i = 0; i < blocks.length; i++) {
    for (let j = i + 1; j < blocks.length; j++) {
      if (alignedCells(blocks[i]!.rows, blocks[j]!.rows)) group[find(i)] = find(j);
    }
  }
  const groups = new Map<number, Unit[]>();
  blocks.forEach((block, i) => groups.set(find(i), [...(groups.get(find(i)) ?? []), ...block.members]));
  const first = (g: Unit[]) => Math.min(...g.map((u) => u.order));
  return [...groups.values()].sort((a, b) => first(a) - first(b));
}

/**
 * Two blocks side by side with lines in the same rows: cells of one table. Not when either is running text (a sidebar
 * beside an article), has two rows (a name over a title beside a phone over an e-mail: a card, read cell by cell) or
 * holds mostly marks (a column of icons or rules OCR read as brackets would tie every row of the page together).
 */
function alignedCells(a: Unit[], b: Unit[]): boolean {
  if (a.length === 2 || b.length === 2 || marksOnly(a) || marksOnly(b)) return false;
  const box = (rows: Unit[]) => ({ x0: Math.min(...rows.map((r) => r.x0)), x1: Math.max(...rows.map((r) => r.x1)) });
  const [ba, bb] = [box(a), box(b)];
  if (!(ba.x1 <= bb.x0 || bb.x1 <= ba.x0)) return false;
  const sameRow = a.some((r) =>
    b.some((o) => Math.min(o.y1, r.y1) - Math.max(o.y0, r.y0) > 0.5 * Math.min(o.y1 - o.y0, r.y1 - r.y0)),
  );
  if (!sameRow) return false;
  const height = median([...a, ...b].map((r) => r.y1 - r.y0)) || 1;
  return !isRunningText(a, height) && !isRunningText(b, height);
}

/** Most of its lines hold no two letters or digits in a row: marks, not cells. */
function marksOnly(rows: Unit[]): boolean {
  return rows.filter((r) => !/[\p{L}\p{N}]{2}/u.test(r.line.text)).length * 2 >= rows.length;
}

/**
 * Lines side by side — vertically overlapping by more than half the smaller height, not overlapping horizontally —
 * are one row, read left to right, as one line; rows top to bottom.
 */
function rowsOf(units: Unit[]): Unit[] {
  const sorted = [...units].sort((a, b) => (a.y0 + a.y1) / 2 - (b.y0 + b.y1) / 2);
  const rows: Unit[][] = [];
  for (const unit of sorted) {
    const row = rows.find((r) =>
      r.every((other) => {
        const overlapY = Math.min(other.y1, unit.y1) - Math.max(other.y0, unit.y0);
        const apartX = other.x1 <= unit.x0 || unit.x1 <= other.x0;
        return apartX && overlapY > 0.5 * Math.min(other.y1 - other.y0, unit.y1 - unit.y0);
      }),
    );
    if (row) row.push(unit);
    else rows.push([unit]);
  }
  return rows
    .map((row) => joinRow(row.sort((a, b) => a.x0 - b.x0)))
    .sort((a, b) => (a.y0 + a.y1) / 2 - (b.y0 + b.y1) / 2);
}

/** One row's lines, left to right, as one unit (its first line's block; its baseline from end to end). */
function joinRow(row: Unit[]): Unit {
  if (row.length === 1) return row[0]!;
  const first = row[0]!;
  const last = row[row.length - 1]!;
  const line = lineOf(row.flatMap((u) => u.line.words));
  const baseline = first.line.baseline && last.line.baseline;
  const joined: OcrLine = baseline
    ? {
        ...line,
        baseline: [first.line.baseline![0], first.line.baseline![1], last.line.baseline![2], last.line.baseline![3]],
      }
    : line;
  return {
    line: joined,
    style: { ...first.style, size: median(row.map((u) => u.style.size)) },
    block: first.block,
    order: Math.min(...row.map((u) => u.order)),
    x0: Math.min(...row.map((u) => u.x0)),
    y0: Math.min(...row.map((u) => u.y0)),
    x1: Math.max(...row.map((u) => u.x1)),
    y1: Math.max(...row.map((u) => u.y1)),
  };
}

/**
 * Rows into blocks: a new one where the gap to the row above exceeds BLOCK_GAP, or where the recognizer's block changes
 * (unless the cuts parted either block: `parted`).
 */
function blocksOf(rows: Unit[], parted: Set<number>): Unit[][] {
  const blocks: Unit[][] = [];
  let previous: Unit | undefined;
  for (const row of rows) {
    const height = Math.max(row.y1 - row.y0, previous ? previous.y1 - previous.y0 : 0);
    const changed =
      previous !== undefined && row.block !== previous.block && !parted.has(row.block) && !parted.has(previous.block);
    const apart = !previous || changed || row.y0 - previous.y1 > BLOCK_GAP * height;
    if (apart) blocks.push([row]);
    else blocks[blocks.length - 1]!.push(row);
    previous = row;
  }
  return blocks;
}

function median(values: number[]): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}
