import type { BBox, ExtractedPage } from "../model/document";

/** Where a word sits in its page: `page.blocks[block].lines[line].words[word]`. */
export interface WordRef {
  block: number;
  line: number;
  word: number;
}

export interface DetectedTable {
  /** Cell texts row by row, the first row being the header; every row has the same number of cells. */
  rows: string[][];
  /** Normalized box around the table's rows. */
  bbox: BBox;
  /** Every word the table took: those in its cells and the rule marks dropped from between its columns. */
  words: WordRef[];
}

/**
 * A gutter (a column boundary) is an x-range no word of the rows crosses, at least this many character widths
 * (median width of a character on the page) wide. Word spaces are ~0.5 of a width (up to ~2.5 in narrow justified
 * columns, which is why a gutter must also hold over several rows). On the benchmark tables (docs/decisions.md#table-gutters) the narrowest gap between
 * two columns was 2.2 widths (right-aligned amounts, 2023 | 2022), and the widest gap inside one cell 1.4 (a phone
 * number's "(203) 569-4345").
 */
const GUTTER_WIDTHS = 1.8;
/** Rows that must share the same gutters before a region can be a table (the rule). */
const MIN_ROWS = 3;
/** A vertical gap of more than this many row heights ends a table (groups within one table were 2.4 apart). */
const MAX_ROW_GAP = 3;
/** A line joins a row when it overlaps the row by this share of the smaller height. */
const ROW_OVERLAP = 0.5;
/** A column whose median cell has more words than this reads as text, not as cells. */
const SHORT_CELL_WORDS = 3;
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
/** Zones inside zones: page → text column → table. */
const MAX_DEPTH = 3;
/**
 * A cell holds real text when one of its words was read with at least this confidence, 0–100 (the second reading's
 * bar for words that count as text: lib/ocr/engine/second-reading.ts); a table needs this in most of its filled cells
 * (`MIN_REAL_CELLS`). What the recognizer reads in a photo's background (wood grain, a keyboard, the paper's edge) is
 * short marks at low confidence, which can line up in columns over several rows. Words are not left out by their
 * confidence, though: a real table's cells read at 5–20 % (a faint date, an e-mail address) stay in their cells.
 */
const CREDIBLE_CONFIDENCE = 40;
const MIN_REAL_CELLS = 0.75;

/**
 * Marks that ruled tables and forms leave in OCR output (a vertical rule read as `|` or `:`, a border read as `>`)
 * and rules (`____`, `----`): they never decide where a column is; in a column they are kept, between columns
 * dropped. Leader dots are text, so a table of contents stays a list.
 */
const MARK = /^(?:[|¦!:;=<>~^_`'"‘’“”«»()[\]{}•·]|[-_=—–]{3,})$/u;
/**
 * A rule is read as `i`, `l`, `I` or `1` too, but those are words and numbers as well: one of them standing alone
 * in a gap decides a column only when the same column has such a glyph in other rows as well.
 */
const THIN = /^[iIl1]$/;
/** Currency signs stand apart from their amounts in financial tables (`$   48,677`): they belong to the next cell. */
const CURRENCY = /^[$€£¥§]$/;
const PERCENT = /^%$/;
/** What a column of numbers says where it has none: not available, not meaningful, nil. */
const PLACEHOLDER = /^(?:n\/?a|n\.a\.|nm|nc|nil|[-–—]+)$/i;

type Kind = "text" | "thin" | "mark" | "currency" | "percent";

interface Word {
  text: string;
  /** The recognizer's confidence, 0–100 (a text layer's words: 100). */
  confidence: number;
  x0: number;
  x1: number;
  /** Height of the word's line. */
  height: number;
  kind: Kind;
  ref: WordRef;
}

interface Fragment {
  words: Word[];
  y0: number;
  y1: number;
}

interface Row {
  fragments: Fragment[];
  y0: number;
  y1: number;
  /** The band every line of the row covers. */
  core0: number;
  core1: number;
}

type Interval = [number, number];

interface Table {
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

/**
 * Tables found from word geometry alone, so scans and PDF text layers are treated alike: the page's lines (from
 * every block, since automatic segmentation often cuts a table's columns into separate blocks) are grouped into
 * visual rows; a run of at least three rows that share vertical gutters is a candidate, its gutters being the
 * column boundaries. It is a table only when most of its cells are short (or numeric): two columns of running
 * text side by side are a two-column page, which is then searched column by column for tables inside it.
 */
export function detectTables(page: ExtractedPage): DetectedTable[] {
  const width = page.width > 0 ? page.width : 1;
  const height = page.height > 0 ? page.height : 1;
  const fragments: Fragment[] = [];
  page.blocks.forEach((block, b) =>
    block.lines.forEach((line, l) => {
      // Code keeps its own layout (a fenced block).
      if (page.lineStyles[b]?.[l]?.monospace) return;
      const words: Word[] = [];
      line.words.forEach((word, w) => {
        const text = word.text.trim();
        if (!text) return;
        let x0 = word.bbox[0] * width;
        const x1 = word.bbox[2] * width;
        // `$31,762` in a column of amounts whose `$` signs stand apart: the amount decides the column.
        if (text.length > 1 && CURRENCY.test(text[0]!)) x0 += (x1 - x0) / text.length;
        words.push({
          text,
          confidence: word.confidence,
          x0,
          x1,
          height: (line.bbox[3] - line.bbox[1]) * height,
          kind: kindOf(text),
          ref: { block: b, line: l, word: w },
        });
      });
      if (words.length > 0) fragments.push({ words, y0: line.bbox[1] * height, y1: line.bbox[3] * height });
    }),
  );
  return findTables(fragments, 0)
    .sort((a, b) => a.y0 - b.y0)
    .map((table) => ({
      rows: table.cells.map((row) => row.map((cell) => cell.map((w) => w.text).join(" "))),
      bbox: [table.x0 / width, table.y0 / height, table.x1 / width, table.y1 / height],
      words: table.taken.map((w) => w.ref),
    }));
}

/** A GitHub-flavoured Markdown table; the first row is the header. */
export function renderTable(rows: string[][]): string {
  const cell = (text: string) => text.replace(/\\/g, "\\\\").replace(/\|/g, "\\|").replace(/\s+/g, " ").trim();
  const line = (row: string[]) => `| ${row.map(cell).join(" | ")} |`;
  const [header = [], ...body] = rows;
  return [line(header), `|${header.map(() => " --- ").join("|")}|`, ...body.map(line)].join("\n");
}

function kindOf(text: string): Kind {
  if (MARK.test(text)) return "mark";
  if (THIN.test(text)) return "thin";
  if (CURRENCY.test(text)) return "currency";
  if (PERCENT.test(text)) return "percent";
  return "text";
}

function findTables(fragments: Fragment[], depth: number): Table[] {
  const rows = groupRows(fragments);
  const cw = charWidth(fragments);
  if (rows.length < MIN_ROWS || cw <= 0) return [];
  const minGutter = GUTTER_WIDTHS * cw;
  const tables: Table[] = [];
  let i = 0;
  // Rows before `floor` belong to a table or a zone already searched.
  let floor = 0;
  while (i + MIN_ROWS <= rows.length) {
    const seed = findSeed(rows, i, minGutter);
    if (!seed) break;
    const [a, b] = grow(rows, seed, minGutter, floor);
    const run = rows.slice(a, b + 1);
    const table = fitTable(run, minGutter, cw);
    if (table && !flowsPast(table, rows) && !embedded(table, rows, minGutter)) {
      tables.push(table);
      i = floor = b + 1;
      continue;
    }
    // Not a table: side-by-side columns (a two-column page, a sidebar beside the text) are searched one by one.
    const cuts = zoneCuts(run, minGutter);
    if (cuts.length > 0 && depth < MAX_DEPTH) {
      const edges = [-Infinity, ...cuts, Infinity];
      for (let z = 0; z + 1 < edges.length; z++) {
        const zone = restrict(run, edges[z]!, edges[z + 1]!).flatMap((row) => row.fragments);
        tables.push(...findTables(zone, depth + 1));
      }
      i = floor = b + 1;
    } else {
      i = seed[0] + 1;
    }
  }
  return tables;
}

/** The non-empty cells of each column of `rows`, content words only, in reading order. */
function columnCells(rows: Row[], columns: Interval[]): Word[][][] {
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
function isLong(cells: Word[][]): boolean {
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
 * Where to cut a run that is not a table into zones to search on their own: at the gutters beside its columns
 * of running text (the sidebar stays whole, its own columns intact), or at every gutter when there are none.
 */
function zoneCuts(run: Row[], minGutter: number): number[] {
  const columns = columnsOf(run, minGutter);
  const long = columnCells(run, columns).map(isLong);
  const anyLong = long.some(Boolean);
  const cuts: number[] = [];
  for (let k = 0; k + 1 < columns.length; k++) {
    if (!anyLong || long[k] || long[k + 1]) cuts.push((columns[k]![1] + columns[k + 1]![0]) / 2);
  }
  return cuts;
}

/**
 * A column of running text that goes on above or below the table, beside it but not across it, is a column of
 * the page (the text next to a sidebar), not a column of the table.
 */
function flowsPast(table: Table, rows: Row[]): boolean {
  const height = (table.y1 - table.y0) / table.cells.length;
  const outside = rows.filter((row) => (row.y0 + row.y1) / 2 < table.y0 || (row.y0 + row.y1) / 2 > table.y1);
  return table.long.some((k) => {
    const [c0, c1] = table.columns[k]!;
    const left = k > 0 ? table.columns[k - 1]![1] : -Infinity;
    const right = k + 1 < table.columns.length ? table.columns[k + 1]![0] : Infinity;
    const flows = (row: Row) => {
      const words = rowWords(row).filter(isContent);
      const inside = words.filter((w) => (w.x0 + w.x1) / 2 >= c0 && (w.x0 + w.x1) / 2 <= c1);
      // Across the gutter's middle: a line of the page running over the table's width, not beside it.
      const across = words.some(
        (w) => (w.x0 < (left + c0) / 2 && w.x1 > left) || (w.x1 > (c1 + right) / 2 && w.x0 < right),
      );
      return inside.length > SHORT_CELL_WORDS && !across;
    };
    const near = (row: Row) => {
      const words = rowWords(row).filter((w) => isContent(w) && (w.x0 + w.x1) / 2 >= c0 && (w.x0 + w.x1) / 2 <= c1);
      return words.length > 0;
    };
    const above = outside.filter((row) => row.y1 <= table.y0 + height / 2 && near(row)).at(-1);
    const below = outside.find((row) => row.y0 >= table.y1 - height / 2 && near(row));
    return (
      (above !== undefined && table.y0 - above.y1 <= MAX_ROW_GAP * height && flows(above)) ||
      (below !== undefined && below.y0 - table.y1 <= MAX_ROW_GAP * height && flows(below))
    );
  });
}

/**
 * Rivers: in justified text, wide word spaces can line up over a few lines of a paragraph. A "table" whose
 * nearest lines above and below follow at its own line spacing and start and end where it does is such a stretch
 * of a paragraph; a real table stands apart from the text around it.
 */
function embedded(table: Table, rows: Row[], slack: number): boolean {
  const spans = table.cells.length;
  const height = (table.y1 - table.y0) / spans;
  const inside = rows.filter((row) => (row.y0 + row.y1) / 2 >= table.y0 && (row.y0 + row.y1) / 2 <= table.y1);
  const gaps = inside.slice(1).map((row, k) => row.y0 - inside[k]!.y1);
  const tight = median(gaps) + height / 2;
  // Justified: the paragraph's lines start and end where the "table" does.
  const wide = (row: Row) => {
    const words = rowWords(row).filter(isContent);
    return (
      Math.abs(Math.min(...words.map((w) => w.x0)) - table.x0) <= slack &&
      Math.abs(Math.max(...words.map((w) => w.x1)) - table.x1) <= slack
    );
  };
  const above = rows.filter((row) => row.y1 <= table.y0 + height / 2 && !inside.includes(row)).at(-1);
  const below = rows.find((row) => row.y0 >= table.y1 - height / 2 && !inside.includes(row));
  return (
    above !== undefined &&
    below !== undefined &&
    table.y0 - above.y1 <= tight &&
    below.y0 - table.y1 <= tight &&
    wide(above) &&
    wide(below)
  );
}

/**
 * Lines into visual rows: sorted by their middle, a line joins the row whose common band (the part all its
 * lines share) it overlaps by half the smaller height, if none of its words lies over a word of the row. The
 * common band, not the union, keeps a tall title line from gathering the small lines stacked beside it.
 */
function groupRows(fragments: Fragment[]): Row[] {
  const sorted = [...fragments].sort((a, b) => a.y0 + a.y1 - (b.y0 + b.y1));
  const rows: Row[] = [];
  for (const fragment of sorted) {
    let best: Row | undefined;
    let bestShare = 0;
    for (let r = rows.length - 1; r >= 0 && r >= rows.length - 4; r--) {
      const row = rows[r]!;
      if (collides(row, fragment)) continue;
      const overlap = Math.min(row.core1, fragment.y1) - Math.max(row.core0, fragment.y0);
      const share = overlap / Math.max(1e-9, Math.min(row.core1 - row.core0, fragment.y1 - fragment.y0));
      if (share > bestShare) {
        best = row;
        bestShare = share;
      }
    }
    if (best && bestShare >= ROW_OVERLAP) {
      best.fragments.push(fragment);
      best.y0 = Math.min(best.y0, fragment.y0);
      best.y1 = Math.max(best.y1, fragment.y1);
      best.core0 = Math.max(best.core0, fragment.y0);
      best.core1 = Math.min(best.core1, fragment.y1);
    } else {
      rows.push({ fragments: [fragment], y0: fragment.y0, y1: fragment.y1, core0: fragment.y0, core1: fragment.y1 });
    }
  }
  return rows;
}

/** Lines above one another (a skewed receipt) are not one row even when their bands overlap: cells sit side by side. */
function collides(row: Row, fragment: Fragment): boolean {
  const over = (a: Word, b: Word) =>
    Math.min(a.x1, b.x1) - Math.max(a.x0, b.x0) > 0.3 * Math.min(a.x1 - a.x0, b.x1 - b.x0);
  const placed = rowWords(row).filter((w) => w.kind !== "mark");
  return fragment.words.some((a) => a.kind !== "mark" && placed.some((b) => over(a, b)));
}

/** The median width of a character, from words of two or more characters (marks aside). */
function charWidth(fragments: Fragment[]): number {
  const widths: number[] = [];
  for (const fragment of fragments) {
    for (const word of fragment.words) {
      if (word.kind === "text" && word.text.length >= 2) widths.push((word.x1 - word.x0) / word.text.length);
    }
  }
  return median(widths);
}

function rowWords(row: Row): Word[] {
  return row.fragments.flatMap((f) => f.words);
}

/**
 * The x-ranges covered by the rows' words, merged and sorted. Only text decides where columns are; a lone thin
 * glyph in a gap between them counts when another row has one at the same place.
 */
function coverage(rows: Row[]): Interval[] {
  const spans: Interval[] = [];
  const thin: Interval[] = [];
  for (const row of rows) {
    for (const word of rowWords(row)) {
      if (word.kind === "text") spans.push([word.x0, word.x1]);
      else if (word.kind === "thin") thin.push([word.x0, word.x1]);
    }
  }
  const covered = mergeIntervals(spans);
  const inGap = (a: Interval) => !covered.some((c) => c[0] < a[1] && a[0] < c[1]);
  const lone = thin.filter(inGap);
  for (const glyph of lone) {
    const same = lone.filter((other) => other[0] < glyph[1] && glyph[0] < other[1]).length;
    if (same >= 2) spans.push(glyph);
  }
  return lone.length > 0 ? mergeIntervals(spans) : covered;
}

function isContent(word: Word): boolean {
  return word.kind === "text" || word.kind === "thin";
}

function mergeIntervals(spans: Interval[]): Interval[] {
  const sorted = [...spans].sort((a, b) => a[0] - b[0]);
  const merged: Interval[] = [];
  for (const [x0, x1] of sorted) {
    const last = merged[merged.length - 1];
    if (last && x0 <= last[1]) last[1] = Math.max(last[1], x1);
    else merged.push([x0, x1]);
  }
  return merged;
}

/** Uncovered x-ranges between the covered ones, at least `minGutter` wide. */
function guttersOf(covered: Interval[], minGutter: number): Interval[] {
  const gutters: Interval[] = [];
  for (let k = 1; k < covered.length; k++) {
    const g0 = covered[k - 1]![1];
    const g1 = covered[k]![0];
    if (g1 - g0 >= minGutter) gutters.push([g0, g1]);
  }
  return gutters;
}

function hasGutter(row: Row, minGutter: number): boolean {
  return guttersOf(coverage([row]), minGutter).length > 0;
}

/**
 * The first row from `from` that starts a seed: three close rows in two or more parts that share a gutter, with
 * at most one row in one part between two of them when it lies beside them (a line of the text next to a table,
 * set at another pitch) or within a later column (a wrapped cell). Returns [start, end] or null.
 */
function findSeed(rows: Row[], from: number, minGutter: number): [number, number] | null {
  for (let s = from; s + MIN_ROWS <= rows.length; s++) {
    if (!hasGutter(rows[s]!, minGutter)) continue;
    let parts = 1;
    let e = s;
    while (parts < MIN_ROWS && e + 1 < rows.length && e - s < 2 * MIN_ROWS - 2) {
      e++;
      if (hasGutter(rows[e]!, minGutter)) parts++;
      else if (!hasGutter(rows[e - 1]!, minGutter)) break;
    }
    if (parts < MIN_ROWS) continue;
    const window = rows.slice(s, e + 1);
    // A row in one part inside the seed must lie beside it (the text next to a table) or continue a cell of a
    // later column (a wrapped description), not start a row of its own.
    const parted = window.filter((row) => hasGutter(row, minGutter));
    const [x0, x1] = extent(parted);
    const columns = columnsOf(parted, minGutter);
    const fits = (row: Row) => {
      if (!overlapsExtent(row, x0, x1)) return true;
      const words = rowWords(row).filter(isContent);
      const k = columnIndex(words[0]!, columns);
      const right = columns[k + 1]?.[0] ?? Infinity;
      return k > 0 && words.every((w) => w.x0 > columns[k - 1]![1] && w.x1 < right);
    };
    if (!window.every((row) => parted.includes(row) || fits(row))) continue;
    const height = median(window.map((row) => row.y1 - row.y0));
    if (window.some((row, k) => k > 0 && row.y0 - window[k - 1]!.y1 > MAX_ROW_GAP * height)) continue;
    if (guttersOf(coverage(window), minGutter).length > 0) return [s, e];
  }
  return null;
}

function extent(rows: Row[]): Interval {
  const words = rows.flatMap(rowWords).filter(isContent);
  return [Math.min(...words.map((w) => w.x0)), Math.max(...words.map((w) => w.x1))];
}

function overlapsExtent(row: Row, x0: number, x1: number): boolean {
  return rowWords(row).some((w) => isContent(w) && w.x1 > x0 && w.x0 < x1);
}

/**
 * Extend the seed up and down while each added row keeps every column boundary (it may narrow a gutter, split
 * one, or sit in a single column, like a group label) and follows within a few row heights.
 */
function grow(rows: Row[], seed: [number, number], minGutter: number, floor: number): [number, number] {
  let [a, b] = seed;
  const height = median(rows.slice(a, b + 1).map((row) => row.y1 - row.y0));
  let covered = coverage(rows.slice(a, b + 1));
  let gutters = guttersOf(covered, minGutter);
  const tryAdd = (row: Row, gap: number): boolean => {
    if (gap > MAX_ROW_GAP * height) return false;
    const next = mergeIntervals([...covered, ...coverage([row])]);
    const nextGutters = guttersOf(next, minGutter);
    const keeps = gutters.every(([g0, g1]) => nextGutters.some(([h0, h1]) => h0 >= g0 - 1e-6 && h1 <= g1 + 1e-6));
    if (!keeps) return false;
    covered = next;
    gutters = nextGutters;
    return true;
  };
  while (b + 1 < rows.length && tryAdd(rows[b + 1]!, rows[b + 1]!.y0 - rows[b]!.y1)) b++;
  while (a > floor && tryAdd(rows[a - 1]!, rows[a]!.y0 - rows[a - 1]!.y1)) a--;
  return [a, b];
}

/** Rows keeping only the words whose middle lies in [x0, x1); rows left empty are dropped. */
function restrict(rows: Row[], x0: number, x1: number): Row[] {
  const out: Row[] = [];
  for (const row of rows) {
    const fragments = row.fragments
      .map((f) => ({ ...f, words: f.words.filter((w) => (w.x0 + w.x1) / 2 >= x0 && (w.x0 + w.x1) / 2 < x1) }))
      .filter((f) => f.words.length > 0);
    if (fragments.length > 0) out.push({ ...row, fragments });
  }
  return out;
}

/** Columns as the covered x-ranges between gutters. */
function columnsOf(rows: Row[], minGutter: number): Interval[] {
  const covered = coverage(rows);
  if (covered.length === 0) return [];
  const gutters = guttersOf(covered, minGutter);
  const columns: Interval[] = [];
  let start = covered[0]![0];
  for (const [g0, g1] of gutters) {
    columns.push([start, g0]);
    start = g1;
  }
  columns.push([start, covered[covered.length - 1]![1]]);
  return columns;
}

function columnIndex(word: Word, columns: Interval[]): number {
  const mid = (word.x0 + word.x1) / 2;
  return columns.findIndex(([c0, c1]) => mid >= c0 && mid <= c1);
}

function firstColumnFilled(row: Row, columns: Interval[]): boolean {
  return rowWords(row).some((word) => isContent(word) && columnIndex(word, columns) === 0);
}

function filledColumns(row: Row, columns: Interval[]): number {
  const filled = new Set<number>();
  for (const word of rowWords(row)) if (isContent(word)) filled.add(columnIndex(word, columns));
  filled.delete(-1);
  return filled.size;
}

/**
 * Settle a run's rows and columns, then judge it: rows at either end with fewer than two filled columns
 * (a caption, a note) are left out, and so are sparse outer columns; what remains is a table when it has at
 * least three rows of two or more cells, enough cells filled, and short or numeric cells in most columns.
 */
function fitTable(run: Row[], minGutter: number, cw: number): Table | null {
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

function median(values: number[]): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}
