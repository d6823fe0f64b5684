/**
 * The word geometry table detection (tables.ts) works on: a page's words with their kind (text, a thin glyph that may
 * be a rule, a mark, a currency or percent sign), its lines grouped into visual rows, and the x-ranges the rows' words
 * cover, whose uncovered stretches are the gutters between columns. Nothing here decides what is a table: that is
 * tables.ts (where a run of rows starts and ends) and table-fit.ts (its cells, and whether they make a table).
 */
/** Where a word sits in its page: `page.blocks[block].lines[line].words[word]`. */
export interface WordRef {
  block: number;
  line: number;
  word: number;
}

/** A line joins a row when it overlaps the row by this share of the smaller height. */
const ROW_OVERLAP = 0.5;

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
export const CURRENCY = /^[$€£¥§]$/;
const PERCENT = /^%$/;

type Kind = "text" | "thin" | "mark" | "currency" | "percent";

export interface Word {
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

export interface Fragment {
  words: Word[];
  y0: number;
  y1: number;
}

export interface Row {
  fragments: Fragment[];
  y0: number;
  y1: number;
  /** The band every line of the row covers. */
  core0: number;
  core1: number;
}

export type Interval = [number, number];

export function kindOf(text: string): Kind {
  if (MARK.test(text)) return "mark";
  if (THIN.test(text)) return "thin";
  if (CURRENCY.test(text)) return "currency";
  if (PERCENT.test(text)) return "percent";
  return "text";
}

/**
 * Lines into visual rows: sorted by their middle, a line joins the row whose common band (the part all its
 * lines share) it overlaps by half the smaller height, if none of its words lies over a word of the row. The
 * common band, not the union, keeps a tall title line from gathering the small lines stacked beside it.
 */
export function groupRows(fragments: Fragment[]): Row[] {
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
export function charWidth(fragments: Fragment[]): number {
  const widths: number[] = [];
  for (const fragment of fragments) {
    for (const word of fragment.words) {
      if (word.kind === "text" && word.text.length >= 2) widths.push((word.x1 - word.x0) / word.text.length);
    }
  }
  return median(widths);
}

export function rowWords(row: Row): Word[] {
  return row.fragments.flatMap((f) => f.words);
}

/**
 * The x-ranges covered by the rows' words, merged and sorted. Only text decides where columns are; a lone thin
 * glyph in a gap between them counts when another row has one at the same place.
 */
export function coverage(rows: Row[]): Interval[] {
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

export function isContent(word: Word): boolean {
  return word.kind === "text" || word.kind === "thin";
}

export function mergeIntervals(spans: Interval[]): Interval[] {
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
export function guttersOf(covered: Interval[], minGutter: number): Interval[] {
  const gutters: Interval[] = [];
  for (let k = 1; k < covered.length; k++) {
    const g0 = covered[k - 1]![1];
    const g1 = covered[k]![0];
    if (g1 - g0 >= minGutter) gutters.push([g0, g1]);
  }
  return gutters;
}

export function hasGutter(row: Row, minGutter: number): boolean {
  return guttersOf(coverage([row]), minGutter).length > 0;
}

export function extent(rows: Row[]): Interval {
  const words = rows.flatMap(rowWords).filter(isContent);
  return [Math.min(...words.map((w) => w.x0)), Math.max(...words.map((w) => w.x1))];
}

export function overlapsExtent(row: Row, x0: number, x1: number): boolean {
  return rowWords(row).some((w) => isContent(w) && w.x1 > x0 && w.x0 < x1);
}

/** Rows keeping only the words whose middle lies in [x0, x1); rows left empty are dropped. */
export function restrict(rows: Row[], x0: number, x1: number): Row[] {
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
export function columnsOf(rows: Row[], minGutter: number): Interval[] {
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

export function columnIndex(word: Word, columns: Interval[]): number {
  const mid = (word.x0 + word.x1) / 2;
  return columns.findIndex(([c0, c1]) => mid >= c0 && mid <= c1);
}

export function firstColumnFilled(row: Row, columns: Interval[]): boolean {
  return rowWords(row).some((word) => isContent(word) && columnIndex(word, columns) === 0);
}

export function filledColumns(row: Row, columns: Interval[]): number {
  const filled = new Set<number>();
  for (const word of rowWords(row)) if (isContent(word)) filled.add(columnIndex(word, columns));
  filled.delete(-1);
  return filled.size;
}

export function median(values: number[]): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}
