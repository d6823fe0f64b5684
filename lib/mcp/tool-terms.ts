import { ApiError } from "@/lib/api/errors";

/*
 * The tool's errors in the tool's terms. `extract_text` runs the REST use case (`processDocument`) on a REST body
 * mapped from its arguments (`toOcrRequest` in server.ts), so the messages it gets back name REST's fields — `image is
 * not valid base64`, `Could not fetch imageUrl`, `options.pages` — which the model never sent. An error that names a
 * field says so (`ApiError.field`); here its message is said again with the tool's argument names, in one place,
 * instead of every message being written twice.
 */

/** REST request field → the `extract_text` argument it is made from. */
const TOOL_FIELDS: Readonly<Record<string, string>> = {
  image: "image_source.data",
  imageUrl: "image_source.data",
  "options.format": "output_format",
  "options.pages": "pages",
};

/** Advice that points to a REST field the tool has no counterpart for, as the tool would give it. */
const TOOL_ADVICE: ReadonlyArray<readonly [RegExp, string]> = [
  // lib/input/base64.ts: an inline file over MAX_INLINE_BYTES.
  [/Send larger files with imageUrl instead\./, 'Send larger files as a URL instead (image_source.type "url").'],
  // lib/jobs/engine-errors.ts: a PDF over MAX_PDF_PAGES. The tool has `pages` as REST has `options.pages`.
  [
    /choose fewer pages with options\.pages, or send it as an asynchronous job instead \(POST \/api\/ocr\/jobs, or this route with Prefer: respond-async\)/,
    'choose fewer pages with the pages argument (e.g. "1-5"), or read it as a job with POST /api/ocr/jobs',
  ],
  [/choose pages with options\.pages \(e\.g\. "([^"]+)"\)/, 'choose pages with the pages argument (e.g. "$1")'],
  [
    /,? or send it as an asynchronous job instead \(POST \/api\/ocr\/jobs, or this route with Prefer: respond-async\)/,
    ", or read it whole as a job with POST /api/ocr/jobs",
  ],
];

/** A field name as a word of its own: not inside another name (`imageUrl`, `image_source`) or a host name. */
function fieldPattern(field: string): RegExp {
  return new RegExp(`(?<![\\w.-])${field.replaceAll(".", "\\.")}(?![\\w.-])`, "g");
}

/**
 * `error` with its message in the tool's terms: REST field names replaced by the tool's argument names, and advice
 * about REST-only fields replaced by what the tool's caller can do. Only messages that name a field
 * (`ApiError.field`) are touched; prose that merely says "image" is left alone.
 */
export function inToolTerms(error: ApiError): ApiError {
  if (error.field === undefined) return error;
  let message = error.message;
  for (const [pattern, advice] of TOOL_ADVICE) message = message.replace(pattern, advice);
  for (const [restField, toolField] of Object.entries(TOOL_FIELDS))
    message = message.replace(fieldPattern(restField), toolField);
  if (message === error.message) return error;
  return new ApiError(error.code, message, {
    headers: error.headers,
    cause: error,
    field: TOOL_FIELDS[error.field] ?? error.field,
  });
}
