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
 * - The gutter is found from the words, not the lines: a strip of x the words leave open but for a few lines crossing
 *   it (findGutter), so a title narrower than the page, a page number in the gutter, a recognizer's padded boxes or a
 *   line it ran across both columns (cut there: splitAtGutter) do not hide it.
 * - On a page with columns, the running header and footer (a top and a bottom band standing apart) are read first and
 *   last; a gutter of line numbers joins each number to the line beside it (runningLines, joinLineNumbers).
 *
 * The rules are judged on the generated layout suite (scripts/make-layouts.ts, `npm run bench -- --layouts`) read by
 * both recognizers, and on corpus-dev for no regression (docs/decisions.md#layout-suite).
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
/**
 * A column's median line spans at least this share of the column's width (justified or ragged prose, and lines wrapped
 * short beside a figure: half the column may stand beside one).
 */
const MIN_COLUMN_FILL = 0.4;
/**
 * Rows of running text are lines of several words, most of them: rows joined from short pieces side by side are cells
 * or fields (rows joined from two columns' lines are a region that holds columns still to be cut).
 */
const MAX_JOINED_ROWS = 0.3;
/**
 * Running text runs on from row to row: a gap of this many text heights between two rows is a blank line or more (a
 * paragraph break is under one and a half, double spacing under one and a half; a form leaves room to write in).
 */
const BLANK_LINE = 2;
/**
 * A column with more than this share of its row gaps blank (BLANK_LINE) is a column of fields, not of running text:
 * the labels of a form down its left side, each with its value beside it, rows apart.
 */
const MAX_BLANK_GAPS = 1 / 3;
/** Two columns overlap vertically over at least this share of the shorter one (they stand side by side). */
const MIN_SIDE_BY_SIDE = 0.5;
/**
 * A recognizer's line is cut where two words stand this many text heights apart (a word space is ~0.3; justified
 * prose stretches it to ~0.8): Tesseract runs a line across the gutter of two columns whose lines stand in the same
 * rows, and across the cells of a table. The pieces of one row join again below unless a gutter parts them.
 */
const SEGMENT_GAP = 1.2;
/** Off each side of a line's box when finding gutters, in text heights (module comment of `inked`). */
const INK_INSET = 0.2;
/** A gutter may be crossed whole by at most this share of a region's lines (titles, captions, footers). */
const MAX_CROSSING = 0.15;
/** Numbers alone in a narrow column beside lines, at least this many: a gutter of line numbers. */
const LINE_NUMBERS = 3;
/** A running header or footer stands apart from the page's body by this many text heights. */
const RUNNING_GAP = 1.5;
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
  /** Words of each line joined side by side into this one (one entry for a line as it came). */
  parts: number[];
  x0: number;
  y0: number;
  x1: number;
  y1: number;
}

/** The page being ordered, in pixels (units' boxes are in pixels, lines' and words' in page fractions). */
let scale = { width: 1, height: 1 };

function unitOf(line: OcrLine, style: LineStyle, block: number, order: number): Unit {
  const [x0, y0, x1, y1] = line.bbox;
  const { width, height } = scale;
  return {
    line,
    style,
    block,
    order,
    parts: [line.words.length],
    x0: x0 * width,
    y0: y0 * height,
    x1: x1 * width,
    y1: y1 * height,
  };
}

/**
 * A line crossing the gutter only with a space between two of its words (no word stands in the gutter's middle half):
 * two lines, one in each column (a recognizer ran one row of two columns into one line). Otherwise the line itself.
 */
function splitAtGutter(unit: Unit, gutter: { x0: number; x1: number }): Unit[] {
  const quarter = (gutter.x1 - gutter.x0) / 4;
  const [m0, m1] = [gutter.x0 + quarter, gutter.x1 - quarter];
  const { width } = scale;
  const words = unit.line.words;
  if (words.some((w) => w.bbox[0] * width < m1 && w.bbox[2] * width > m0)) return [unit];
  const gaps = words.slice(1).map((w, i) => (w.bbox[0] - words[i]!.bbox[2]) * width);
  const spaced = median(
    gaps.filter((_, i) => !(words[i]!.bbox[2] * width <= m0 && words[i + 1]!.bbox[0] * width >= m1)),
  );
  // The space at the gutter is wider than the line's word spaces (a title set wide keeps its words together).
  const pieces = piecesOf(
    unit.line,
    (previous, word) =>
      previous.bbox[2] * width <= m0 &&
      word.bbox[0] * width >= m1 &&
      (word.bbox[0] - previous.bbox[2]) * width > 2 * spaced,
  );
  if (pieces.length < 2) return [unit];
  return pieces.map((piece) => unitOf(piece, unit.style, unit.block, unit.order));
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
  scale = { width, height };
  const units: Unit[] = page.blocks.flatMap((block, b) =>
    block.lines.flatMap((line, l) =>
      segmentsOf(line, SEGMENT_GAP * wordHeight, width).map((segment) =>
        unitOf(segment, page.lineStyles[b]?.[l] ?? { size: 0 }, b, 0),
      ),
    ),
  );
  if (units.length < 2) return page;
  units.forEach((unit, i) => (unit.order = i));
  const textHeight = median(units.map((u) => u.y1 - u.y0)) || 1;
  const numbered = joinLineNumbers(units, textHeight);
  const { header, body, footer } = runningLines(numbered, textHeight);
  const stretches: Stretch[] = header.length > 0 ? [header] : [];
  cut(body, textHeight, stretches);
  if (footer.length > 0) stretches.push(footer);
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

type Word = OcrLine["words"][number];

/** A line's words in runs split at wide gaps, each a line of its own (its baseline the part of the line's under it). */
function segmentsOf(line: OcrLine, gap: number, width: number): OcrLine[] {
  return piecesOf(line, (previous, word) => (word.bbox[0] - previous.bbox[2]) * width >= gap);
}

/** A line's words in runs, a new run where `apart` says so; each run a line of its own. */
function piecesOf(line: OcrLine, apart: (previous: Word, word: Word) => boolean): OcrLine[] {
  const runs: Array<OcrLine["words"]> = [];
  let previous: Word | undefined;
  for (const word of line.words) {
    if (!previous || apart(previous, word)) runs.push([word]);
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

/**
 * A gutter of line numbers (a transcript, a pleading, a code listing): LINE_NUMBERS or more lines that are a number
 * alone, each the first thing in its row, standing in one narrow column; each joins the line it stands beside, in
 * front of it. Recognizers read such a gutter as a block of its own, read before or after the text.
 */
function joinLineNumbers(units: Unit[], textHeight: number): Unit[] {
  const numbers = units.filter((u) => /^\d{1,4}$/.test(u.line.text.trim()));
  if (numbers.length < LINE_NUMBERS) return units;
  const sameRow = (a: Unit, b: Unit) =>
    Math.min(a.y1, b.y1) - Math.max(a.y0, b.y0) > 0.5 * Math.min(a.y1 - a.y0, b.y1 - b.y0);
  const pairs = new Map<Unit, Unit>();
  for (const number of numbers) {
    const row = units.filter((u) => u !== number && sameRow(u, number));
    if (row.some((u) => u.x1 <= number.x0)) continue;
    const beside = row.filter((u) => u.x0 >= number.x1 && !numbers.includes(u)).sort((a, b) => a.x0 - b.x0)[0];
    if (beside && !row.some((u) => u.x0 < beside.x0 && u.x0 >= number.x1 && u !== beside)) pairs.set(number, beside);
  }
  const rights = [...pairs.keys()].map((u) => u.x1);
  if (pairs.size < LINE_NUMBERS || Math.max(...rights) - Math.min(...rights) > 2 * textHeight) return units;
  const joined = new Map([...pairs].map(([number, line]) => [line, { number, line }]));
  return units
    .filter((u) => !pairs.has(u))
    .map((u) => {
      const pair = joined.get(u);
      if (!pair) return u;
      const row = joinRow([pair.number, pair.line]);
      return { ...row, block: u.block, order: u.order, parts: [u.line.words.length + 1] };
    });
}

/**
 * A running header and footer: the top and bottom rows of a page with columns, standing apart from the rest by
 * RUNNING_GAP text heights. Read first and last, whatever column they stand over. A page without columns keeps them
 * in its rows.
 */
function runningLines(units: Unit[], textHeight: number): { header: Unit[]; body: Unit[]; footer: Unit[] } {
  const sorted = [...units].sort((a, b) => a.y0 - b.y0);
  const bands: Unit[][] = [];
  let bottom = -Infinity;
  for (const u of sorted) {
    if (bands.length > 0 && u.y0 < bottom) bands[bands.length - 1]!.push(u);
    else bands.push([u]);
    bottom = Math.max(bottom, u.y1);
  }
  const none = { header: [], body: units, footer: [] };
  if (bands.length < 3) return none;
  const [first, second] = [bands[0]!, bands[1]!];
  const [last, beforeLast] = [bands[bands.length - 1]!, bands[bands.length - 2]!];
  const apart = (upper: Unit[], lower: Unit[]) =>
    Math.min(...lower.map((u) => u.y0)) - Math.max(...upper.map((u) => u.y1)) >= RUNNING_GAP * textHeight;
  const header = first.length <= 3 && apart(first, second) ? first : [];
  const footer = last.length <= 3 && apart(beforeLast, last) ? last : [];
  const body = units.filter((u) => !header.includes(u) && !footer.includes(u));
  if ((header.length === 0 && footer.length === 0) || !findGutter(body, textHeight)) return none;
  return { header, body, footer };
}

/** Split `units` at gutters between columns of running text, recursively; push the stretches in reading order. */
function cut(units: Unit[], textHeight: number, out: Stretch[]): void {
  const gutter = findGutter(units, textHeight);
  if (!gutter) {
    out.push(units);
    return;
  }
  // Lines crossing the gutter split the columns into stretches: above it, the crossing line, below it. A line inside
  // the gutter (not reaching into either column) splits them only above or below both (a page number); one beside
  // them (a pull quote, a caption in the gutter) is read after the left column's stretch it stands beside.
  units = partAt(units, gutter);
  const crossing = crossingOf(units, gutter).sort((a, b) => a.y0 - b.y0);
  let rest = units.filter((u) => !crossing.includes(u));
  const [top, bottom] = [Math.min(...rest.map((u) => u.y0)), Math.max(...rest.map((u) => u.y1))];
  const splitting = crossing.filter((u) => u.x0 < gutter.x0 || u.x1 > gutter.x1 || u.y1 <= top || u.y0 >= bottom);
  rest = [...rest, ...crossing.filter((u) => !splitting.includes(u))];
  for (const span of splitting) {
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
  const right = units.filter((u) => u.x0 >= (gutter.x0 + gutter.x1) / 2);
  // Left of the gutter, and inside it (module comment of cut).
  const left = units.filter((u) => !right.includes(u));
  if (left.length > 0) cut(left, textHeight, out);
  if (right.length > 0) cut(right, textHeight, out);
}

/**
 * The gutter between two columns of running text standing side by side, or null. A gutter is a vertical strip of
 * whitespace the region's lines leave open but for a few (at most MAX_CROSSING of them): lines crossing it whole (a
 * title or a caption over both columns) and lines standing inside it (a page number under it). Strips crossed by
 * fewer lines come first, then wider ones; a line that starts or ends inside a strip (a ragged column edge, a wide
 * line of one column) narrows it to that edge. A title narrower than the page still leaves the gutter under it found.
 */
function findGutter(units: Unit[], textHeight: number): { x0: number; x1: number } | null {
  if (units.length < 2 * MIN_COLUMN_ROWS) return null;
  const limit = Math.max(2, Math.floor(MAX_CROSSING * units.length));
  // Where the words stand: a line a recognizer ran across the gutter leaves it open between two of its words.
  const ink = inked(textHeight);
  const boxes = units.flatMap((u) =>
    u.line.words.map((w) => ink({ x0: w.bbox[0] * scale.width, x1: w.bbox[2] * scale.width })),
  );
  const edges = [...new Set(boxes.flatMap((u) => [u.x0, u.x1]))].sort((a, b) => a - b);
  const spans = edges.slice(1).map((x1, i) => {
    const x0 = edges[i]!;
    return { x0, x1, count: boxes.filter((u) => u.x0 <= x0 && u.x1 >= x1).length };
  });
  for (let crossed = 0; crossed <= limit; crossed++) {
    // Runs of x where at most `crossed` words stand, narrowed to the edges of the lines reaching into them from a side.
    const runs: Array<{ x0: number; x1: number }> = [];
    for (const span of spans) {
      const last = runs[runs.length - 1];
      if (span.count > crossed) continue;
      if (last && last.x1 === span.x0) last.x1 = span.x1;
      else runs.push({ x0: span.x0, x1: span.x1 });
    }
    const gaps = runs
      .filter((run) => run.x0 > edges[0]! && run.x1 < edges[edges.length - 1]!)
      .map((run) => {
        const gap = { ...run };
        // Lines ending or starting inside it (a ragged edge); not a line running across it (a title, two columns' row).
        for (const u of units.map(ink)) {
          const inside = u.x0 >= run.x0 && u.x1 <= run.x1;
          const spanning = u.x0 <= run.x0 && u.x1 >= run.x1;
          if (inside || spanning || u.x1 <= run.x0 || u.x0 >= run.x1) continue;
          if (u.x1 < run.x1) gap.x0 = Math.max(gap.x0, u.x1);
          else gap.x1 = Math.min(gap.x1, u.x0);
        }
        return gap;
      })
      .filter((gap) => gap.x1 - gap.x0 >= MIN_GUTTER * textHeight)
      .sort((a, b) => b.x1 - b.x0 - (a.x1 - a.x0));
    const found = gaps.find((gap) => {
      const parted = partAt(units, gap);
      return crossingOf(parted, gap).length <= limit && separatesColumns(parted, gap, textHeight);
    });
    if (found) return found;
  }
  return null;
}

/** The units with every line crossing the gutter between two of its words split there (splitAtGutter). */
function partAt(units: Unit[], gutter: { x0: number; x1: number }): Unit[] {
  return units.flatMap((u) => (u.x0 < gutter.x0 && u.x1 > gutter.x1 ? splitAtGutter(u, gutter) : [u]));
}

/**
 * A line's box for finding gutters: its ink, not its padding. A recognizer's box may stand a few pixels into the
 * gutter (PaddleOCR pads its boxes): INK_INSET of a text height off each side.
 */
function inked(textHeight: number): (u: { x0: number; x1: number }) => { x0: number; x1: number } {
  const inset = INK_INSET * textHeight;
  return (u) => (u.x1 - u.x0 > 4 * inset ? { x0: u.x0 + inset, x1: u.x1 - inset } : { x0: u.x0, x1: u.x1 });
}

/**
 * Lines the gutter does not leave on one side: those crossing it and those standing inside it — those reaching into
 * the middle half of it (a box may stand a little into the gutter from its column's side).
 */
function crossingOf(units: Unit[], gutter: { x0: number; x1: number }): Unit[] {
  const quarter = (gutter.x1 - gutter.x0) / 4;
  return units.filter((u) => u.x0 < gutter.x1 - quarter && u.x1 > gutter.x0 + quarter);
}

/** Both sides of the gap hold a column of running text, and the two stand side by side. */
function separatesColumns(units: Unit[], gap: { x0: number; x1: number }, textHeight: number): boolean {
  const crossing = crossingOf(units, gap);
  const right = units.filter((u) => !crossing.includes(u) && u.x0 >= (gap.x0 + gap.x1) / 2);
  const left = units.filter((u) => !crossing.includes(u) && !right.includes(u));
  if (!isRunningText(left, textHeight) || !isRunningText(right, textHeight)) return false;
  const [ly0, ly1] = [Math.min(...left.map((u) => u.y0)), Math.max(...left.map((u) => u.y1))];
  const [ry0, ry1] = [Math.min(...right.map((u) => u.y0)), Math.max(...right.map((u) => u.y1))];
  const overlap = Math.min(ly1, ry1) - Math.max(ly0, ry0);
  return overlap >= MIN_SIDE_BY_SIDE * Math.min(ly1 - ly0, ry1 - ry0);
}

/**
 * Lines of several words filling their column, in three rows or more, each row one line (not a column of labels,
 * prices or cells, whose rows join pieces standing apart), one row after the other (not a form's fields, rows apart).
 */
function isRunningText(units: Unit[], textHeight: number): boolean {
  const rows = rowsOf(units);
  if (rows.length < MIN_COLUMN_ROWS) return false;
  const x0 = Math.min(...units.map((u) => u.x0));
  const x1 = Math.max(...units.map((u) => u.x1));
  if (x1 - x0 < 4 * textHeight) return false;
  const words = median(rows.map((r) => r.line.words.length));
  const fill = median(rows.map((r) => (r.x1 - r.x0) / (x1 - x0)));
  const joined = rows.filter((r) => r.parts.length > 1 && Math.min(...r.parts) < MIN_COLUMN_WORDS).length / rows.length;
  const blank =
    rows.slice(1).filter((r, i) => r.y0 - rows[i]!.y1 >= BLANK_LINE * textHeight).length / (rows.length - 1);
  return words >= MIN_COLUMN_WORDS && fill >= MIN_COLUMN_FILL && joined <= MAX_JOINED_ROWS && blank <= MAX_BLANK_GAPS;
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
    parts: row.flatMap((u) => u.parts),
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
