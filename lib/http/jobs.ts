import type { OcrRequest } from "@/lib/api/schemas";
import { configuredOrigin } from "@/lib/service-origin";
import { ApiError } from "@/lib/api/errors";
import { submitJob } from "@/lib/intake";
import { kickJobWorkers, pollAfterSeconds, type JobView } from "@/lib/jobs";
import { afterResponse } from "./after";
import type { ApiContext } from "./context";

/**
 * Submit an asynchronous job and answer `202 Accepted` with it and `Location` (`POST /api/ocr/jobs`, and
 * `POST /api/ocr/process` with `Prefer: respond-async`). Workers that are function invocations are started after
 * the answer.
 */
export async function acceptJob(
  { req, env, settings, account, requestId, receivedAt, report, store }: ApiContext,
  { body, file }: { body: OcrRequest; file?: Uint8Array },
  extraHeaders: Record<string, string> = {},
): Promise<Response> {
  // The webhook event's links: the configured origin, else the one the job was submitted to (the account's own
  // events, sent to its own receiver: a Host it forged only misleads itself).
  const origin = configuredOrigin(env) ?? new URL(req.url).origin;
  const { view, creditsRemaining } = await submitJob(store, {
    env,
    settings,
    body,
    file,
    account,
    requestId,
    receivedAt,
    serverHost: req.headers.get("host") ?? undefined,
    origin,
  });
  report({ creditsRemaining });
  afterResponse(() => kickJobWorkers(env, settings.jobs, view.pagesTotal));
  return Response.json(view, { status: 202, headers: { Location: view.links.self, ...extraHeaders } });
}

/** `Prefer: respond-async` (RFC 7240): the client would rather have a job than wait for the text. */
export function prefersAsync(req: Request): boolean {
  const prefer = req.headers.get("prefer") ?? "";
  return prefer.split(",").some((token) => token.split(";")[0]?.trim().toLowerCase() === "respond-async");
}

/**
 * The job id in a job route's path: `/api/ocr/jobs/{id}` (`fromEnd` 1) or `/api/ocr/jobs/{id}/result` (2). Ids
 * are checked by the domain (`findJob`: a malformed one is `404`).
 */
export function jobIdFromPath(req: Request, fromEnd = 1): string {
  const parts = new URL(req.url).pathname.split("/").filter(Boolean);
  const id = parts[parts.length - fromEnd];
  if (!id) throw new ApiError("not_found", "No job id in the path");
  try {
    return decodeURIComponent(id).slice(0, 100);
  } catch {
    throw new ApiError(
      "invalid_request",
      "The job id in the path is not valid percent-encoding (job ids look like job_…)",
    );
  }
}

/**
 * Seconds a poller should wait before asking again about a job that has not ended (none once it has): when its next
 * change is likely, from the job's pace (lib/jobs/view.ts `pollAfterSeconds`). `Retry-After` of the status route and
 * the `pollInterval` of the job's MCP task.
 */
export function retryAfterFor(view: JobView, now = Date.now()): number | null {
  return pollAfterSeconds(view, now);
}
