import type { LedgerEntry } from "@/lib/credits";

/**
 * The ledger as CSV (RFC 4180): a header row, then one row per entry, newest first, CRLF line ends. Fields with a
 * comma, a quote or a line break are quoted, quotes doubled. Text that a spreadsheet would run as a formula (it
 * starts with `=`, `+`, `-`, `@`, a tab or a carriage return — a key name is the user's own text) gets a leading `'`.
 * Numbers are plain integers with an ASCII minus. No key is in it: a key's name and id only.
 */
export const LEDGER_CSV_HEADER = [
  "time",
  "change",
  "balance_after",
  "reason",
  "request_id",
  "key_name",
  "key_id",
  "format",
  "pages",
] as const;

const FORMULA_START = /^[=+\-@\t\r]/;
const NEEDS_QUOTES = /[",\r\n]/;

/** One CSV field: numbers as they are; text defused against formulas, then quoted when it must be. */
export function csvField(value: string | number | null | undefined): string {
  if (value === null || value === undefined) return "";
  if (typeof value === "number") return Number.isFinite(value) ? String(value) : "";
  const text = FORMULA_START.test(value) ? `'${value}` : value;
  return NEEDS_QUOTES.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

export function csvRow(fields: ReadonlyArray<string | number | null | undefined>): string {
  return `${fields.map(csvField).join(",")}\r\n`;
}

/** The fields of one entry, in {@link LEDGER_CSV_HEADER}'s order; `keyNames` maps key ids to names. */
export function ledgerCsvFields(
  entry: LedgerEntry,
  keyNames: ReadonlyMap<string, string>,
): Array<string | number | null> {
  return [
    entry.at,
    entry.delta,
    entry.balanceAfter,
    entry.reason,
    entry.requestId ?? null,
    entry.keyId ? (keyNames.get(entry.keyId) ?? null) : null,
    entry.keyId ?? null,
    entry.format ?? null,
    entry.pages ?? null,
  ];
}

/** `ocr-ledger-2026-11-23.csv`, or `ocr-ledger-key_…-2026-11-23.csv` for one key's entries. */
export function ledgerCsvFilename(now: Date, keyId?: string | null): string {
  return `ocr-ledger-${keyId ? `${keyId}-` : ""}${now.toISOString().slice(0, 10)}.csv`;
}
