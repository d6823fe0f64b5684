import { ProtocolError, RELATED_TASK_META_KEY, type CallToolResult } from "@modelcontextprotocol/server";
import { z } from "zod";
import { getJobView, type JobView } from "@/lib/jobs";
import type { Env } from "@/lib/env";
import type { Store } from "@/lib/store";
import { SSE_HEADERS } from "./sse/relay";
import { jobToolResult } from "./job-answers";
import { isJobActive, pagesSettled, waitForJob } from "./jobs";
import { JOB_POLL_MS, taskError } from "./tasks";
import type { DeliveryQueue } from "@/lib/webhooks";

/*
 * `tasks/result` as the 2025-11-25 spec has it — it answers once the task has ended, however long that takes — within
 * calls that cannot outlive their budget: Streamable HTTP's polling (SEP-1699, 2025-11-25). The POST is answered as an
 * event stream that starts with a priming event (an `id` and a `retry`, no data); if the task is still working at the
 * end of the call's budget the stream ends without an answer, and the client reconnects with `GET` and `Last-Event-ID`
 * after `retry` ms. The event id holds everything needed to go on — the task, the JSON-RPC id to answer, the progress
 * token and the pages reported — so any instance serves the reconnect, and the answer comes, under the original id,
 * on the stream open when the task ends. The official SDK's `getTaskResult` (v1.32's Streamable HTTP client) does
 * exactly this; other clients, JSON-only ones and the legacy SSE transport keep the one-call answer (`-32603` "still
 * working" at the end of the budget; docs/mcp.md).
 */

/** The protocol version whose tasks this server serves (and whose clients resume a stream). */
const TASKS_VERSION = "2025-11-25";
/** How long a client waits before it reconnects (the `retry` of the priming event). */
const RECONNECT_MS = 500;
/** Time kept at the end of a stream's budget to read a finished job's text and send it. */
const ANSWER_MARGIN_MS = 3_000;
/** Event ids of a `tasks/result` stream: `tr1.` and base64url of {@link resumeSchema}. */
const TOKEN_PREFIX = "tr1.";

const resumeSchema = z.strictObject({
  /** The task (job) id. */
  t: z.string().min(1).max(200),
  /** The JSON-RPC id of the `tasks/result` request. */
  i: z.union([z.string().max(200), z.number()]),
  /** Its progress token, if any. */
  p: z.union([z.string().max(200), z.number()]).optional(),
  /** Pages already reported on that token. */
  n: z.number().int().min(0),
});
type ResultStream = z.infer<typeof resumeSchema>;

const requestSchema = z.strictObject({
  jsonrpc: z.literal("2.0"),
  id: z.union([z.string().max(200), z.number()]),
  method: z.literal("tasks/result"),
  params: z.looseObject({
    taskId: z.string().min(1).max(200),
    _meta: z.looseObject({ progressToken: z.union([z.string().max(200), z.number()]).optional() }).optional(),
  }),
});

/**
 * The `tasks/result` of a POST that may be answered by polling: one request (no batch), from a client that accepts an
 * event stream and speaks 2025-11-25 (older clients do not expect a data-less priming event; the 2026-07-28 revision,
 * served by the SDK's own handler, has tasks as an extension this server does not offer), without an
 * `Idempotency-Key` (such an answer is stored whole). Null for anything else.
 */
export function pollableTaskResult(req: Request, body: unknown): ResultStream | null {
  const accepts = (req.headers.get("accept") ?? "").toLowerCase().includes("text/event-stream");
  const version = req.headers.get("mcp-protocol-version")?.trim() ?? "";
  if (!accepts || version !== TASKS_VERSION || req.headers.has("idempotency-key")) return null;
  const parsed = requestSchema.safeParse(body);
  if (!parsed.success) return null;
  const { id, params } = parsed.data;
  return {
    t: params.taskId,
    i: id,
    ...(params._meta?.progressToken !== undefined && { p: params._meta.progressToken }),
    n: 0,
  };
}

/** The state a reconnecting GET's `Last-Event-ID` carries, or null when it is not one of ours. */
export function resumedTaskResult(req: Request): ResultStream | null {
  const id = req.headers.get("last-event-id");
  if (id === null || !id.startsWith(TOKEN_PREFIX)) return null;
  try {
    return resumeSchema.parse(JSON.parse(Buffer.from(id.slice(TOKEN_PREFIX.length), "base64url").toString("utf8")));
  } catch {
    return null;
  }
}

function tokenOf(state: ResultStream): string {
  return TOKEN_PREFIX + Buffer.from(JSON.stringify(state)).toString("base64url");
}

interface ServeOptions {
  /** The store the task's job lives in (the request context's). */
  store: Store;
  /** The configuration (the request context's). */
  env: Env;
  deliveries: DeliveryQueue | null;
  userId: string;
  requestId: string;
  /** Epoch ms the stream must end by (the call's budget). */
  deadline: number;
  pollMs?: number;
  /** The request's signal: the client went away. */
  signal: AbortSignal;
}

/**
 * Answer a `tasks/result` (or its reconnect) as an event stream: the priming event, one progress notification per
 * page when it has a progress token (each with an event id that counts it), and the result once the task has ended —
 * or the end of the stream at the end of the budget, for the client to reconnect. A task that cannot be found is a
 * JSON-RPC error (`-32602`) before any event: answered as JSON by the caller.
 */
export async function serveTaskResult(state: ResultStream, options: ServeOptions): Promise<Response> {
  // Looked up first: an unknown, expired or another account's task is an error, not a stream a client would resume.
  const first = await getJobView(options.store, options.env, options.deliveries, options.userId, state.t);
  const encoder = new TextEncoder();
  let reported = state.n;
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      const write = (text: string) => {
        try {
          controller.enqueue(encoder.encode(text));
        } catch {
          // the client went away
        }
      };
      const message = (payload: unknown, id?: string) =>
        write(`${id !== undefined ? `id: ${id}\n` : ""}event: message\ndata: ${JSON.stringify(payload)}\n\n`);
      write(`id: ${tokenOf(state)}\nretry: ${RECONNECT_MS}\ndata: \n\n`);
      // One progress notification per page settled since the last one the client saw (`before`).
      const reportPages = (seen: JobView, before: number) => {
        if (state.p === undefined) return;
        for (let settled = Math.max(before, reported) + 1; settled <= pagesSettled(seen); settled++) {
          reported = settled;
          const params = {
            progressToken: state.p,
            progress: settled,
            total: seen.pagesTotal,
            message: `Read ${settled} of ${seen.pagesTotal} pages`,
          };
          message({ jsonrpc: "2.0", method: "notifications/progress", params }, tokenOf({ ...state, n: settled }));
        }
      };
      void (async () => {
        try {
          const view = isJobActive(first)
            ? await waitForJob(options.userId, state.t, {
                store: options.store,
                env: options.env,
                deliveries: options.deliveries,
                until: options.deadline - ANSWER_MARGIN_MS,
                pollMs: options.pollMs ?? JOB_POLL_MS,
                reportedBefore: state.n,
                onPages: reportPages,
                signal: options.signal,
              })
            : first;
          if (!isJobActive(view)) {
            // A client that has been told of pages hears of the rest before the result, also when the job ended
            // between two streams (a reconnect that finds it ended); one that was told of none gets the result alone.
            if (reported > 0) reportPages(view, state.n);
            message({
              jsonrpc: "2.0",
              id: state.i,
              result: await taskResult(options.store, options.env, options.deliveries, options.userId, view),
            });
          }
        } catch (error) {
          const failure = taskError(error, options.requestId);
          message({ jsonrpc: "2.0", id: state.i, error: { code: failure.code, message: failure.message } });
        } finally {
          try {
            controller.close();
          } catch {
            // already cancelled
          }
        }
      })();
    },
  });
  return new Response(stream, { headers: SSE_HEADERS });
}

/** What `tasks/result` answers for an ended task: the tool's result for its job, tied to the task. */
export async function taskResult(
  store: Store,
  env: Env,
  deliveries: DeliveryQueue | null,
  userId: string,
  view: JobView,
): Promise<CallToolResult> {
  const result = await jobToolResult(store, env, deliveries, userId, view, "");
  return { ...result, _meta: { [RELATED_TASK_META_KEY]: { taskId: view.jobId } } };
}

/** A task error as the JSON-RPC error answer of a request (`id`). */
export function taskErrorAnswer(error: unknown, id: string | number, requestId: string): Response {
  const failure: ProtocolError = taskError(error, requestId);
  return Response.json({ jsonrpc: "2.0", id, error: { code: failure.code, message: failure.message } });
}
