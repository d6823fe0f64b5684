import { parentPort } from "node:worker_threads";
import type { ExtractedPage } from "../model/document";
import type { FileType } from "../model/detect";
import { isOcrError, toOcrErrorData } from "../model/ocr-error";
import { renderSearchablePdf } from "./formats/pdf";

/*
 * A worker thread that makes searchable PDFs (./pdf-off-thread.ts starts it from its own bundle,
 * build/engine/pdf-render.mjs, made by scripts/build-engine.mjs), one request at a time, each answered with its id.
 * pdf-lib parses the source file, copies its pages and writes the result synchronously: a second or more of a 40 MB
 * scan during which the server's main thread answered nothing else (issue 39 point 14).
 */

export interface PdfThreadRequest {
  id: number;
  pages: ExtractedPage[];
  bytes: Uint8Array;
  type: FileType;
}

export type PdfThreadAnswer = { id: number } & (
  | { ok: true; pdf: Uint8Array }
  | { ok: false; error: ReturnType<typeof toOcrErrorData> | { code?: undefined; message: string } }
);

parentPort?.on("message", (request: PdfThreadRequest) => {
  const { id } = request;
  renderSearchablePdf(request.pages, { bytes: request.bytes, type: request.type }).then(
    (pdf) => parentPort!.postMessage({ id, ok: true, pdf } satisfies PdfThreadAnswer, [pdf.buffer as ArrayBuffer]),
    (error: unknown) =>
      parentPort!.postMessage({
        id,
        ok: false,
        error: isOcrError(error)
          ? toOcrErrorData(error)
          : { message: error instanceof Error ? error.message : String(error) },
      } satisfies PdfThreadAnswer),
  );
});
