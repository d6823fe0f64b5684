import { AsyncLocalStorage } from "node:async_hooks";

/**
 * The one deadline of the request being served (docs/decisions.md#one-deadline): created once, when the request is
 * admitted, as an epoch-ms deadline and the `AbortSignal` that fires at it — or earlier, when the client goes away
 * (a REST connection closed, MCP's `notifications/cancelled`). Everything the request calls sees it without threading
 * it through every signature: the URL fetch and the engine pool take its signal, the store's Redis clients cap each
 * command's timeout by its deadline.
 */
export interface RequestScope {
  /** Epoch ms by which the request must be answered (`504 timeout`). */
  readonly deadline: number;
  /** Aborts at the deadline, or when the request is cancelled; its reason is a `ScopeEnded`. */
  readonly signal: AbortSignal;
}

/** Time allowed past the deadline to answer: refund what was reserved, write the `504`. */
export const ANSWER_GRACE_MS = 1_000;

const storage = new AsyncLocalStorage<RequestScope>();

/**
 * Why a scope's signal aborted: its deadline passed, or the client cancelled (went away, or sent MCP's
 * `notifications/cancelled`). lib/jobs/engine-errors.ts answers it as `504 timeout`. Recognised by name (`isScopeEnded`):
 * each bundle has its own copy of the class.
 */
export class ScopeEnded extends Error {
  constructor(readonly why: "deadline" | "cancelled") {
    super(why === "deadline" ? "The request deadline passed" : "The request was cancelled by its client");
    this.name = "ScopeEnded";
  }
}

export function isScopeEnded(error: unknown): error is ScopeEnded {
  return error instanceof Error && error.name === "ScopeEnded";
}

/**
 * A scope ending at `deadline` (or the current scope's, if earlier) and aborted by `cancel` too. Nested scopes only
 * narrow: a tool call's shorter budget inside its HTTP request, the SDK's request signal inside the route's.
 */
export function requestScope({ deadline, cancel }: { deadline?: number; cancel?: AbortSignal } = {}): RequestScope {
  const outer = storage.getStore();
  const end = Math.min(deadline ?? Number.POSITIVE_INFINITY, outer?.deadline ?? Number.POSITIVE_INFINITY);
  if (!Number.isFinite(end)) throw new Error("requestScope: no deadline");
  const controller = new AbortController();
  const remaining = end - Date.now();
  if (remaining <= 0) controller.abort(new ScopeEnded("deadline"));
  else {
    const timer = setTimeout(() => controller.abort(new ScopeEnded("deadline")), remaining);
    timer.unref();
    controller.signal.addEventListener("abort", () => clearTimeout(timer), { once: true });
  }
  for (const source of [outer?.signal, cancel]) {
    if (!source) continue;
    const forward = () => controller.abort(isScopeEnded(source.reason) ? source.reason : new ScopeEnded("cancelled"));
    if (source.aborted) forward();
    else source.addEventListener("abort", forward, { once: true, signal: controller.signal });
  }
  return { deadline: end, signal: controller.signal };
}

/** Run `fn` inside `scope` (see `requestScope`). */
export function runInScope<T>(scope: RequestScope, fn: (scope: RequestScope) => T): T {
  return storage.run(scope, () => fn(scope));
}

/** Run `fn` in a scope narrowed to `deadline` and `cancel` (shorthand of `requestScope` + `runInScope`). */
export function withinScope<T>(limits: { deadline?: number; cancel?: AbortSignal }, fn: (scope: RequestScope) => T): T {
  return runInScope(requestScope(limits), fn);
}

/** The current request's scope, or undefined outside a request (CLI, background sweeps, job pages). */
export function currentScope(): RequestScope | undefined {
  return storage.getStore();
}

/** Throw why `signal` aborted (a `ScopeEnded`) if it has: between steps, so none starts too late. */
export function throwIfEnded(signal: AbortSignal): void {
  if (signal.aborted) throw isScopeEnded(signal.reason) ? signal.reason : new ScopeEnded("cancelled");
}

/**
 * The timeout for one outside call (a Redis command) made now: `defaultMs`, shortened so that it ends by the
 * request's deadline plus the answer grace — never below `minMs`, so a refund at the deadline still gets a chance.
 */
export function callBudgetMs(defaultMs: number, minMs = 250, now = Date.now()): number {
  const deadline = storage.getStore()?.deadline;
  if (deadline === undefined) return defaultMs;
  return Math.max(minMs, Math.min(defaultMs, deadline + ANSWER_GRACE_MS - now));
}
