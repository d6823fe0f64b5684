import { jobsListQuerySchema } from "@/lib/api/schemas";
import { methodNotAllowed, preflight, readOcrBody, withApiKey } from "@/lib/http";
import { acceptJob } from "@/lib/http/jobs";
import { listJobViews } from "@/lib/jobs";

export const runtime = "nodejs";
export const maxDuration = 60;

const methods = ["GET", "POST"];

// POST /api/ocr/jobs – read a document asynchronously (JSON, multipart or the file itself, as /api/ocr/process takes
// it): 202 with the job; GET /api/ocr/jobs/{id} for its progress. The intake validates the body (lib/intake).
export const POST = withApiKey(async (context) => acceptJob(context, await readOcrBody(context.req, context.body)));

// GET /api/ocr/jobs – the account's jobs, newest first (?limit=20&cursor=…)
export const GET = withApiKey(
  async ({ req, account, store }) => {
    const query = jobsListQuerySchema.parse(Object.fromEntries(new URL(req.url).searchParams));
    const page = await listJobViews(store, account.userId, query);
    return Response.json({ success: true, ...page });
  },
  { limit: "reads" },
);

export const OPTIONS = preflight(methods);
export const HEAD = methodNotAllowed(methods);
export const PUT = methodNotAllowed(methods);
export const PATCH = methodNotAllowed(methods);
export const DELETE = methodNotAllowed(methods);
