import { ApiError } from "@/lib/api/errors";
import { sniffFileType } from "@/lib/ocr/model";
import { assertMultipartParts, FILE_CONTENT_TYPES, mediaTypeOf, type RequestBody } from "./body";

/**
 * The body of `POST /api/ocr/process` and `POST /api/ocr/jobs` in any of its forms (docs/api.md#request):
 * - JSON: `{ "image": "<base64>" | "imageUrl": "…", "options": {…}, "webhook": {…} }` → `body` as sent, no `file`;
 * - `multipart/form-data`: the file in a `file` field, the options as text fields `format`, `language`, `pages`
 *   (and `webhook`, a URL, for jobs) → `file` and `body` `{ options, webhook }`;
 * - the file itself (`Content-Type: application/pdf`, `image/jpeg`, `image/png`, `image/webp`, `image/tiff` or
 *   `application/octet-stream`), the options in the query string (`?format=markdown&pages=1-3`) → the same.
 * The body is counted while it streams in and refused past its limit (`413`) before it is all buffered (the declared
 * `Content-Length` first: lib/http/body.ts). A file's type is decided by its bytes: bytes that are not PDF, JPEG, PNG,
 * WebP or TIFF are `415` whatever was declared. `body` is validated once, by the intake (`processDocument`,
 * `readOrQueue`, `submitJob` in lib/intake), so every form gets the same `400`s for its options.
 */
export interface OcrBody {
  body: unknown;
  /** The file, when it was sent itself (multipart or raw): `inputSource` `upload`. */
  file?: Uint8Array;
}

/** The text fields of a multipart body, and the query parameters of a raw one. */
const OPTION_FIELDS = ["format", "language", "pages", "webhook"] as const;
type OptionField = (typeof OPTION_FIELDS)[number];
const FORM_FIELDS = ["file", ...OPTION_FIELDS];

const FORMS_HINT =
  'Send JSON ({"image": "<base64>"} or {"imageUrl": "…"}), multipart/form-data with the file in a "file" field ' +
  "(curl -F file=@scan.pdf), or the file itself with its type (curl --data-binary @scan.pdf -H 'Content-Type: application/pdf')";

export async function readOcrBody(req: Request, body: RequestBody): Promise<OcrBody> {
  switch (body.kind) {
    case "json":
      return { body: await body.json() };
    case "multipart":
      return readMultipart(req, await body.bytes());
    case "file":
      return readRawFile(req, await body.bytes());
    case "other":
      throw new ApiError(
        "unsupported_media_type",
        `Content-Type ${mediaTypeOf(req.headers.get("content-type")).slice(0, 60)} is not accepted. ${FORMS_HINT}; ` +
          `a raw body's type is one of ${FILE_CONTENT_TYPES.join(", ")}.`,
      );
  }
}

/** A multipart body: exactly one `file` part, option fields at most once each, nothing else. */
async function readMultipart(req: Request, bytes: Uint8Array): Promise<OcrBody> {
  assertMultipartParts(bytes, req.headers.get("content-type")); // `400` before the parser sees thousands of parts
  let form: FormData;
  try {
    // undici's parser (the same as `Request.formData()`), over bytes already counted against the limit.
    form = await new Response(bytes as BodyInit, {
      headers: { "content-type": req.headers.get("content-type")! },
    }).formData();
  } catch (error) {
    throw new ApiError(
      "invalid_request",
      "The multipart/form-data body could not be parsed (a missing boundary, or a truncated part)",
      { cause: error },
    );
  }
  const names = [...new Set(form.keys())];
  const unknown = names.filter((name) => !FORM_FIELDS.includes(name));
  if (unknown.length > 0) {
    const hint = unknown.some((name) => name === "image" || name === "imageUrl" || name === "options")
      ? ` (in a multipart body the file goes in "file" and each option in its own field: -F format=markdown)`
      : "";
    throw new ApiError(
      "invalid_request",
      `Unknown form field${unknown.length === 1 ? "" : "s"} ${unknown
        .slice(0, 5)
        .map((name) => `"${name.slice(0, 40)}"`)
        .join(", ")}${hint}; allowed: ${FORM_FIELDS.join(", ")}`,
    );
  }
  for (const name of names) {
    if (form.getAll(name).length > 1)
      throw new ApiError("invalid_request", `The form field "${name}" is sent more than once; send it once`);
  }

  const part = form.get("file");
  if (part === null)
    throw new ApiError(
      "invalid_request",
      `The multipart body has no "file" field: send the file in it (curl -F file=@scan.pdf)`,
    );
  if (typeof part === "string") {
    throw new ApiError(
      "invalid_request",
      `The form field "file" holds text, not a file: send the file's content as a file part (curl -F file=@scan.pdf, with the @)`,
    );
  }
  const file = new Uint8Array(await part.arrayBuffer());
  checkFile(file, `the "file" field`, part.type);

  const fields: Partial<Record<OptionField, string>> = {};
  for (const name of OPTION_FIELDS) {
    const value = form.get(name);
    if (value === null) continue;
    if (typeof value !== "string")
      throw new ApiError("invalid_request", `The form field "${name}" must be text, not a file`);
    fields[name] = value;
  }
  return { body: uploadBody(fields), file };
}

/** The file itself as the body, its options in the query string. */
function readRawFile(req: Request, bytes: Uint8Array): OcrBody {
  const query = new URL(req.url).searchParams;
  const fields: Partial<Record<OptionField, string>> = {};
  for (const name of new Set(query.keys())) {
    if (!(OPTION_FIELDS as readonly string[]).includes(name)) {
      throw new ApiError(
        "invalid_request",
        `Unknown query parameter "${name.slice(0, 40)}": with the file as the body, the options are query parameters ${OPTION_FIELDS.join(", ")} (?format=markdown&pages=1-3)`,
      );
    }
    const values = query.getAll(name);
    if (values.length > 1)
      throw new ApiError("invalid_request", `The query parameter "${name}" is sent more than once; send it once`);
    fields[name as OptionField] = values[0]!;
  }
  checkFile(bytes, "the request body", mediaTypeOf(req.headers.get("content-type")));
  return { body: uploadBody(fields), file: bytes };
}

/** `400` for an empty file, `415` for bytes that are not a document type we read (whatever the declared type). */
function checkFile(bytes: Uint8Array, where: string, declared: string): void {
  if (bytes.byteLength === 0) throw new ApiError("invalid_request", `The file in ${where} is empty`);
  if (sniffFileType(bytes) === null) {
    const said =
      declared && declared !== "application/octet-stream" ? ` (it was declared ${declared.slice(0, 60)})` : "";
    throw new ApiError(
      "unsupported_media_type",
      `Unsupported file type: the bytes of ${where} are not a PDF, JPEG, PNG, WebP or TIFF file${said}. The type is decided from the bytes.`,
    );
  }
}

/** The options and webhook as the JSON body would hold them, for the request schema to check. */
function uploadBody(fields: Partial<Record<OptionField, string>>): unknown {
  const { webhook, ...options } = fields;
  return {
    ...(Object.keys(options).length > 0 && { options }),
    ...(webhook !== undefined && { webhook: { url: webhook } }),
  };
}
