import { jobResultQuerySchema } from "@/lib/api/schemas";
import { methodNotAllowed, preflight, withApiKey } from "@/lib/http";
import { jobIdFromPath } from "@/lib/http/jobs";
import { formatPageRanges } from "@/lib/ocr/model";
import { jobResultFormat, readJobPdf, readJobResult } from "@/lib/jobs";

export const runtime = "nodejs";

/** Polling a job counts against the key's reads, not its requests. */
const READS = { limit: "reads" } as const;
export const maxDuration = 60;

const methods = ["GET"];

/** The searchable PDF goes out in pieces of this size (a stream, not one body: Vercel's 4.5 MB limit is on bodies). */
const PDF_CHUNK_BYTES = 256 * 1024;

// GET /api/ocr/jobs/{id}/result?format=text|json|markdown|hocr|alto|tsv&pages=… – the text, in parts that fit a response
// GET /api/ocr/jobs/{id}/result?format=pdf&pages=… – the searchable PDF, streamed whole as application/pdf
export const GET = withApiKey(async ({ req, account }) => {
  const query = jobResultQuerySchema.parse(Object.fromEntries(new URL(req.url).searchParams));
  const jobId = jobIdFromPath(req, 2);
  if ((await jobResultFormat(account.userId, jobId, query.format)) === "pdf") {
    const { pdf, pages, missingPages } = await readJobPdf(account.userId, jobId, query);
    let offset = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (offset >= pdf.byteLength) {
          controller.close();
          return;
        }
        controller.enqueue(pdf.subarray(offset, offset + PDF_CHUNK_BYTES));
        offset += PDF_CHUNK_BYTES;
      },
    });
    return new Response(body, {
      headers: {
        "content-type": "application/pdf",
        "content-length": String(pdf.byteLength),
        "content-disposition": `attachment; filename="${jobId}.pdf"`,
        "cache-control": "private, no-store",
        "x-pages": pages,
        ...(missingPages.length > 0 && { "x-missing-pages": formatPageRanges(missingPages) }),
      },
    });
  }
  const part = await readJobResult(account.userId, jobId, query);
  return Response.json(part, part.next ? { headers: { Link: `<${part.next}>; rel="next"` } } : undefined);
}, READS);

export const OPTIONS = preflight(methods);
export const HEAD = methodNotAllowed(methods);
export const POST = methodNotAllowed(methods);
export const PUT = methodNotAllowed(methods);
export const PATCH = methodNotAllowed(methods);
export const DELETE = methodNotAllowed(methods);
