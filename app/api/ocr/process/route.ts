import { ocrRequestSchema } from "@/lib/api-schemas";
import { methodNotAllowed, ocrResponse, preflight, readJson, withApiKey } from "@/lib/http";
import { processDocument } from "@/lib/process";

export const runtime = "nodejs";
export const maxDuration = 60;

const methods = ["POST"];

// POST /api/ocr/process – extract text from a base64 or URL document
export const POST = withApiKey(async ({ req, account, requestId, receivedAt }) => {
  const body = ocrRequestSchema.parse(await readJson(req));
  return ocrResponse(await processDocument({ body, account, requestId, receivedAt }));
});

export const OPTIONS = preflight(methods);
export const GET = methodNotAllowed(methods);
export const HEAD = methodNotAllowed(methods);
export const PUT = methodNotAllowed(methods);
export const PATCH = methodNotAllowed(methods);
export const DELETE = methodNotAllowed(methods);
