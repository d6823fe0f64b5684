import { ocrRequestSchema } from "@/lib/api/schemas";
import { methodNotAllowed, preflight, withApiKey } from "@/lib/http";
import { acceptJob, prefersAsync } from "@/lib/http/jobs";
import { processDocument } from "@/lib/intake";

export const runtime = "nodejs";
export const maxDuration = 60;

const methods = ["POST"];

// POST /api/ocr/process – extract text from a base64 or URL document; with `Prefer: respond-async`, a job (202)
export const POST = withApiKey(async (context) => {
  const { req, body, account, requestId, receivedAt, report } = context;
  const json: unknown = await body.json();
  if (prefersAsync(req)) {
    return acceptJob(context, ocrRequestSchema.parse(json), { "Preference-Applied": "respond-async", Vary: "Prefer" });
  }
  // The intake reads it now (lib/intake): it validates the body (and refuses `webhook`, which is for jobs).
  const serverHost = req.headers.get("host") ?? undefined;
  const { response, creditsRemaining } = await processDocument({ body: json, account, requestId, receivedAt, serverHost });
  report({ pages: response.creditsUsed, creditsRemaining });
  return Response.json(response);
});

export const OPTIONS = preflight(methods);
export const GET = methodNotAllowed(methods);
export const HEAD = methodNotAllowed(methods);
export const PUT = methodNotAllowed(methods);
export const PATCH = methodNotAllowed(methods);
export const DELETE = methodNotAllowed(methods);
