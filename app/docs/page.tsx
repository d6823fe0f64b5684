import type { Metadata } from "next";
import { headers } from "next/headers";
import Link from "next/link";
import { CodeExample } from "@/app/components/code-example";
import { errorCatalogue, errorCodes } from "@/lib/error-catalogue";
import { cliExample, mcpExamples, restExamples } from "@/lib/examples";
import { requestOrigin } from "@/lib/http";

export const metadata: Metadata = { title: "Documentation" };

/** A catalogue `when` (inline Markdown whose only markup is backticks) as text and `<code>`. */
function InlineMarkdown({ text }: { text: string }) {
  return <>{text.split("`").map((part, index) => (index % 2 === 1 ? <code key={index}>{part}</code> : part))}</>;
}

/** The product's manual: every example carries this server's own address. */
export default async function DocsPage() {
  // A Host that is not a plain host name never reaches the examples (they are pasted into shells).
  const origin = requestOrigin(await headers()) ?? "https://ocr.example.com";
  const target = { origin };
  return (
    <article className="prose docs">
      <h1>Documentation</h1>
      <p>
        Send a PDF, JPEG, PNG or WebP and get its text back in the same response. This server is{" "}
        <code>{origin}</code>. Create an API key on the <Link href="/settings">settings page</Link>, then export it
        for the examples below: <code>export OCR_API_KEY=ocr_…</code>. Each page read costs one credit; a failed
        request costs nothing.
      </p>
      <nav aria-label="On this page" className="toc">
        <a href="#rest">REST</a> <a href="#request">Request and response</a> <a href="#errors">Errors</a>{" "}
        <a href="#mcp">MCP clients</a> <a href="#cli">Command line</a>
      </nav>

      <h2 id="rest">REST: POST /api/ocr/process</h2>
      <p>
        Authenticate with <code>x-api-key: &lt;key&gt;</code> or <code>Authorization: Bearer &lt;key&gt;</code>. The
        sample documents are in the repository&apos;s <code>public/samples/</code> and served by this server at{" "}
        <a href="/samples/scan.png">/samples/scan.png</a>, <a href="/samples/scan.pdf">/samples/scan.pdf</a> and{" "}
        <a href="/samples/report.pdf">/samples/report.pdf</a>.
      </p>
      {restExamples(target).map((example) => (
        <CodeExample key={example.id} example={example} />
      ))}

      <h2 id="request">Request and response</h2>
      <pre>
        <code>{`{ "image": "<base64 or data URL>", "options": { "format": "text" } }
{ "imageUrl": "${origin}/samples/report.pdf",
  "options": { "format": "markdown", "language": "eng+fra", "pages": "1-3,5" } }`}</code>
      </pre>
      <p>
        Exactly one of <code>image</code> (at most 3 MB decoded) and <code>imageUrl</code> (public http(s), at most
        25 MB). The type is read from the bytes. <code>format</code> is <code>text</code> (default; pages separated by
        a form feed), <code>markdown</code> or <code>json</code> (pages, blocks, lines and words with confidences
        0–100 and bounding boxes normalized to 0–1). Send an <code>Idempotency-Key</code> header to retry safely: a
        retry replays the first answer and is not charged again.
      </p>
      <pre>
        <code>{`{ "success": true, "userId": "usr_…", "inputSource": "base64", "extractedText": "…",
  "confidence": 91.4, "processingTime": 812, "creditsUsed": 1, "pageCount": 1, "requestId": "req_…" }`}</code>
      </pre>
      <p>
        <code>processingTime</code> is in milliseconds. <code>GET /api/credits</code> returns the key&apos;s balance for
        free (<code>{`{ "success": true, "balance": 97 }`}</code>); every answer also carries{" "}
        <code>x-credits-remaining</code>. The machine-readable description is{" "}
        <a href="/api/openapi.json">/api/openapi.json</a>.
      </p>

      <h2 id="errors">Errors</h2>
      <p>
        Every failure is <code>{`{"success": false, "error": {"code", "message"}, "requestId"}`}</code> with the
        status below:
      </p>
      <div className="table-wrap">
        <table>
          <thead>
            <tr>
              <th>Status</th>
              <th>Code</th>
              <th>When</th>
            </tr>
          </thead>
          <tbody>
            {errorCodes.map((code) => (
              <tr key={code}>
                <td>{errorCatalogue[code].status}</td>
                <td>
                  <code>{code}</code>
                </td>
                <td>
                  <InlineMarkdown text={errorCatalogue[code].when} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>

      <h2 id="mcp">MCP clients</h2>
      <p>
        <code>{origin}/api/mcp</code> is an MCP server with one tool, <code>extract_text</code>{" "}
        (<code>{`image_source: { type: "base64" | "url", data, filename? }`}</code>, <code>output_format</code>): the
        same engine, credits and keys. <code>POST</code> speaks Streamable HTTP with JSON replies; <code>GET</code> with{" "}
        <code>Accept: text/event-stream</code> opens the 2024-11-05 SSE transport for older clients. A tool call has
        28 s; long scans belong on the REST endpoint.
      </p>
      {mcpExamples(target).map((example) => (
        <CodeExample key={example.id} example={example} />
      ))}

      <h2 id="cli">Command line</h2>
      <CodeExample example={cliExample(target)} />
    </article>
  );
}
