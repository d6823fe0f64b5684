import { cancelJob, getJobView } from "@/lib/jobs";
import type { Env } from "@/lib/env";
import type { Store } from "@/lib/store";
import { holdRecord, readHeld } from "./kept";
import { isJobActive } from "./jobs";
import type { Runtime } from "@/lib/jobs";

/*
 * `notifications/cancelled` on a stateless server. The client's cancel comes in another HTTP request — over SSE too, a
 * POST of its own — maybe to another instance, so the SDK's request signal of the running call never fires. Every
 * document an `extract_text` call reads is a job (docs/decisions.md#every-document-a-job): while the call runs, its job
 * is named in the store under the call's API key (or OAuth grant) and JSON-RPC id (a held record, ./kept.ts), and the
 * notification cancels that job. A job read in the call sees it inactive within its look (lib/jobs/inline.ts) and
 * stores nothing; a job read in the background stops, its unread pages refunded.
 */

type Account = { userId: string; keyId?: string };

/** The kind of held record (./kept.ts) that names a running call's job by its key and JSON-RPC id. */
const RUNNING_CALL = "running-call";
/** Default of how often a read in the call looks at its job for a cancel. */
export const CANCEL_POLL_MS = 1_000;

/** The name of a running call's record: the API key (or OAuth grant) that sent it and its JSON-RPC id. */
function runningCallName(keyId: string | undefined, rpcId: string | number): string {
  return `${keyId ?? "-"}:${JSON.stringify(rpcId)}`;
}

/** How long a running call's records live at most: its budget, and a minute. */
function holdTtlMs(deadline: number): number {
  return Math.max(10_000, deadline - Date.now() + 60_000);
}

/**
 * While a call waits for its job, the job is named under the call's key and JSON-RPC id, so that the client's
 * `notifications/cancelled` finds it. Returns what ends the hold (when the call answers). A second call with the same
 * key and id meanwhile is not named (the first one stays: a cancel never reaches a call another key sent).
 */
export async function holdRunningCall(
  store: Store,
  account: Account,
  deadline: number,
  rpcId: string | number,
  jobId: string,
): Promise<() => Promise<void>> {
  const held = await holdRecord(
    store,
    RUNNING_CALL,
    account.userId,
    runningCallName(account.keyId, rpcId),
    jobId,
    holdTtlMs(deadline),
  ).catch(() => null);
  return held ? () => held.release() : async () => undefined;
}

/**
 * `notifications/cancelled` (MCP): the client gave up the request `rpcId`. The job its call reads is cancelled — its
 * engine work stops, its unread pages are refunded (all of them for a job read in the call) — and the call answers at
 * once (the client ignores that answer). Nothing running under that key and id: ignored, as the spec allows.
 */
export async function cancelRunningCall(
  store: Store,
  env: Env,
  runtime: Pick<Runtime, "workQueue" | "deliveries">,
  account: Account,
  rpcId: string | number,
): Promise<void> {
  const jobId = await readHeld(store, RUNNING_CALL, account.userId, runningCallName(account.keyId, rpcId));
  if (jobId !== null) await cancelActiveJob(store, env, runtime, account.userId, jobId);
}

async function cancelActiveJob(
  store: Store,
  env: Env,
  runtime: Pick<Runtime, "workQueue" | "deliveries">,
  userId: string,
  jobId: string,
): Promise<void> {
  const view = await getJobView(store, env, runtime.deliveries, userId, jobId);
  if (isJobActive(view)) await cancelJob(store, env, runtime, userId, jobId);
}
