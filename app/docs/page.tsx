import type { Metadata } from "next";

export const metadata: Metadata = { title: "API reference" };

const errors: Array<[number, string, string]> = [
  [400, "invalid_request", "bad JSON, schema violation, both or neither inputs, bad base64, URL not allowed"],
  [401, "unauthorized", "no key, unknown key, revoked key"],
  [402, "insufficient_credits", "balance below the pages the request needs (checked before any OCR)"],
  [404, "not_found", "unknown or expired MCP SSE session"],
  [405, "method_not_allowed", "wrong method for the path"],
  [409, "conflict", "a request with the same Idempotency-Key is still in progress"],
  [413, "payload_too_large", "body, file, page count or pixel count over its limit"],
  [415, "unsupported_media_type", "the bytes are not PDF, JPEG, PNG or WebP"],
  [422, "unreadable_document", "corrupt or truncated file, encrypted PDF, zero pages"],
  [422, "idempotency_mismatch", "an Idempotency-Key reused with a different body"],
  [429, "rate_limited", "per-key rate limit; see Retry-After"],
  [502, "fetch_failed", "imageUrl could not be fetched"],
  [503, "overloaded", "OCR queue full; see Retry-After"],
  [503, "unavailable", "the account store is unreachable"],
  [504, "timeout", "the request deadline passed"],
  [500, "internal_error", "anything else"],
];

export default function DocsPage() {
  return (
    <article className="prose">
      <h1>API reference</h1>
      <p>
        Authenticate with <code>x-api-key: &lt;key&gt;</code> or <code>Authorization: Bearer &lt;key&gt;</code>.
        Create keys on the <a href="/settings">settings page</a>. The machine-readable description is{" "}
        <a href="/api/openapi.json">/api/openapi.json</a>.
      </p>
      <h2>POST /api/ocr/process</h2>
      <pre>
        <code>{`{ "image": "<base64 or data URL>", "options": { "format": "text" } }
{ "imageUrl": "https://example.com/scan.pdf",
  "options": { "format": "markdown", "language": "eng+fra", "pages": "1-3,5" } }`}</code>
      </pre>
      <p>
        Exactly one of <code>image</code> and <code>imageUrl</code>. The type is read from the bytes: PDF, JPEG, PNG
        or WebP. <code>format</code> is <code>text</code> (default; pages separated by a form feed),{" "}
        <code>markdown</code> or <code>json</code> (a serialized document of pages, blocks, lines and words with
        confidences 0–100 and bounding boxes normalized to 0–1).
      </p>
      <pre>
        <code>{`{ "success": true, "userId": "usr_…", "inputSource": "base64", "extractedText": "…",
  "confidence": 91.4, "processingTime": 812, "creditsUsed": 1, "pageCount": 1, "requestId": "req_…" }`}</code>
      </pre>
      <p>
        <code>processingTime</code> is in milliseconds. <code>creditsUsed</code> is one per page read; failed
        requests cost nothing. Send an <code>Idempotency-Key</code> header to retry safely.
      </p>
      <h2>GET /api/credits</h2>
      <p>
        The balance of the key&apos;s account, free of charge: <code>{`{ "success": true, "userId": "usr_…", "balance": 97 }`}</code>,
        also in the <code>x-credits-remaining</code> header (which every OCR answer carries too).
      </p>
      <h2>Errors</h2>
      <p>
        Every failure is <code>{`{"success": false, "error": {"code", "message"}, "requestId"}`}</code>:
      </p>
      <table>
        <thead>
          <tr>
            <th>Status</th>
            <th>Code</th>
            <th>When</th>
          </tr>
        </thead>
        <tbody>
          {errors.map(([status, code, when]) => (
            <tr key={code}>
              <td>{status}</td>
              <td>
                <code>{code}</code>
              </td>
              <td>{when}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <h2>MCP</h2>
      <p>
        <code>POST /api/mcp</code> speaks Streamable HTTP (JSON replies); <code>GET /api/mcp</code> with{" "}
        <code>Accept: text/event-stream</code> opens the 2024-11-05 SSE transport. One tool,{" "}
        <code>extract_text</code>, takes <code>image_source: {`{ type: "base64" | "url", data, filename? }`}</code>{" "}
        and <code>output_format</code>.
      </p>
    </article>
  );
}
