import { AsyncLocalStorage } from "node:async_hooks";

/**
 * The deadline of the request being served, visible to everything it calls (the store's Redis clients cap each
 * command's timeout by it), without threading it through every signature.
 */
interface RequestScope {
  /** Epoch ms by which the request must be answered (`504 timeout` at the latest). */
  deadline: number;
}

/** Time allowed past the deadline to answer: refund what was reserved, write the `504`. */
export const ANSWER_GRACE_MS = 1_000;

const storage = new AsyncLocalStorage<RequestScope>();

/** Run `fn` with `deadline` as the current request's deadline (nested scopes may only shorten it). */
export function runWithDeadline<T>(deadline: number, fn: () => T): T {
  const outer = storage.getStore();
  return storage.run({ deadline: outer ? Math.min(outer.deadline, deadline) : deadline }, fn);
}

/** The current request's deadline, or undefined outside a request (CLI, background sweeps). */
function currentDeadline(): number | undefined {
  return storage.getStore()?.deadline;
}

/**
 * The timeout for one outside call (a Redis command) made now: `defaultMs`, shortened so that it ends by the
 * request's deadline plus the answer grace — never below `minMs`, so a refund at the deadline still gets a chance.
 */
export function callBudgetMs(defaultMs: number, minMs = 250, now = Date.now()): number {
  const deadline = currentDeadline();
  if (deadline === undefined) return defaultMs;
  return Math.max(minMs, Math.min(defaultMs, deadline + ANSWER_GRACE_MS - now));
}
