import { configuredOrigin } from "@/lib/service-origin";
import { ApiError } from "@/lib/api/errors";
import { submitJob } from "@/lib/intake";
import { kickJobWorkers, pollAfterSeconds, type JobView } from "@/lib/jobs";
import { afterResponse } from "./after";
import type { ApiContext } from "./context";
import type { Runtime } from "@/lib/jobs";

/**
 * Submit an asynchronous job and answer `202 Accepted` with it and `Location` (`POST /api/ocr/jobs`, and
 * `POST /api/ocr/process` with `Prefer: respond-async`). The body as it came (`readOcrBody`): `submitJob` validates
 * it, once, as it does an MCP task's. Workers that are function invocations are started after the answer.
 */
export async function acceptJob(
  { req, env, settings, account, requestId, receivedAt, report, store, pool, workQueue, deliveries }: ApiContext,
  { body, file }: { body: unknown; file?: Uint8Array },
  extraHeaders: Record<string, string> = {},
): Promise<Response> {
  const origin = jobOrigin(env, req);
  const { view, creditsRemaining } = await submitJob(store, {
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
    serverHost: req.headers.get("host") ?? undefined,
    origin,
  });
  return jobAccepted({ env, settings, report }, { view, creditsRemaining }, extraHeaders);
}

/**
 * The origin of a job's webhook links: the configured origin, else the one the job was submitted to (the account's
 * own events, sent to its own receiver: a Host it forged only misleads itself).
 */
export function jobOrigin(env: ApiContext["env"], req: Request): string {
  return configuredOrigin(env) ?? new URL(req.url).origin;
}

/**
 * The `202 Accepted` of a job the intake queued (`acceptJob`, or `Prefer: respond-async, wait=N` when the read would
 * not end in time): its view and `Location`, the balance reported; workers that are function invocations are
 * started after the answer.
 */
export function jobAccepted(
  { env, settings, report }: Pick<ApiContext, "env" | "settings" | "report">,
  { view, creditsRemaining }: { view: JobView; creditsRemaining: number },
  extraHeaders: Record<string, string> = {},
): Response {
  report({ creditsRemaining });
  afterResponse(() => kickJobWorkers(env, settings.jobs, view.pagesTotal));
  return Response.json(view, { status: 202, headers: { Location: view.links.self, ...extraHeaders } });
}

/** What a request's `Prefer` header (RFC 7240) asks of this service: `respond-async`, and `wait` in seconds. */
export interface Preferences {
  respondAsync: boolean;
  /** `wait=N`: the client would like the answer within N seconds (RFC 7240 §4.3); undefined when not sent. */
  waitSeconds?: number;
}

/**
 * The preferences of `Prefer` (RFC 7240 §2: comma-separated `token [= value] *( ; parameter )`, tokens
 * case-insensitive, values maybe quoted; several headers arrive joined with commas). A `wait` that is not a whole
 * number of seconds is ignored, as is every other preference; the first of a repeated one counts.
 */
export function preferencesOf(req: Request): Preferences {
  const preferences: Preferences = { respondAsync: false };
  let waitSeen = false;
  for (const item of (req.headers.get("prefer") ?? "").split(",")) {
    const [token = "", ...value] = (item.split(";")[0] ?? "").split("=");
    const name = token.trim().toLowerCase();
    if (name === "respond-async") preferences.respondAsync = true;
    if (name === "wait" && !waitSeen) {
      waitSeen = true;
      const seconds = value
        .join("=")
        .trim()
        .replace(/^"(.*)"$/, "$1");
      if (/^\d{1,9}$/.test(seconds)) preferences.waitSeconds = Number(seconds);
    }
  }
  return preferences;
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
 * the `pollInterval` of the job's MCP task. `pool`: the process's engine pool (its duration model: a page's expected
 * time before the job's first page is read).
 */
export function retryAfterFor(view: JobView, pool: Pick<Runtime["pool"], "estimate">, now = Date.now()): number | null {
  return pollAfterSeconds(view, now, pool.estimate("read-pdf-page"));
}
