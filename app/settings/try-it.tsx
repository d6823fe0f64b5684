import { CopyButton } from "./copy-button";
import { trySnippets } from "./snippets";

/** Ready-to-run examples with the new key and this server's origin, each with a copy button (no inline styles). */
export function TryIt({ apiKey, origin }: { apiKey: string; origin: string }) {
  return (
    <section className="try-it stack" aria-labelledby="try-it-heading">
      <h3 id="try-it-heading">Try it</h3>
      <p className="hint">
        Filled in with your new key and this server, <code>{origin}</code>. They hold the key, so like the key they are
        shown only now. More clients and languages are in the <a href="/docs">API reference</a>.
      </p>
      {trySnippets({ key: apiKey, origin }).map((snippet) => (
        <div key={snippet.id} className="snippet" data-snippet={snippet.id}>
          <div className="snippet-head">
            <h4 id={`snippet-${snippet.id}`}>{snippet.title}</h4>
            <CopyButton text={snippet.code} ariaLabel={snippet.copyLabel} />
          </div>
          {snippet.note && <p className="hint">{snippet.note}</p>}
          <pre className="snippet-code" tabIndex={0} aria-labelledby={`snippet-${snippet.id}`}>
            <code>{snippet.code}</code>
          </pre>
        </div>
      ))}
    </section>
  );
}
