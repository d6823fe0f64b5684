/**
 * Small promise helpers shared by the server, the engine process and the benchmarks. A leaf with no imports, so the
 * engine (which has its own errors) and its bundle (scripts/build-engine.mjs) can take it as it is.
 */

/** `withTimeout`'s rejection when only a message was given: callers may tell it from the work's own failures. */
export class TimeoutError extends Error {}

/**
 * `promise`, or a rejection after `ms` if it has not settled by then: a `TimeoutError` with `error` when it is a
 * message, else what `error()` returns. The work itself is not cancelled; it goes on and settles unobserved.
 */
export function withTimeout<T>(promise: Promise<T>, ms: number, error: string | (() => Error)): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(typeof error === "string" ? new TimeoutError(error) : error()), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/**
 * Run `task` over `items` with at most `lanes` running at once, each lane taking the next item when it is done,
 * so items start in order. Resolves when every item is done; rejects with the first failure, like `Promise.all`
 * (the other lanes still finish what they run and take the items left).
 */
export async function inLanes<T>(
  items: readonly T[],
  lanes: number,
  task: (item: T, index: number) => Promise<void>,
): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(lanes, items.length) }, async () => {
      while (next < items.length) {
        const index = next++;
        await task(items[index]!, index);
      }
    }),
  );
}

/** How often an awake timer looks at the clock; also the least time it still waits after the loop was held. */
const AWAKE_STEP_MS = 250;
/** Lateness of a step beyond which the loop counts as held (a synchronous module load, a long GC pause). */
const AWAKE_STALL_MS = 100;

/**
 * `setTimeout(onTimeout, ms)` that counts only the time this process's event loop was free to run; returns the
 * function that cancels it. A plain timer that comes due while the loop is held (Next.js loads every route's module
 * synchronously after start: 2.5 s of CPU, 4–11 s on a busy machine) runs before the I/O that completed meanwhile is
 * even looked at, so a reply that arrived in time counts as missing. Here each step counts for at most its own length
 * plus a little, and after a held loop at least one more step is waited, so pending I/O (and the round trips it starts)
 * get their turn first. For waits on another party (Redis connects and commands), not for deadlines owed to a client.
 */
export function setAwakeTimeout(
  onTimeout: () => void,
  ms: number,
  { unref = false }: { unref?: boolean } = {},
): () => void {
  let remaining = ms;
  let last = performance.now();
  let timer: NodeJS.Timeout | undefined;
  const arm = () => {
    timer = setTimeout(tick, Math.max(1, Math.min(remaining, AWAKE_STEP_MS)));
    if (unref) timer.unref();
  };
  const tick = () => {
    const now = performance.now();
    const step = Math.min(remaining, AWAKE_STEP_MS);
    const held = now - last > step + AWAKE_STALL_MS;
    last = now;
    remaining -= step;
    if (held) remaining = Math.max(remaining, AWAKE_STEP_MS);
    if (remaining <= 0) onTimeout();
    else arm();
  };
  arm();
  return () => clearTimeout(timer);
}
