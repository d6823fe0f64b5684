import type { CreditsResponse } from "@/lib/api/schemas";
import { getBalance } from "@/lib/credits";
import { methodNotAllowed, preflight, withApiKey } from "@/lib/http";

export const runtime = "nodejs";

const methods = ["GET"];

// GET /api/credits – the balance of the account behind the key (what `ocr balance` shows); nothing is charged
export const GET = withApiKey(async ({ account, report, store }) => {
  const balance = await getBalance(store, account.userId);
  report({ creditsRemaining: balance });
  const body: CreditsResponse = { success: true, userId: account.userId, balance };
  return Response.json(body);
});

export const OPTIONS = preflight(methods);
export const POST = methodNotAllowed(methods);
export const PUT = methodNotAllowed(methods);
export const PATCH = methodNotAllowed(methods);
export const DELETE = methodNotAllowed(methods);
