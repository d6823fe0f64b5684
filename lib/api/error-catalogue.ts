/*
 * Every error code the service answers with: its HTTP status, when it happens, and what an agent can do about it.
 * The one place these are written: lib/api/errors.ts takes the status from here, the OpenAPI document (lib/api-docs/openapi.ts)
 * and the /docs page render `when`, the MCP tool errors append `hint`, and docs/api.md's table is generated from it
 * (`npm run docs:api`, lib/api-docs/reference.ts). A leaf module (no imports), so the CLI bundle can carry it.
 *
 * `when` is inline Markdown (backticks for code) and names a variable with its default where a limit decides,
 * e.g. `REQUEST_DEADLINE_MS` (55 s): the same text must hold on a server configured otherwise.
 */

export interface ErrorEntry {
  status: number;
  /** What causes it, as listed to people (docs, OpenAPI). */
  when: string;
  /**
   * What a model can do about it, appended to an MCP tool error's text. Every failure an `extract_text` call can
   * end with has one; `internal_error` never reaches a tool result (it is a JSON-RPC error), and the others are not
   * answers of the tool.
   */
  hint?: string;
}

/** In the order of the tables: by status, then as listed. */
export const errorCatalogue = {
  invalid_request: {
    status: 400,
    when:
      "bad JSON, empty body, invalid UTF-8, JSON nested more than 32 levels, schema violation (unknown keys included), " +
      "both/neither inputs, bad base64, bad URL, URL not allowed (private, loopback, link-local or metadata address — " +
      "checked after DNS and on every redirect, unless the host is in `URL_ALLOW_HOSTS` — credentials in the URL, " +
      "non-http(s) scheme), unknown language, bad page list, malformed `Idempotency-Key`",
    hint: 'Check image_source: with type "base64", data must be the file\'s base64 or a data URL; with type "url", a public http(s) URL.',
  },
  unauthorized: {
    status: 401,
    when: "no key, unknown key, revoked key, malformed `Authorization` header (with `WWW-Authenticate: Bearer`)",
  },
  insufficient_credits: {
    status: 402,
    when:
      "the balance is below the pages the request needs; checked before any OCR — and an account without a single " +
      "credit is refused before an `imageUrl` is fetched. The message says how many are needed (when known) and what " +
      "the balance is; `x-credits-remaining` carries the balance",
    hint: "The account is out of credits for this file: add credits on the account's settings page, or send fewer pages.",
  },
  forbidden: {
    status: 403,
    when:
      "a form or server action posted to a page from another site: its `Origin` is not this deployment's host " +
      "(cross-site request forgery); nothing runs",
  },
  not_found: {
    status: 404,
    when:
      "an unknown job id, or another account's job (jobs are private to their account); MCP: an unknown or expired " +
      "SSE session",
  },
  method_not_allowed: {
    status: 405,
    when: "a method the path does not serve (with `Allow`; `POST, OPTIONS` on `/api/ocr/process`)",
  },
  conflict: {
    status: 409,
    when: "a request with the same `Idempotency-Key` is still in progress; a job's PDF (`format=pdf`) asked for while no page of it is read yet",
  },
  gone: {
    status: 410,
    when:
      "a job whose results expired (`JOB_RESULT_TTL`, 24 h after it ended); its id is unknown (`404`) 7 days later; a " +
      "job's PDF when its file is no longer kept",
  },
  payload_too_large: {
    status: 413,
    when:
      "body, decoded file, fetched file, page count or pixel count over its limit; an image inside a PDF over the " +
      "pixel limit; a PDF stream that inflates past 128 MiB; a PDF that needs more than 10 s of " +
      "processing to open (and a second more per MB of file) or to draw a page, or a page drawing more than 1,000,000 operations or " +
      "nesting forms more than 16 deep; a page whose reading needs more memory than an engine process may use; a " +
      'searchable PDF (`format: "pdf"`) over 3 MB in a synchronous answer (its file, checked before any charge, or the ' +
      "PDF made): the message names the job route",
    hint: 'Inline (base64) files have a size limit (20 MB decoded, 4 MB on Vercel; the message says this server\'s): pass a URL with type "url" instead, or send a smaller file or fewer pages.',
  },
  unsupported_media_type: {
    status: 415,
    when: "the file's bytes are not PDF, JPEG, PNG, WebP or TIFF (or a TIFF compressed in a way not read); or the body is declared as something other than JSON",
    hint: "Send a PDF, JPEG, PNG, WebP or TIFF file; the type is read from the bytes, not from the filename.",
  },
  unreadable_document: {
    status: 422,
    when: 'corrupt or truncated file, PDF encrypted with a password, zero pages; a PDF that cannot be rebuilt as a searchable PDF (`format: "pdf"`: encrypted, or broken past repair)',
    hint: "The file is corrupt, truncated, encrypted or has no pages; check that it opens, or export it again.",
  },
  idempotency_mismatch: {
    status: 422,
    when: "an `Idempotency-Key` reused with a different request body",
  },
  rate_limited: {
    status: 429,
    when:
      "per-key rate limit (`Retry-After` and `RateLimit-*` say when to retry); or more than `ACCOUNT_MAX_IN_FLIGHT` " +
      "(4) OCR requests of the account in flight on the instance (`Retry-After`); or more than 30 " +
      "unknown or revoked keys a minute from the client's address (`Retry-After`); or, opening an MCP SSE stream, the " +
      "account already holds 20 open streams (`Retry-After`)",
    hint: "Too many requests with this key: retry after a minute.",
  },
  internal_error: {
    status: 500,
    when: "anything else; details only in the service's logs (quote the request id)",
  },
  not_implemented: {
    status: 501,
    when:
      "a method no path serves: anything but `GET`, `HEAD`, `POST`, `PUT`, `PATCH`, `DELETE` and `OPTIONS` (`TRACE`, " +
      "`CONNECT`, WebDAV's `PROPFIND` …); an API route that does not take one of those answers `405`",
  },
  fetch_failed: {
    status: 502,
    when: "`imageUrl` could not be fetched: DNS, connect, TLS, non-2xx, more than 3 redirects, over 15 s",
    hint: "The service could not download the URL: check that it is public, returns the file itself (not a login page) and is reachable.",
  },
  overloaded: {
    status: 503,
    when:
      "the instance could not start this request before its deadline (the work ahead of it, in expected seconds), " +
      "or 64 recognition jobs already wait for an engine process; `Retry-After` is the expected wait. Opening an " +
      "MCP SSE stream: the instance already holds 200 open streams (`Retry-After`)",
    hint: "The service is busy: retry in a few seconds.",
  },
  unavailable: {
    status: 503,
    when: "the account store cannot be reached: keys and credits fail closed, no OCR is done for free; `Retry-After`",
    hint: "The service's account store is briefly unavailable: retry in a minute. Nothing was charged.",
  },
  timeout: {
    status: 504,
    when: "the request deadline `REQUEST_DEADLINE_MS` (55 s) passed; answered by the deadline + 1 s, nothing is charged",
    hint: 'The file took longer than this tool\'s time limit: read fewer pages at a time with the pages argument (e.g. "1-5"), or retry later.',
  },
} as const satisfies Record<string, ErrorEntry>;

export type ErrorCode = keyof typeof errorCatalogue;

/** The codes in catalogue order. */
export const errorCodes = Object.keys(errorCatalogue) as ErrorCode[];
