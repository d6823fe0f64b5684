import { methodNotAllowed, preflight, readOcrBody, withApiKey } from "@/lib/http";
import { acceptJob, jobAccepted, jobOrigin, preferencesOf } from "@/lib/http/jobs";
import { processDocument, readOrQueue } from "@/lib/intake";
import { MIN_PREFER_WAIT_S } from "@/lib/vocabulary";

export const runtime = "nodejs";
export const maxDuration = 60;

const methods = ["POST"];

// POST /api/ocr/process – extract text from a document sent as JSON (base64 or URL), multipart (`file`) or the file
// itself (lib/http/upload.ts); with `Prefer: respond-async`, a job (202); with `Prefer: respond-async, wait=N`, the
// text when it is expected within N seconds, else a job (202); with `Prefer: wait=N` alone, the read's deadline is N s.
export const POST = withApiKey(async (context) => {
  const { req, body: requestBody, account, requestId, receivedAt, report, env, settings, store, pool } = context;
  const { body, file } = await readOcrBody(req, requestBody);
  const { respondAsync, waitSeconds } = preferencesOf(req);
  if (respondAsync && !waitSeconds) {
    return acceptJob(context, { body, file }, { "Preference-Applied": "respond-async", Vary: "Prefer" });
  }
  // `wait` narrows the request's deadline (never widens it): the answer comes by then, the text or a `504`.
  const deadline = !waitSeconds
    ? undefined
    : receivedAt + Math.min(Math.max(waitSeconds, MIN_PREFER_WAIT_S) * 1000, env.REQUEST_DEADLINE_MS);
  const serverHost = req.headers.get("host") ?? undefined;
  const { workQueue, deliveries } = context;
  const input = {
    env,
    settings,
    pool,
    workQueue,
    deliveries,
    body,
    file,
    account,
    requestId,
    receivedAt,
    serverHost,
    deadline,
  };
  // The intake reads it now (lib/intake): it validates the body (and refuses `webhook`, which is for jobs), as it
  // does a job's.
  let result;
  if (respondAsync && deadline !== undefined) {
    const outcome = await readOrQueue(store, { ...input, deadline, origin: jobOrigin(env, req) });
    if (outcome.kind === "job")
      return jobAccepted(context, outcome, { "Preference-Applied": "respond-async", Vary: "Prefer" });
    result = outcome.result;
  } else {
    result = await processDocument(store, input);
  }
  const { response, creditsRemaining } = result;
  report({ pages: response.creditsUsed, creditsRemaining });
  return Response.json(response, !waitSeconds ? undefined : { headers: { Vary: "Prefer" } });
});

export const OPTIONS = preflight(methods);
export const GET = methodNotAllowed(methods);
export const HEAD = methodNotAllowed(methods);
export const PUT = methodNotAllowed(methods);
export const PATCH = methodNotAllowed(methods);
export const DELETE = methodNotAllowed(methods);
