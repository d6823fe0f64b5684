import { Fragment } from "react";
import type { ReferenceTable } from "@/lib/api-docs/reference";

/**
 * Inline Markdown whose only markup is backticks (the catalogue's `when`, the OpenAPI descriptions) as text and
 * `<code>`. A long name in it may wrap after an underscore (`MAX_QUEUED_PAGES_PER_ACCOUNT`), never inside a word.
 */
export function InlineMarkdown({ text }: { text: string }) {
  return (
    <>
      {text.split("`").map((part, index) =>
        index % 2 === 1 ? (
          <code key={index}>
            {part.split(/(?<=_)/).map((piece, p) => (
              <Fragment key={p}>
                {p > 0 && <wbr />}
                {piece}
              </Fragment>
            ))}
          </code>
        ) : (
          part
        ),
      )}
    </>
  );
}

/** docs/api.md leaves a description column's header empty; here it is named, for screen readers. */
const heading = (column: string) => (column ? column.charAt(0).toUpperCase() + column.slice(1) : "Description");

/**
 * One of the reference tables docs/api.md is generated with (lib/api-docs/reference.ts), as the page shows it. A cell that
 * is one name (a field, an error code) is never broken inside; names in longer text may wrap after an underscore.
 */
export function ReferenceTableView({ table, className }: { table: ReferenceTable; className?: string }) {
  return (
    <div className="table-wrap">
      <table className={className}>
        <thead>
          <tr>
            {table.columns.map((column, index) => (
              <th key={index}>{heading(column)}</th>
            ))}
          </tr>
        </thead>
        <tbody>
          {table.rows.map((row, index) => (
            <tr key={index}>
              {row.map((cell, column) => (
                <td key={column}>
                  {/^`[^`]*`$/.test(cell) ? <code>{cell.slice(1, -1)}</code> : <InlineMarkdown text={cell} />}
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
