import type { Metadata } from "next";
import { headers } from "next/headers";
import Link from "next/link";
import { CodeExample } from "@/app/components/code-example";
import { ReferenceTableView } from "@/app/docs/reference-table";
import { getOpenApiDocument } from "@/lib/api-docs/openapi";
import { referenceTables, type ReferenceTable } from "@/lib/api-docs/reference";
import { getEnv, type Env } from "@/lib/env";
import { cliExample, jobExamples, mcpExamples, mcpSignInExamples, restExamples } from "@/lib/api-docs/examples";
import { requestOrigin } from "@/lib/http";
import { formatMegabytes } from "@/lib/input";
import { webhookSettings } from "@/lib/webhooks/settings";

export const metadata: Metadata = { title: "Documentation" };

/** The product's manual: every example carries this server's own address. */
export default async function DocsPage() {
  // A Host that is not a plain host name never reaches the examples (they are pasted into shells).
  const origin = requestOrigin(await headers()) ?? "https://ocr.example.com";
  const target = { origin };
  const env = getEnv();
  const inlineLimit = formatMegabytes(env.MAX_INLINE_BYTES);
  // The reference tables of docs/api.md, from the same OpenAPI document (lib/api-docs/reference.ts). All take the error
  // table's layout (app/globals.css `.error-table`): names never broken inside; on a phone, what a row means under
  // its name and type.
  const reference = referenceTables(getOpenApiDocument(getEnv()));
  return (
    <article className="prose docs">
      <h1>Documentation</h1>
      <p>
        Send a PDF, JPEG, PNG, WebP or TIFF and get its text back in the same response. This server is{" "}
        <code>{origin}</code>. Create an API key on the <Link href="/settings">settings page</Link>, then export it for
        the examples below: <code>export OCR_API_KEY=ocr_…</code>. Each page read costs one credit; a failed request
        costs nothing.
      </p>
      <nav aria-label="On this page" className="toc">
        <a href="#rest">REST</a> <a href="#request">Request and response</a> <a href="#jobs">Jobs</a>{" "}
        <a href="#errors">Errors</a> <a href="#mcp">MCP clients</a> <a href="#cli">Command line</a>
      </nav>

      <h2 id="rest">REST: POST /api/ocr/process</h2>
      <p>
        Authenticate with <code>x-api-key: &lt;key&gt;</code> or <code>Authorization: Bearer &lt;key&gt;</code>. The
        sample documents are in the repository&apos;s <code>public/samples/</code> and served by this server at{" "}
        <a href="/samples/scan.png">/samples/scan.png</a>, <a href="/samples/scan.pdf">/samples/scan.pdf</a> and{" "}
        <a href="/samples/report.pdf">/samples/report.pdf</a>. An <code>imageUrl</code> naming one of these on this
        server is read from the server&apos;s own copy rather than downloaded, so the URL examples work on a local
        server too. Any other local or private address is refused (the server fetches URLs itself, so it must not reach
        your network); a self-hoster lets chosen hosts through with <code>URL_ALLOW_HOSTS</code>. Each example exits
        non-zero when the service answers an error.
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
        The file comes itself — <code>multipart/form-data</code> with a <code>file</code> field and the options as
        fields (<code>-F format=markdown</code>), or the raw bytes with their type (<code>application/pdf</code>,{" "}
        <code>image/jpeg</code>, <code>image/png</code>, <code>image/webp</code>, <code>image/tiff</code>) and the
        options in the query (<code>?format=markdown&amp;pages=1-3</code>) — or as JSON with exactly one of{" "}
        <code>image</code> (base64) and <code>imageUrl</code> (public http(s), at most 25 MB; 200 MB as a job). A file
        in the request may be {inlineLimit}; larger, send its URL. On Vercel the platform refuses request bodies over
        4.5 MB, so there send files over 4 MB (3.3 MB as base64) by <code>imageUrl</code>. The type is read from the
        bytes. <code>format</code> is <code>text</code> (default; pages separated by a form feed), <code>markdown</code>
        , <code>json</code> (pages, blocks, lines and words with confidences 0–100 and bounding boxes normalized to
        0–1), <code>hocr</code> (hOCR 1.2), <code>alto</code> (ALTO 4 XML), <code>tsv</code> (Tesseract&apos;s table of
        words) or <code>pdf</code> (a searchable PDF: each scanned page with an invisible text layer on its words, pages
        with their own text layer copied as they are; base64 in <code>extractedText</code> up to 3 MB, under the 4.5 MB
        response limit, otherwise <code>413</code>: submit a job and download{" "}
        <code>GET /api/ocr/jobs/{"{id}"}/result?format=pdf</code>). All are rendered from one reading, so they list the
        same words; word boxes are in the coordinates of the page as you sent it. Send an <code>Idempotency-Key</code>{" "}
        header to retry safely: a retry replays the first answer and is not charged again.
      </p>
      <h3 id="request-fields">Request fields (JSON)</h3>
      <ReferenceTableView table={reference["request-fields"]!} className="error-table" />
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
      <h3 id="response-fields">Response fields</h3>
      <ReferenceTableView table={reference["response-fields"]!} className="error-table" />

      <JobsSection target={target} jobFields={reference["job-fields"]!} env={env} />

      <h2 id="errors">Errors</h2>
      <p>
        Every failure is <code>{`{"success": false, "error": {"code", "message"}, "requestId"}`}</code> with the status
        below:
      </p>
      <ReferenceTableView table={reference.errors!} className="error-table" />

      <h2 id="mcp">MCP clients</h2>
      <p>
        <code>{origin}/api/mcp</code> is an MCP server with the tool <code>extract_text</code> (
        <code>{`image_source: { type: "base64" | "url", data, filename? }`}</code>, <code>pages</code>,{" "}
        <code>max_chars</code>, <code>output_format</code>): the same engine, credits and keys. <code>POST</code> speaks
        Streamable HTTP with JSON replies; <code>GET</code> with <code>Accept: text/event-stream</code> opens the
        2024-11-05 SSE transport for older clients. An answer holds at most <code>max_chars</code> characters (20 000 by
        default) and a cursor for the rest. A tool call has 28 s: a document longer than one call reads becomes a job,
        whose text the second tool, <code>get_extraction</code> (<code>cursor</code>, or <code>job_id</code>;{" "}
        <code>max_chars</code>), hands out in slices as its pages are read. Clients that support MCP tasks (2025-11-25)
        may call <code>extract_text</code> as a task and use <code>tasks/get</code>, <code>tasks/result</code> and{" "}
        <code>tasks/cancel</code>; the task is the job, its unread pages refunded on cancel.
      </p>
      <h3 id="mcp-sign-in">Add to claude.ai, ChatGPT, Cursor, VS Code, Claude Code: sign in, no key</h3>
      <p>
        Paste <code>{origin}/api/mcp</code> into the client. Its first request is answered <code>401</code> with where
        to sign in (OAuth 2.1: authorization code with PKCE, the MCP authorization spec); the client opens the browser
        on this site, you sign in or sign up and allow the app, and it reads documents with your credits. Settings →
        Connected apps lists the apps you allowed, each with Revoke.
      </p>
      {mcpSignInExamples(target).map((example) => (
        <CodeExample key={example.id} example={example} />
      ))}
      <h3 id="mcp-api-key">With an API key</h3>
      <p>
        For scripts and clients that take a header: the key in <code>x-api-key</code> (or{" "}
        <code>Authorization: Bearer</code>), on both transports.
      </p>
      {mcpExamples(target).map((example) => (
        <CodeExample key={example.id} example={example} />
      ))}

      <h2 id="cli">Command line</h2>
      <CodeExample example={cliExample(target)} />
    </article>
  );
}

/** Asynchronous jobs: when to use one, the routes in a paragraph, the job's fields, and the examples that submit, poll and fetch. */
function JobsSection({
  target,
  jobFields,
  env,
}: {
  target: { origin: string };
  jobFields: ReferenceTable;
  env: Pick<Env, "MAX_PDF_PAGES" | "REQUEST_DEADLINE_MS" | "MAX_JOB_PAGES" | "MAX_JOB_URL_BYTES" | "JOB_RESULT_TTL">;
}) {
  return (
    <>
      <h2 id="jobs">Asynchronous jobs: long documents</h2>
      <p>
        One request reads at most {env.MAX_PDF_PAGES} PDF pages that need OCR (a page read from its text layer counts a
        tenth of one) within {env.REQUEST_DEADLINE_MS / 1000} s. For more, or for files too large to send inline, submit
        a job: <code>POST /api/ocr/jobs</code> takes the same body and answers <code>202 Accepted</code> at once with
        the job and its <code>Location</code> (or send <code>Prefer: respond-async</code> to{" "}
        <code>/api/ocr/process</code>). A job reads up to {env.MAX_JOB_PAGES} pages, from an <code>imageUrl</code> of up
        to {formatMegabytes(env.MAX_JOB_URL_BYTES)}.
      </p>
      <p>
        Poll <code>GET /api/ocr/jobs/{"{id}"}</code> as often as its <code>Retry-After</code> header says, until the
        status is <code>succeeded</code> (at least one page read; see <code>pagesFailed</code>), <code>failed</code> or{" "}
        <code>cancelled</code>. Then fetch <code>GET /api/ocr/jobs/{"{id}"}/result</code>: a result of more than about 4
        MB comes in parts, each naming the next in <code>next</code> (and a <code>Link</code> header) until it is null;{" "}
        <code>?format=pdf</code> answers the searchable PDF itself, streamed whole as <code>application/pdf</code>.
        Every page is reserved when the job is accepted and charged when it is read; pages that fail or are cancelled (
        <code>DELETE /api/ocr/jobs/{"{id}"}</code>) come back when the job ends. Results are kept{" "}
        {Math.round(env.JOB_RESULT_TTL / 3600)} h after the job ends, then <code>410</code>.{" "}
        <code>GET /api/ocr/jobs</code> lists the account&apos;s jobs.
      </p>
      <p id="webhooks">
        Or let the job tell you: add <code>{`"webhook": {"url": "https://…"}`}</code> to the body (or set a default URL
        on the settings page), and when it ends the service POSTs a <code>job.succeeded</code>, <code>job.failed</code>{" "}
        or <code>job.cancelled</code> event there — the job&apos;s id, status, pages, credits and result URL, never its
        text — signed per Standard Webhooks with the account&apos;s secret (created on the settings page; verify with
        the <code>standardwebhooks</code> package for Node or Python). A delivery is a <code>2xx</code> answer within{" "}
        {webhookSettings().timeoutMs / 1000} s; failed ones are retried for about a day with the same{" "}
        <code>webhook-id</code>. The job&apos;s status lists its last attempts in <code>webhook.deliveries</code>. A job
        cancelled before any page was read sends no event; a receiver that keeps failing is paused, and disabled after 5
        days until you re-enable it on the <Link href="/settings#webhooks">settings page</Link>.
      </p>
      <h3 id="job-fields">The job</h3>
      <ReferenceTableView table={jobFields} className="error-table" />
      {jobExamples(target).map((example) => (
        <CodeExample key={example.id} example={example} />
      ))}
    </>
  );
}
