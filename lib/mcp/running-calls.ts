import { randomBytes } from "node:crypto";
import { describeError } from "@/lib/error-log";
import { cancelJob, getJobView } from "@/lib/jobs";
import type { Env } from "@/lib/env";
import type { Store } from "@/lib/store";
import { holdRecord, keepRecord, readHeld, readRecord } from "./kept";
import { isJobActive } from "./jobs";
import type { Runtime } from "@/lib/jobs";

/*
 * `notifications/cancelled` on a stateless server. The client's cancel comes in another HTTP request — over SSE too, a
 * POST of its own — maybe to another instance, so the SDK's request signal of the running call never fires. A call
 * that may be cancelled names itself in the store under its API key (or OAuth grant) and JSON-RPC id while it runs
 * (a held record, ./kept.ts), and the notification finds it there:
 * - a call waiting for its job names the job: the notification cancels the job (`holdRunningCall`);
 * - a call reading its document itself (a synchronous read) names a random token: the notification leaves a cancel
 *   mark in the token's mailbox, which the read drains about once a second while it runs, and on finding it aborts
 *   the read's signal — the engine work stops, the reserved pages are refunded (`holdRunningRead`).
 * docs/decisions.md, "MCP: a cancel reaches a synchronous read".
 */

type Account = { userId: string; keyId?: string };

/** The kind of held record (./kept.ts) that names a running call by its key and JSON-RPC id: its job, or its read. */
const RUNNING_CALL = "running-call";
/** The kind of kept record that names the job a synchronous read became, under the read's token. */
const READ_JOB = "read-job";
/** The held value of a call reading its document itself: this prefix and the read's token (a job id is `job_…`). */
const READ_PREFIX = "read:";
/** A cancel mark waits this long in a read's mailbox (a read that is gone never drains it). */
export const CANCEL_MARK_TTL_MS = 10_000;
/** Default of how often a running read drains its mailbox for a cancel mark. */
export const CANCEL_POLL_MS = 1_000;
const CANCEL_MARK = "cancelled";

/** The name of a running call's record: the API key (or OAuth grant) that sent it and its JSON-RPC id. */
function runningCallName(keyId: string | undefined, rpcId: string | number): string {
  return `${keyId ?? "-"}:${JSON.stringify(rpcId)}`;
}

/** The mailbox of a read's cancel marks (the SSE sessions' are `mcp:<key>:<session>`). */
function cancelMailboxId(token: string): string {
  return `mcp-cancel:${token}`;
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

/** A synchronous read named in the store while it runs (see `holdRunningRead`). */
export interface RunningRead {
  /** Aborted when the client cancels the call: pass it to the read. */
  readonly signal: AbortSignal;
  /**
   * The document became a job instead (the intake's decision): from now on a cancel cancels the job. Stops watching
   * for marks; a mark that came meanwhile cancels the job at once.
   */
  becameJob(jobId: string): Promise<void>;
  /**
   * The read ended: stop watching, after one last look at the mailbox. True when the client cancelled meanwhile (a
   * mark that came after the previous look): its answer is not wanted, and is not charged.
   */
  finished(): Promise<boolean>;
  /** The call answers: stop watching and give the name back. */
  end(): Promise<void>;
}

/**
 * Name a synchronous read under the call's key and JSON-RPC id (a random token), open the token's mailbox, and drain
 * it every `pollMs` while the read runs: a cancel mark there (`cancelRunningCall`, from any instance) aborts
 * `signal`. The naming goes on beside the read (it costs the read no time); a cancel that comes before it is done is
 * not seen. Not named — the read runs uncancellable, as before — when the name is taken (a call with the same key and
 * id is running: it keeps it) or the store failed. Costs one store command per `pollMs` while the read runs, five
 * around it.
 */
export function holdRunningRead(
  store: Store,
  env: Env,
  runtime: Pick<Runtime, "workQueue" | "deliveries">,
  account: Account,
  deadline: number,
  rpcId: string | number,
  pollMs: number = CANCEL_POLL_MS,
): RunningRead {
  const mailboxes = store.mailbox;
  const token = randomBytes(16).toString("base64url");
  const mailboxId = cancelMailboxId(token);
  const ttlMs = holdTtlMs(deadline);
  const cancelled = new AbortController();
  const look = async () => {
    if (cancelled.signal.aborted) return;
    // A failed look is retried at the next tick.
    const marks = await mailboxes.drainMailbox(mailboxId).catch(() => []);
    if (marks.length > 0) cancelled.abort(new Error("The client cancelled the call (notifications/cancelled)"));
  };
  let timer: NodeJS.Timeout | undefined;
  let looking: Promise<void> | null = null;
  let ended = false;

  const naming = (async (): Promise<{ release(): Promise<void> } | null> => {
    let held: { release(): Promise<void> } | null;
    try {
      // The mailbox before the name: a cancel that finds the name finds the mailbox open.
      await mailboxes.openMailbox(mailboxId, ttlMs);
      held = await holdRecord(
        store,
        RUNNING_CALL,
        account.userId,
        runningCallName(account.keyId, rpcId),
        `${READ_PREFIX}${token}`,
        ttlMs,
      );
    } catch (error) {
      // A mailbox left open expires by itself, and nothing names it.
      console.error("[mcp] naming a running read failed:", describeError(error));
      return null;
    }
    if (held === null) {
      await mailboxes.closeMailbox(mailboxId).catch(() => undefined);
      return null;
    }
    if (!ended) {
      timer = setInterval(() => {
        looking ??= look().finally(() => {
          looking = null;
        });
      }, pollMs);
    }
    return held;
  })();

  let stopped: Promise<boolean> | null = null;
  /**
   * Stop watching once named: stop the timer, look once more (a mark pushed before the mailbox closes is seen), close
   * the mailbox. False when the read was never named.
   */
  const stop = () =>
    (stopped ??= (async () => {
      ended = true;
      if ((await naming) === null) return false;
      clearInterval(timer);
      await looking;
      await look();
      await mailboxes.closeMailbox(mailboxId).catch(() => undefined);
      return true;
    })());

  return {
    signal: cancelled.signal,
    async becameJob(jobId) {
      if ((await naming) === null) return;
      // Named before the mailbox closes: a cancel that finds it closed finds the job.
      await keepRecord(store, READ_JOB, account.userId, token, jobId, ttlMs).catch((error: unknown) =>
        console.error("[mcp] naming the job of a running read failed:", describeError(error)),
      );
      await stop();
      if (cancelled.signal.aborted) {
        await cancelActiveJob(store, env, runtime, account.userId, jobId).catch((error: unknown) =>
          console.error("[mcp] cancelling the job of a cancelled read failed:", describeError(error)),
        );
      }
    },
    async finished() {
      await stop();
      return cancelled.signal.aborted;
    },
    async end() {
      const named = await stop();
      if (named) await (await naming)?.release();
    },
  };
}

/**
 * `notifications/cancelled` (MCP): the client gave up the request `rpcId`. A call waiting for its job: the job is
 * cancelled — its engine work stops, its unread pages are refunded — and the call, which watches the job, answers at
 * once (the client ignores that answer). A synchronous read: a cancel mark for it, which the read notices within
 * about a second (`holdRunningRead`). Anything else — nothing running under that key and id — is ignored, as the spec
 * allows.
 */
export async function cancelRunningCall(
  store: Store,
  env: Env,
  runtime: Pick<Runtime, "workQueue" | "deliveries">,
  account: Account,
  rpcId: string | number,
): Promise<void> {
  const held = await readHeld(store, RUNNING_CALL, account.userId, runningCallName(account.keyId, rpcId));
  if (held === null) return;
  if (!held.startsWith(READ_PREFIX)) {
    await cancelActiveJob(store, env, runtime, account.userId, held);
    return;
  }
  const token = held.slice(READ_PREFIX.length);
  await store.mailbox.pushMailbox(cancelMailboxId(token), CANCEL_MARK, CANCEL_MARK_TTL_MS);
  // The read may have become a job, named before its last look at the mailbox: a mark that came after that look (to
  // a mailbox still open, or already closed) would not be seen, so the job is cancelled here.
  const jobId = await readRecord(store, READ_JOB, account.userId, token);
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
