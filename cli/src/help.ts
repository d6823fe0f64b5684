export const MAIN_HELP = `ocr — the OCR service from a terminal, and a stdio MCP bridge for MCP hosts

Usage:
  ocr extract <file-or-url>... [options]   read text from images and PDFs (big ones as asynchronous jobs)
  ocr jobs list | get ID | result ID | cancel ID   the account's asynchronous jobs
  ocr balance                              print the account's credit balance
  ocr mcp                                  run a stdio MCP server that forwards to the service
  ocr webhooks verify --file saved.json    check a saved webhook delivery against the signing secret
  ocr <command> --help                     options of one command

Configuration (every command):
  --base-url URL      the service (env OCR_BASE_URL; default http://localhost:3000)
  --timeout MS        per HTTP attempt, e.g. 30000, 45s, 2m (default 30000)
  --retries N         retries of transient failures: network, timeout, 429, 502, 503, 504 (default 3)
  --api-key KEY       only if you must: it lands in your shell history and in \`ps\`. Prefer the environment:
  FETCH_MCP_SERVER_API_KEY   the API key (OCR_API_KEY is read too); create one on the service's /settings page

Exit codes: 0 ok, 1 other failure, 2 usage, 3 authentication (401/403, no key), 4 credits (402),
            5 input (a file the CLI or the service refused: 400, 404, 410, 413, 415, 422),
            130 interrupted (Ctrl-C; a job being waited for goes on)

  -h, --help          this help
  --version           the CLI's version`;

export const EXTRACT_HELP = `Usage: ocr extract <file-or-url>... [options]

Reads the text of PDF, JPEG, PNG, WebP and TIFF files. A local file is sent to the service as the request's body
if it is at most 20 MiB (OCR_MAX_INLINE_BYTES; a server on Vercel takes 4 MiB); a larger one is refused with exit
code 5 — put it at a public http(s) URL and pass the URL, which the service downloads (up to 25 MB per request,
200 MB as a job). ocr never uploads a file anywhere else by itself. \`-\` reads a file from stdin.

The service is asked to answer within the timeout (Prefer: respond-async, wait=N, N = --timeout less 5 s): a
document it expects to take longer becomes an asynchronous job at once. One past the synchronous limits (more
than 50 pages that need OCR, a URL file over 25 MB, or not read in time: a 504, or no answer within --timeout)
is sent again as a job. Either way its pages' progress is shown on stderr
(a bar on a terminal, a line every 10 s otherwise) until its text is written. Ctrl-C stops waiting, not the
job: ocr prints its id, and \`ocr jobs result ID\` gets its text later.

One input: the text goes to stdout. Several inputs (or --out): one <name>.<ext> file each, in --out
(default: the current directory); a name already used in the run gets -2, -3, ….

Options:
  -f, --format FMT      text (default), json (pages, blocks, lines, words with boxes), markdown, hocr, alto
                        (ALTO 4 XML), tsv (Tesseract's word table) or pdf (a searchable PDF: the scan with an
                        invisible text layer; written as binary, so give -o FILE.pdf or redirect stdout)
  -p, --pages RANGE     PDF pages, 1-based: 1-3,5 or 7- (default: all; only those are charged)
  -l, --lang CODES      Tesseract languages, e.g. eng or eng+deu (default: the service's, auto)
  -o, --out DIR         write <name>.txt / .json / .md / .hocr / .xml / .tsv / .pdf files here (created if
                        missing); with one input, a path ending in the format's extension is the file itself
  -c, --concurrency N   documents in flight at once (default 2, at most 8)
  -v, --verbose         per file on stderr: credits used and remaining, confidence, time, retries
  --base-url, --timeout, --retries, --api-key: see \`ocr --help\`

Each document is one request with its own Idempotency-Key, retried with the same key on network errors,
429, 502 and 503 (waiting for Retry-After), so a retry is never charged twice; a read that timed out is not
retried (it would take as long again): it goes as a job, or with --sync fails saying so. Errors go to
stderr as "ocr: <input>: <code>: <message> (request <id>)". After a 401 or 402 the remaining inputs are not sent.

Exit codes: 0 all done; else the code of the first input that failed: 1 other, 3 auth, 4 credits, 5 input;
130 interrupted.

Examples:
  ocr extract scan.png
  ocr extract report.pdf --pages 1-3 --format markdown > report.md
  ocr extract https://example.com/big-scan.pdf --lang eng+deu
  ocr extract invoices/*.pdf --format json --out extracted/
  ocr extract scan.png --format pdf -o scan-searchable.pdf
  ocr extract https://example.com/book.pdf --webhook https://example.com/hooks/ocr`;

export const WEBHOOKS_HELP = `Usage: ocr webhooks verify --secret whsec_… (--file saved.json | --headers FILE --body FILE)

Checks a delivery your receiver saved against the account's webhook signing secret, with the standardwebhooks
package (what your receiver should use too): that its webhook-signature signs its webhook-id, webhook-timestamp
and body. Prints the event's JSON on stdout. Nothing is sent anywhere: no key, no service.

  --secret whsec_…      the signing secret (shown once on /settings); better: the environment's OCR_WEBHOOK_SECRET
  --file saved.json     {"headers": {"webhook-id": "…", "webhook-timestamp": "…", "webhook-signature": "…"},
                         "body": "<the raw body, exactly as received>"}
  --headers FILE        or the headers apart: "name: value" lines (as curl -D or a request dump writes them), or a
  --body FILE           JSON object; and the raw body, byte for byte

A delivery older than 5 minutes is refused by a live receiver (replay protection); here its signature is still
checked, and a note says how old it is. After a rotation a delivery carries two signatures for 24 h: either secret
verifies it.

Exit codes: 0 verified, 2 usage, 3 not verified (wrong secret, or the body changed), 5 the file is unreadable or
not a delivery.`;

export const JOBS_HELP = `Usage: ocr jobs list | get ID | result ID | cancel ID [options]

The account's asynchronous jobs (ocr extract submits one for a document past the synchronous limits).

  ocr jobs list [--limit N] [--cursor C] [--json]
        newest first: id, status, pages read/total, credits used/reserved, created (UTC); 20 by default (at most
        100); when there are older ones, stderr says the --cursor to pass for them
  ocr jobs get ID [--json]
        status, pages (read, failed, total), credits (used, reserved, refunded), times, each failed page's error,
        the webhook's last delivery attempt
  ocr jobs result ID [--format FMT] [--pages RANGE] [-o PATH] [--no-wait]
        waits for the job to end (progress on stderr), then writes its whole text to stdout or PATH (a file, or
        <ID>.<ext> in an existing directory or one ending in /); every part of a large result is fetched and joined.
        --format text|json|markdown|hocr|alto|tsv|pdf (default: the job's), --pages a part of the job's pages,
        --no-wait: write the pages read so far now
  ocr jobs cancel ID [--json]
        stops the job: pages not read yet are refunded; what was read stays (ocr jobs result ID)

Reading jobs costs nothing (and counts against the key's read limit, not its request limit).

Exit codes: 0 ok, 1 other (also: the job failed for a reason other than its input, or was cancelled before a page),
2 usage (also a malformed job id), 3 authentication, 5 no such job for this key's account (404) or its results
expired (410), or the job failed on its input; 130 interrupted (the job goes on).`;

export const BALANCE_HELP = `Usage: ocr balance

Prints the credit balance of the account that owns the API key (one credit reads one page), from the
service's GET /api/credits. Costs nothing.

Exit codes: 0 ok, 1 other (service unreachable, or no balance endpoint), 3 authentication.`;

export const MCP_HELP = `Usage: ocr mcp [--transport auto|http|sse]

Runs an MCP server on stdin/stdout for hosts that launch stdio servers (Claude Desktop, Cursor, …). It forwards
every request to {base-url}/api/mcp with the key in x-api-key: tools/list, tools/call (extract_text), ping.
initialize is answered here with the service's own server info, capabilities and instructions.

Transport upstream: Streamable HTTP, falling back to the legacy HTTP+SSE transport if that fails
(--transport auto, the default); --transport http or sse uses only one. Each HTTP request has the --timeout
(default 30000 ms) and --retries (default 3), with one Idempotency-Key across its attempts.

Logs go to stderr (stdout is the protocol). The process exits when the host closes stdin; it exits at start
with code 3 if the key is refused and 1 if the service cannot be reached.

Host configuration (claude_desktop_config.json, .cursor/mcp.json):
  { "mcpServers": { "ocr": { "command": "npx", "args": ["-y", "--package=<this package>", "ocr", "mcp",
      "--base-url", "https://ocr.example.com"], "env": { "FETCH_MCP_SERVER_API_KEY": "ocr_…" } } } }`;
