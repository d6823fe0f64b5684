/**
 * A candidate run of rows made into a table and judged (tables.ts finds the runs): its edge rows and sparse outer
 * columns trimmed, its words placed in cells (marks and signs between columns go to the nearer cell or are dropped,
 * a cell centred across two ruled rows joins the row above), and the judgement — enough rows of two or more cells,
 * enough cells filled with credibly read text, short or numeric cells in most columns, one type size. Also what
 * tells a column of running text from a column of cells, which tables.ts uses to cut a page into zones.
 */
import {
  columnIndex,
  columnsOf,
  filledColumns,
  firstColumnFilled,
  isContent,
  median,
  restrict,
  rowWords,
  type Interval,
  type Row,
  type Word,
} from "./table-rows";

/** Rows that must share the same gutters before a region can be a table (the rule). */
export const MIN_ROWS = 3;

/** A column whose median cell has more words than this reads as text, not as cells. */
export const SHORT_CELL_WORDS = 3;
/**
 * An outer column with a single cell, or filled in fewer rows than this share, is not part of the table (a margin
 * note, a page number); a column of ticks filled in 2 rows of 12 is.
 */
const MIN_EDGE_FILL = 0.1;
/** The share of cells that must hold something. */
const MIN_FILL = 0.4;
/**
 * A column whose cells of three or more words start with a small letter this often is running text (measured:
 * prose columns 0.5–0.9, table columns 0–0.2).
 */
const RUNNING_LOWERCASE = 1 / 3;
/** Columns whose median line heights differ more than this are not one table (a title beside a sidebar). */
const MAX_HEIGHT_RATIO = 1.6;

/**
 * A cell holds real text when one of its words was read with at least this confidence, 0–100 (the second reading's
 * bar for words that count as text: lib/ocr/engine/second-reading.ts); a table needs this in most of its filled cells
 * (`MIN_REAL_CELLS`). What the recognizer reads in a photo's background (wood grain, a keyboard, the paper's edge) is
 * short marks at low confidence, which can line up in columns over several rows. Words are not left out by their
 * confidence, though: a real table's cells read at 5–20 % (a faint date, an e-mail address) stay in their cells.
 */
const CREDIBLE_CONFIDENCE = 40;
const MIN_REAL_CELLS = 0.75;

/** What a column of numbers says where it has none: not available, not meaningful, nil. */
const PLACEHOLDER = /^(?:n\/?a|n\.a\.|nm|nc|nil|[-–—]+)$/i;

export interface Table {
  cells: Word[][][];
  columns: Interval[];
  /** Columns whose cells read as running text. */
  long: number[];
  y0: number;
  y1: number;
  x0: number;
  x1: number;
  taken: Word[];
}

/** The non-empty cells of each column of `rows`, content words only, in reading order. */
export function columnCells(rows: Row[], columns: Interval[]): Word[][][] {
  const cells = columns.map((): Word[][] => []);
  for (const row of rows) {
    const parts = columns.map((): Word[] => []);
    for (const word of rowWords(row)) {
      const k = isContent(word) ? columnIndex(word, columns) : -1;
      if (k >= 0) parts[k]!.push(word);
    }
    parts.forEach((part, k) => part.length > 0 && cells[k]!.push(part.sort((p, q) => p.x0 - q.x0)));
  }
  return cells;
}

/** Cells of more than a few words, or lines that mostly carry on a sentence: text, not table cells. */
export function isLong(cells: Word[][]): boolean {
  return median(cells.map((cell) => cell.length)) > SHORT_CELL_WORDS || isRunning(cells);
}

/**
 * Lines of running text mostly go on with a small letter, table cells start afresh: a column whose cells of three
 * or more words start in lower case this often is text, whatever its width (a narrow newspaper column).
 */
function isRunning(cells: Word[][]): boolean {
  const running = cells.filter((cell) => cell.length >= 3 && /^\p{Ll}/u.test(cell[0]!.text)).length;
  return cells.length > 0 && running >= RUNNING_LOWERCASE * cells.length;
}

/**
 * Settle a run's rows and columns, then judge it: rows at either end with fewer than two filled columns
 * (a caption, a note) are left out, and so are sparse outer columns; what remains is a table when it has at
 * least three rows of two or more cells, enough cells filled, and short or numeric cells in most columns.
 */
export function fitTable(run: Row[], minGutter: number, cw: number): Table | null {
  let rows = run;
  let columns: Interval[] = [];
  for (let pass = 0; pass < 6; pass++) {
    columns = columnsOf(rows, minGutter);
    if (columns.length < 2) return null;
    let a = 0;
    let b = rows.length - 1;
    while (a <= b && filledColumns(rows[a]!, columns) < 2) a++;
    // A last row whose one cell is not in the first column continues the row above (a wrapped description).
    while (
      b >= a &&
      filledColumns(rows[b]!, columns) < 2 &&
      (filledColumns(rows[b]!, columns) === 0 || firstColumnFilled(rows[b]!, columns))
    )
      b--;
    if (b - a + 1 < MIN_ROWS) return null;
    if (a > 0 || b < rows.length - 1) {
      rows = rows.slice(a, b + 1);
      continue;
    }
    const filled = columns.map(
      (_, k) => rows.filter((row) => rowWords(row).some((w) => isContent(w) && columnIndex(w, columns) === k)).length,
    );
    const fill = filled.map((n) => (n < 2 ? 0 : n / rows.length));
    if (fill[0]! < MIN_EDGE_FILL) {
      rows = restrict(rows, (columns[0]![1] + columns[1]![0]) / 2, Infinity);
      continue;
    }
    const last = columns.length - 1;
    if (fill[last]! < MIN_EDGE_FILL) {
      rows = restrict(rows, -Infinity, (columns[last - 1]![1] + columns[last]![0]) / 2);
      continue;
    }
    return judge(buildTable(rows, columns, cw));
  }
  return null;
}

/** Words into cells; marks and signs between columns go to the nearer or the following cell, or are dropped. */
function buildTable(rows: Row[], columns: Interval[], cw: number): Table {
  const [x0, x1] = [columns[0]![0], columns[columns.length - 1]![1]];
  const table: Table = { cells: [], columns, long: [], y0: Infinity, y1: -Infinity, x0, x1, taken: [] };
  const spans: Interval[] = [];
  for (const row of rows) {
    const cells: Word[][] = columns.map(() => []);
    for (const word of rowWords(row)) {
      table.taken.push(word);
      const k = placeWord(word, columns, cw);
      if (k >= 0) cells[k]!.push(word);
    }
    for (const cell of cells) cell.sort((p, q) => p.x0 - q.x0);
    table.cells.push(cells);
    spans.push([row.y0, row.y1]);
    table.y0 = Math.min(table.y0, row.y0);
    table.y1 = Math.max(table.y1, row.y1);
  }
  mergeOffsetRows(table, spans);
  return table;
}

function placeWord(word: Word, columns: Interval[], cw: number): number {
  const k = columnIndex(word, columns);
  if (k >= 0) return k;
  const mid = (word.x0 + word.x1) / 2;
  // Between column `left` and column `left + 1` (or outside the first or last column).
  let left = -1;
  while (left + 1 < columns.length && columns[left + 1]![0] < mid) left++;
  const right = left + 1 < columns.length ? left + 1 : -1;
  if (word.kind === "currency") return right >= 0 ? right : left;
  if (word.kind === "percent") return left >= 0 ? left : right;
  // A mark touching a cell is part of it (`DB2 for i`); a free-standing one is a ruling.
  if (word.kind === "mark" || word.kind === "thin") {
    if (left >= 0 && word.x0 - columns[left]![1] < 0.8 * cw) return left;
    if (right >= 0 && columns[right]![0] - word.x1 < 0.8 * cw) return right;
    return -1;
  }
  return left >= 0 ? left : right;
}

/**
 * A cell centred across two rows of a ruled table (its neighbours each on their own line) forms a row of its
 * own, half overlapping the row above: when its filled columns are all empty there, it joins that row.
 */
function mergeOffsetRows(table: Table, spans: Interval[]): void {
  for (let r = 1; r < table.cells.length;) {
    const row = table.cells[r]!;
    const above = table.cells[r - 1]!;
    const overlaps = spans[r]![0] < spans[r - 1]![1];
    const disjoint = row.every((cell, k) => cell.length === 0 || above[k]!.length === 0);
    if (!overlaps || !disjoint) {
      r++;
      continue;
    }
    row.forEach((cell, k) => above[k]!.push(...cell));
    spans[r - 1]![1] = Math.max(spans[r - 1]![1], spans[r]![1]);
    table.cells.splice(r, 1);
    spans.splice(r, 1);
  }
}

function judge(table: Table): Table | null {
  const rows = table.cells.length;
  const columns = table.cells[0]?.length ?? 0;
  if (rows < MIN_ROWS || columns < 2) return null;
  const text = (cell: Word[]) => cell.filter((w) => w.kind !== "mark");
  let filled = 0;
  let multi = 0;
  for (const row of table.cells) {
    const n = row.filter((cell) => text(cell).length > 0).length;
    filled += n;
    if (n >= 2) multi++;
  }
  if (multi < MIN_ROWS || multi < rows / 2 || filled < MIN_FILL * rows * columns) return null;
  // Aligned marks are not a table: most of its cells must hold real text, read with some confidence.
  const real = table.cells.flat().filter((cell) => cell.some(isRealWord)).length;
  if (real < MIN_REAL_CELLS * filled) return null;
  let short = 0;
  let numeric = 0;
  const heights: number[] = [];
  for (let k = 0; k < columns; k++) {
    const cells = table.cells.map((row) => text(row[k]!)).filter((cell) => cell.length > 0);
    heights.push(median(cells.flat().map((w) => w.height)));
    const values = cells.map((cell) => cell.map((w) => w.text).join("")).filter((value) => !PLACEHOLDER.test(value));
    if (values.length > 0 && values.filter(isNumeric).length >= 0.6 * values.length) numeric++;
    if (isRunning(cells)) return null;
    if (median(cells.map((cell) => cell.length)) <= SHORT_CELL_WORDS) short++;
    else table.long.push(k);
  }
  // One table's cells are set in one size; a title beside a sidebar is not.
  if (Math.max(...heights) > MAX_HEIGHT_RATIO * Math.min(...heights)) return null;
  // A row with only running text, under a row that has its first cell, continues that row's description.
  for (let r = table.cells.length - 1; r > 0; r--) {
    const row = table.cells[r]!;
    const continues =
      row.every((cell, k) => text(cell).length === 0 || table.long.includes(k)) && text(row[0]!).length === 0;
    if (!continues || table.long.length === 0) continue;
    row.forEach((cell, k) => table.cells[r - 1]![k]!.push(...cell));
    table.cells.splice(r, 1);
  }
  // Header cells set on several lines give leading rows with an empty first cell: one header row.
  let stacked = 0;
  while (stacked < table.cells.length && text(table.cells[stacked]![0]!).length === 0) stacked++;
  if (stacked >= 2) {
    for (const row of table.cells.splice(1, stacked - 1)) row.forEach((cell, k) => table.cells[0]![k]!.push(...cell));
  }
  if (table.cells.length < MIN_ROWS) return null;
  // Running text beside short cells is a description column; running text beside running text is a page.
  if (short < 2 || table.long.length > short) return null;
  // Words alone (no column of numbers) need more evidence: three columns or more, and a row more than the minimum
  // (three lines of a justified paragraph can have their spaces aligned). Two columns of short words (a list set
  // in two columns, a form) are not a table.
  if (numeric === 0 && (columns === 2 || table.cells.length <= MIN_ROWS)) return null;
  return table;
}

function isRealWord(word: Word): boolean {
  return word.kind === "text" && word.confidence >= CREDIBLE_CONFIDENCE;
}

/** Mostly digits: amounts, dates, phone numbers, `2011A`, `$(0.56)A`. */
function isNumeric(text: string): boolean {
  const alnum = text.replace(/[^\p{L}\p{N}]/gu, "");
  if (alnum.length === 0) return false;
  return alnum.replace(/\D/g, "").length >= 0.6 * alnum.length;
}
