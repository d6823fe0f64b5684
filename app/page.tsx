import Link from "next/link";

export default function HomePage() {
  return (
    <article className="prose">
      <h1>Images and PDFs to text, in one call</h1>
      <p>
        Send a PDF, JPEG, PNG, WebP or TIFF — as base64 or as a URL — and get its text back in the same response, as
        plain text, Markdown or a JSON document with pages, blocks, lines, words, confidences and bounding boxes.
        Born-digital PDFs are read from their text layer; scans and photos are read by Tesseract with layout analysis.
      </p>
      <ul>
        <li>
          <strong>REST:</strong> <code>POST /api/ocr/process</code>
        </li>
        <li>
          <strong>MCP:</strong> <code>/api/mcp</code> with the tool <code>extract_text</code> (Streamable HTTP and SSE)
        </li>
        <li>One credit per page read; failed requests cost nothing.</li>
      </ul>
      <p>
        <Link href="/settings" className="button">
          Get an API key
        </Link>{" "}
        <Link href="/docs">Read the API reference</Link>
      </p>
      <pre>
        <code>{`curl -sS --fail-with-body https://<host>/api/ocr/process \\
  -H "x-api-key: $OCR_API_KEY" -H "content-type: application/json" \\
  -d '{"imageUrl": "https://example.com/scan.pdf", "options": {"format": "markdown"}}'`}</code>
      </pre>
    </article>
  );
}
