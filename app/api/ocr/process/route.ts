import { ocrRequestSchema } from "@/lib/api-schemas";
import { methodNotAllowed, preflight, withApiKey } from "@/lib/http";
import { processDocument } from "@/lib/process";

export const runtime = "nodejs";
export const maxDuration = 60;

const methods = ["POST"];

// POST /api/ocr/process – extract text from a base64 or URL document
export const POST = withApiKey(async ({ body, account, requestId, receivedAt, report }) => {
  const request = ocrRequestSchema.parse(await body.json());
  const { response, creditsRemaining } = await processDocument({ body: request, account, requestId, receivedAt });
  report({ pages: response.creditsUsed, creditsRemaining });
  return Response.json(response);
});

export const OPTIONS = preflight(methods);
export const GET = methodNotAllowed(methods);
export const HEAD = methodNotAllowed(methods);
export const PUT = methodNotAllowed(methods);
export const PATCH = methodNotAllowed(methods);
export const DELETE = methodNotAllowed(methods);
