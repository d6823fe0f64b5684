import { z } from "zod";
import { getCurrentAccount } from "@/lib/accounts/current";
import { isApiError } from "@/lib/api/errors";
import { jobResultFormat, jobResultFrame, readJobPdf, readJobResult, type JobResultPart } from "@/lib/jobs";
import { services } from "@/lib/services";
import { outputFormats, type OutputFormat } from "@/lib/vocabulary";

/*
 * GET /settings/jobs/{id}/result[?format=text|json|markdown|hocr|alto|tsv|pdf] — a job's text as a download, for the settings page's
 * links. Like /settings/ledger.csv it belongs to the signed-in site (session cookie), not to /api: the API's result
 * route takes a key in a header, which a link in a browser cannot send, and a key must never go into a URL. Every
 * part of a large result is read in turn (the API answers ~4 MB at a time) and streamed as one file; while the job
 * runs, the pages read so far.
 */

export const runtime = "nodejs";
export const maxDuration = 60;

const querySchema = z.object({ format: z.enum(outputFormats).optional() });

const TYPES: Record<OutputFormat, { type: string; ext: string }> = {
  text: { type: "text/plain; charset=utf-8", ext: "txt" },
  markdown: { type: "text/markdown; charset=utf-8", ext: "md" },
  json: { type: "application/json", ext: "json" },
  hocr: { type: "text/html; charset=utf-8", ext: "hocr" },
  alto: { type: "application/xml", ext: "xml" },
  tsv: { type: "text/tab-separated-values; charset=utf-8", ext: "tsv" },
  pdf: { type: "application/pdf", ext: "pdf" },
};

/** A part's pages without the head and tail its format puts around them (`jobResultFrame`). */
function inner(text: string, head: string, tail: string): string {
  const start = text.startsWith(head) ? head.length : 0;
  const end = tail !== "" && text.endsWith(tail) ? text.length - tail.length : text.length;
  return text.slice(start, end);
}

function plain(status: number, message: string): Response {
  return new Response(`${message}\n`, {
    status,
    headers: { "content-type": "text/plain; charset=utf-8", "cache-control": "no-store" },
  });
}

export async function GET(request: Request, { params }: { params: Promise<{ id: string }> }): Promise<Response> {
  const account = await getCurrentAccount();
  if (!account) return plain(401, "Sign in (/signin) to download your jobs' results.");
  const { store, env, deliveries } = services();
  const { id } = await params;
  const query = querySchema.safeParse({ format: new URL(request.url).searchParams.get("format") ?? undefined });
  if (!query.success) return plain(400, `The format is one of ${outputFormats.join(", ")}.`);

  // The first part before any byte is sent, so that an unknown or expired job is a plain status, not a broken file.
  let first: JobResultPart;
  try {
    if ((await jobResultFormat(store, env, deliveries, account.id, id, query.data.format)) === "pdf") {
      const { body, bytes } = await readJobPdf(store, env, deliveries, account.id, id, {});
      return new Response(body, {
        headers: {
          "content-type": TYPES.pdf.type,
          "content-length": String(bytes),
          "content-disposition": `attachment; filename="${id}.pdf"`,
          "cache-control": "private, no-store",
        },
      });
    }
    first = await readJobResult(store, env, deliveries, account.id, id, { format: query.data.format });
  } catch (error) {
    if (
      isApiError(error) &&
      (error.code === "not_found" || error.code === "gone" || error.code === "unavailable" || error.code === "conflict")
    ) {
      return plain({ not_found: 404, gone: 410, unavailable: 503, conflict: 409 }[error.code], error.message);
    }
    throw error;
  }
  const format = first.format;
  if (format === "pdf") throw new Error("a pdf result is not text");
  const { head, separator, tail } = jobResultFrame(format);
  const jobId = first.jobId;
  const encoder = new TextEncoder();
  let part: JobResultPart | null = first;
  let written = 0;

  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      if (head !== "") controller.enqueue(encoder.encode(head));
    },
    async pull(controller) {
      try {
        if (!part) {
          controller.enqueue(
            encoder.encode(format === "tsv" ? "" : tail === "" ? "\n" : tail.endsWith("\n") ? tail : `${tail}\n`),
          );
          controller.close();
          return;
        }
        if (part.pages !== "") {
          const text = inner(part.extractedText, head, tail);
          controller.enqueue(encoder.encode(`${written > 0 ? separator : ""}${text}`));
          written += 1;
        }
        const next: string | null = part.next;
        part = next
          ? await readJobResult(store, env, deliveries, account.id, jobId, {
              format,
              pages: new URL(next, request.url).searchParams.get("pages") ?? undefined,
            })
          : null;
      } catch (error) {
        // The status is already sent: the download ends as a failed one rather than a silently short file.
        console.error(
          `[settings] job result download failed (${isApiError(error) ? error.code : error instanceof Error ? error.name : "error"})`,
        );
        controller.error(error);
      }
    },
  });

  return new Response(body, {
    headers: {
      "content-type": TYPES[format].type,
      "content-disposition": `attachment; filename="${jobId}.${TYPES[format].ext}"`,
      "cache-control": "private, no-store",
    },
  });
}
