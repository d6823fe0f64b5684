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
export async function inLanes<T>(items: readonly T[], lanes: number, task: (item: T, index: number) => Promise<void>): Promise<void> {
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
