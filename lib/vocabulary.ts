/*
 * The words the service, its engine and its clients share: a leaf module with no imports at all. The request
 * schemas (lib/api/schemas.ts), the engine (lib/ocr) and the CLI (bundled on its own, cli/build.mjs) all import
 * from here, so validating a request or building the CLI never loads the engine (tesseract.js, the native canvas,
 * onnxruntime) just to learn a list of names.
 */

/** `options.format` (REST) and `output_format` (MCP): what `extractedText` holds. */
export const outputFormats = ["text", "json", "markdown", "hocr", "alto", "tsv", "pdf"] as const;
export type OutputFormat = (typeof outputFormats)[number];

/** The formats that are text (`pdf` is binary: base64 in `extractedText`, or `application/pdf` from a job). */
export type TextFormat = Exclude<OutputFormat, "pdf">;

/*
 * What the hOCR, ALTO and TSV formats (lib/ocr/render/formats) put before a document's first page and after its last: a
 * result in parts (a job's) joins by taking each part's pages from between them. Here, so the CLI joins parts with
 * the service's own words.
 */
export const HOCR_HEAD =
  '<?xml version="1.0" encoding="UTF-8"?>\n' +
  '<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Transitional//EN" "http://www.w3.org/TR/xhtml1/DTD/xhtml1-transitional.dtd">\n' +
  '<html xmlns="http://www.w3.org/1999/xhtml" xml:lang="en" lang="en">\n' +
  " <head>\n" +
  "  <title>OCR result</title>\n" +
  '  <meta http-equiv="Content-Type" content="text/html;charset=utf-8"/>\n' +
  '  <meta name="ocr-system" content="ocr-service"/>\n' +
  '  <meta name="ocr-capabilities" content="ocr_page ocr_carea ocr_par ocr_line ocrx_word ocrp_wconf"/>\n' +
  " </head>\n" +
  " <body>\n";

export const HOCR_TAIL = " </body>\n</html>\n";

export const ALTO_HEAD =
  '<?xml version="1.0" encoding="UTF-8"?>\n' +
  '<alto xmlns="http://www.loc.gov/standards/alto/ns-v4#" xmlns:xlink="http://www.w3.org/1999/xlink" ' +
  'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" ' +
  'xsi:schemaLocation="http://www.loc.gov/standards/alto/ns-v4# http://www.loc.gov/alto/v4/alto-4-4.xsd" SCHEMAVERSION="4.4">\n' +
  "  <Description>\n" +
  "    <MeasurementUnit>pixel</MeasurementUnit>\n" +
  '    <Processing ID="processing_1">\n' +
  "      <processingStepDescription>OCR</processingStepDescription>\n" +
  "      <processingSoftware>\n" +
  "        <softwareName>ocr-service</softwareName>\n" +
  "      </processingSoftware>\n" +
  "    </Processing>\n" +
  "  </Description>\n" +
  "  <Layout>\n";

export const ALTO_TAIL = "  </Layout>\n</alto>\n";

/** Tesseract's TSV columns, and its header row. */
export const TSV_COLUMNS = [
  "level",
  "page_num",
  "block_num",
  "par_num",
  "line_num",
  "word_num",
  "left",
  "top",
  "width",
  "height",
  "conf",
  "text",
] as const;
export const TSV_HEAD = `${TSV_COLUMNS.join("\t")}\n`;

/** The formats whose documents are their pages between a head and a tail. */
export const framedFormats = {
  hocr: { head: HOCR_HEAD, tail: HOCR_TAIL },
  alto: { head: ALTO_HEAD, tail: ALTO_TAIL },
  tsv: { head: TSV_HEAD, tail: "" },
} as const;

/**
 * How the file came: `image` (base64 or a data URL), `imageUrl`, or `upload` (the file itself in the request: a
 * multipart `file` field or a raw body); the 200 answer's `inputSource`.
 */
export const inputSources = ["base64", "url", "upload"] as const;

/** How an MCP tool call carries its file (`image_source.type`): there is no upload in JSON-RPC. */
export const toolInputSources = ["base64", "url"] as const;

/**
 * The default of `MAX_INLINE_BYTES` self-hosted: the largest file sent in the request (decoded base64, a multipart
 * `file`, or a raw body). The CLI refuses bigger local files before any request, unless told the server has another
 * limit (`OCR_MAX_INLINE_BYTES`).
 */
export const DEFAULT_MAX_INLINE_BYTES = 20 * 1024 * 1024;

/**
 * The shortest `Prefer: wait=N` `POST /api/ocr/process` honours, in seconds (a shorter one counts as this): the
 * document must still be fetched and inspected within it. The CLI asks for no less.
 */
export const MIN_PREFER_WAIT_S = 5;

/**
 * The default of `MAX_INLINE_BYTES` on Vercel, whose platform refuses request bodies over 4.5 MB before the function
 * runs: a 4 MiB file fits a raw or multipart body under it (as base64, a JSON body stops at about 3.3 MB of file).
 */
export const VERCEL_MAX_INLINE_BYTES = 4 * 1024 * 1024;
