import { jobResultQuerySchema } from "@/lib/api/schemas";
import { methodNotAllowed, preflight, withApiKey } from "@/lib/http";
import { jobIdFromPath } from "@/lib/http/jobs";
import { formatPageRanges } from "@/lib/ocr/model";
import { jobResultFormat, readJobPdf, readJobResultBody } from "@/lib/jobs";

export const runtime = "nodejs";

/** Polling a job counts against the key's reads, not its requests. */
const READS = { limit: "reads" } as const;
export const maxDuration = 60;

const methods = ["GET"];

// GET /api/ocr/jobs/{id}/result?format=text|json|markdown|hocr|alto|tsv&pages=… – the text, in parts that fit a response
// GET /api/ocr/jobs/{id}/result?format=pdf&pages=… – the searchable PDF, streamed whole as application/pdf
export const GET = withApiKey(async ({ req, account, store, env, deliveries }) => {
  const query = jobResultQuerySchema.parse(Object.fromEntries(new URL(req.url).searchParams));
  const jobId = jobIdFromPath(req, 2);
  if ((await jobResultFormat(store, env, deliveries, account.userId, jobId, query.format)) === "pdf") {
    const { body, bytes, pages, missingPages } = await readJobPdf(store, env, deliveries, account.userId, jobId, query);
    return new Response(body, {
      headers: {
        "content-type": "application/pdf",
        "content-length": String(bytes),
        "content-disposition": `attachment; filename="${jobId}.pdf"`,
        "cache-control": "private, no-store",
        "x-pages": pages,
        ...(missingPages.length > 0 && { "x-missing-pages": formatPageRanges(missingPages) }),
      },
    });
  }
  // Rendered once for an ended job, kept in the store and streamed from there at every read (docs/decisions.md#result-reads).
  const { body, bytes, next } = await readJobResultBody(store, env, deliveries, account.userId, jobId, query);
  return new Response(body, {
    headers: {
      "content-type": "application/json",
      "content-length": String(bytes),
      ...(next && { Link: `<${next}>; rel="next"` }),
    },
  });
}, READS);

export const OPTIONS = preflight(methods);
export const HEAD = methodNotAllowed(methods);
export const POST = methodNotAllowed(methods);
export const PUT = methodNotAllowed(methods);
export const PATCH = methodNotAllowed(methods);
export const DELETE = methodNotAllowed(methods);
