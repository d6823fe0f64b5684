import { parseOcrRequest } from "@/lib/api/schemas";
import { methodNotAllowed, preflight, readOcrBody, withApiKey } from "@/lib/http";
import { acceptJob, prefersAsync } from "@/lib/http/jobs";
import { processDocument } from "@/lib/intake";

export const runtime = "nodejs";
export const maxDuration = 60;

const methods = ["POST"];

// POST /api/ocr/process – extract text from a document sent as JSON (base64 or URL), multipart (`file`) or the file
// itself (lib/http/upload.ts); with `Prefer: respond-async`, a job (202)
export const POST = withApiKey(async (context) => {
  const { req, body: requestBody, account, requestId, receivedAt, report, env, settings, store } = context;
  const { body, file } = await readOcrBody(req, requestBody);
  if (prefersAsync(req)) {
    return acceptJob(
      context,
      { body: parseOcrRequest(body, file), file },
      { "Preference-Applied": "respond-async", Vary: "Prefer" },
    );
  }
  // The intake reads it now (lib/intake): it validates the body (and refuses `webhook`, which is for jobs).
  const serverHost = req.headers.get("host") ?? undefined;
  const { response, creditsRemaining } = await processDocument(store, {
    env,
    settings,
    body,
    file,
    account,
    requestId,
    receivedAt,
    serverHost,
  });
  report({ pages: response.creditsUsed, creditsRemaining });
  return Response.json(response);
});

export const OPTIONS = preflight(methods);
export const GET = methodNotAllowed(methods);
export const HEAD = methodNotAllowed(methods);
export const PUT = methodNotAllowed(methods);
export const PATCH = methodNotAllowed(methods);
export const DELETE = methodNotAllowed(methods);
