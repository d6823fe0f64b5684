import type { Example } from "@/lib/api-docs/examples";
import { CopyButton } from "../settings/copy-button";

/** One copy-paste example: its title, a note, the code in a box that scrolls on its own, and a copy button. */
export function CodeExample({ example }: { example: Example }) {
  return (
    <section className="example" aria-labelledby={`example-${example.id}`} data-example={example.id}>
      <div className="example-head">
        <h3 id={`example-${example.id}`}>{example.title}</h3>
        <CopyButton text={example.code} label="Copy" />
      </div>
      {example.note && <p className="hint">{example.note}</p>}
      <pre>
        <code data-language={example.language}>{example.code}</code>
      </pre>
    </section>
  );
}
