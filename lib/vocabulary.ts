/*
 * The words the service, its engine and its clients share: a leaf module with no imports at all. The request
 * schemas (lib/api-schemas.ts), the engine (lib/ocr) and the CLI (bundled on its own, cli/build.mjs) all import
 * from here, so validating a request or building the CLI never loads the engine (tesseract.js, the native canvas,
 * onnxruntime) just to learn a list of names.
 */

/** `options.format` (REST) and `output_format` (MCP): what `extractedText` holds. */
export const outputFormats = ["text", "json", "markdown"] as const;
export type OutputFormat = (typeof outputFormats)[number];

/** How the file came: `image` (base64 or a data URL) or `imageUrl`; the 200 answer's `inputSource`. */
export const inputSources = ["base64", "url"] as const;

/**
 * The default of `MAX_INLINE_BYTES`: the largest file sent inline (decoded). The CLI refuses bigger local files
 * before any request, unless told the server has another limit (`OCR_MAX_INLINE_BYTES`).
 */
export const DEFAULT_MAX_INLINE_BYTES = 3 * 1024 * 1024;
