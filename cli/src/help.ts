export const MAIN_HELP = `ocr — the OCR service from a terminal, and a stdio MCP bridge for MCP hosts

Usage:
  ocr extract <file-or-url>... [options]   read text from images and PDFs
  ocr balance                              print the account's credit balance
  ocr mcp                                  run a stdio MCP server that forwards to the service
  ocr <command> --help                     options of one command

Configuration (every command):
  --base-url URL      the service (env OCR_BASE_URL; default http://localhost:3000)
  --timeout MS        per HTTP attempt, e.g. 30000, 45s, 2m (default 30000)
  --retries N         retries of transient failures: network, timeout, 429, 502, 503, 504 (default 3)
  --api-key KEY       only if you must: it lands in your shell history and in \`ps\`. Prefer the environment:
  FETCH_MCP_SERVER_API_KEY   the API key (OCR_API_KEY is read too); create one on the service's /settings page

Exit codes: 0 ok, 1 other failure, 2 usage, 3 authentication (401/403, no key), 4 credits (402),
            5 input (a file the CLI or the service refused: 400, 404, 413, 415, 422)

  -h, --help          this help
  --version           the CLI's version`;

export const EXTRACT_HELP = `Usage: ocr extract <file-or-url>... [options]

Reads the text of PDF, JPEG, PNG and WebP files. A local file is sent inline (base64) if it is at most 3 MiB;
a larger one is refused with exit code 5 — put it at a public http(s) URL and pass the URL, which the service
downloads (up to 25 MB). ocr never uploads a file anywhere by itself. \`-\` reads a file from stdin.

One input: the text goes to stdout. Several inputs (or --out): one <name>.<ext> file each, in --out
(default: the current directory); a name already used in the run gets -2, -3, ….

Options:
  -f, --format FMT      text (default), json (pages, blocks, lines, words with boxes) or markdown
  -p, --pages RANGE     PDF pages, 1-based: 1-3,5 or 7- (default: all; only those are charged)
  -l, --lang CODES      Tesseract languages, e.g. eng or eng+deu (default: the service's, auto)
  -o, --out DIR         write <name>.txt / .json / .md files here (created if missing)
  -c, --concurrency N   documents in flight at once (default 2, at most 8)
  -v, --verbose         per file on stderr: credits used and remaining, confidence, time, retries
  --base-url, --timeout, --retries, --api-key: see \`ocr --help\`

Each document is one request with its own Idempotency-Key, retried with the same key on network errors,
timeouts, 429, 502, 503 and 504 (waiting for Retry-After), so a retry is never charged twice. Errors go to
stderr as "ocr: <input>: <code>: <message> (request <id>)". After a 401 or 402 the remaining inputs are not sent.

Exit codes: 0 all done; else the code of the first input that failed: 1 other, 3 auth, 4 credits, 5 input.

Examples:
  ocr extract scan.png
  ocr extract report.pdf --pages 1-3 --format markdown > report.md
  ocr extract https://example.com/big-scan.pdf --lang eng+deu
  ocr extract invoices/*.pdf --format json --out extracted/`;

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
