import type { ReactNode } from "react";

/** A column head: its text, or `hidden` for a column whose head only a screen reader says (actions). */
export interface Column {
  label: string;
  className?: string;
  hidden?: boolean;
}

/**
 * The settings page's tables (keys, jobs, deliveries, ledger): a scrolling wrapper, a caption for screen readers and
 * one row of column heads. With `labelledBy` (the id of the section's heading) the wrapper is a focusable region, so
 * a wide table can be scrolled from the keyboard.
 */
export function DataTable({
  className,
  caption,
  columns,
  labelledBy,
  children,
}: {
  className: string;
  caption: string;
  columns: Column[];
  labelledBy?: string;
  children: ReactNode;
}) {
  const region = labelledBy ? { tabIndex: 0, role: "region", "aria-labelledby": labelledBy } : {};
  return (
    <div className="table-wrap" {...region}>
      <table className={className}>
        <caption className="visually-hidden">{caption}</caption>
        <thead>
          <tr>
            {columns.map((column) => (
              <th key={column.label} scope="col" className={column.className}>
                {column.hidden ? <span className="visually-hidden">{column.label}</span> : column.label}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>{children}</tbody>
      </table>
    </div>
  );
}

/** An empty cell. */
export function Dash() {
  return <span className="muted">—</span>;
}

/**
 * A destructive action confirmed without JavaScript: the real button is behind a disclosure (`summary`), with
 * `children` saying what it does. Posts `name=value` to `action`.
 */
export function ConfirmAction({
  summary,
  button,
  action,
  name,
  value,
  children,
}: {
  summary: string;
  button: string;
  action: (form: FormData) => void | Promise<void>;
  name: string;
  value: string;
  children: ReactNode;
}) {
  return (
    <details className="revoke">
      <summary>{summary}</summary>
      <div className="revoke-confirm">
        <p>{children}</p>
        <form action={action}>
          <input type="hidden" name={name} value={value} />
          <button type="submit" className="danger">
            {button}
          </button>
        </form>
      </div>
    </details>
  );
}
