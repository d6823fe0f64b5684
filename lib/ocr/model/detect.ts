import { OcrError } from "./ocr-error";
import { isTiff } from "./tiff";

export type FileType = "pdf" | "jpeg" | "png" | "webp" | "tiff";
/** The single-picture images: one page each, decoded by Skia (@napi-rs/canvas). A TIFF is read page by page. */
export type ImageType = Exclude<FileType, "pdf" | "tiff">;

export const mediaTypes: Record<FileType, string> = {
  pdf: "application/pdf",
  jpeg: "image/jpeg",
  png: "image/png",
  webp: "image/webp",
  tiff: "image/tiff",
};

const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

function startsWith(bytes: Uint8Array, signature: ArrayLike<number>, offset = 0): boolean {
  if (bytes.length < offset + signature.length) return false;
  for (let i = 0; i < signature.length; i++) if (bytes[offset + i] !== signature[i]) return false;
  return true;
}

function ascii(text: string): number[] {
  return Array.from(text, (c) => c.charCodeAt(0));
}

const PDF_MAGIC = ascii("%PDF-");

/**
 * The file type from its magic bytes; names and declared content types are never trusted.
 * PDF readers accept a `%PDF-` header anywhere in the first 1 KiB (some generators prepend junk), so do we.
 */
export function sniffFileType(bytes: Uint8Array): FileType | null {
  if (startsWith(bytes, [0xff, 0xd8, 0xff])) return "jpeg";
  if (startsWith(bytes, PNG_SIGNATURE)) return "png";
  if (startsWith(bytes, ascii("RIFF")) && startsWith(bytes, ascii("WEBP"), 8)) return "webp";
  if (isTiff(bytes)) return "tiff";
  const head = Math.min(bytes.length - PDF_MAGIC.length, 1024);
  for (let i = 0; i <= head; i++) {
    if (bytes[i] === 0x25 && startsWith(bytes, PDF_MAGIC, i)) return "pdf";
  }
  return null;
}

/** Like `sniffFileType`, but an unknown type is an `unsupported_type` error. */
export function detectFileType(bytes: Uint8Array): FileType {
  if (bytes.length === 0) throw new OcrError("empty_file", "The file is empty");
  const type = sniffFileType(bytes);
  if (!type) {
    throw new OcrError(
      "unsupported_type",
      "Unsupported file type: the bytes are not a PDF, JPEG, PNG, WebP or TIFF file",
    );
  }
  return type;
}
