import { ApiError } from "@/lib/api/errors";

/**
 * OCR requests in flight per account on this instance, so one key cannot fill an instance (`ACCOUNT_MAX_IN_FLIGHT`,
 * default 4). Per instance by design: it protects this instance's engine processes, needs no store round trip and
 * cannot leak a slot when an instance dies. Kept on globalThis so Next dev reloads and bundle copies share one.
 */
const KEY = Symbol.for("ocr-service.in-flight");
type Holder = { [KEY]?: Map<string, number> };

function counts(): Map<string, number> {
  const holder = globalThis as Holder;
  holder[KEY] ??= new Map();
  return holder[KEY];
}

/**
 * Take one of the account's in-flight slots on this instance (at most `limit`: `ACCOUNT_MAX_IN_FLIGHT`); `429` with
 * `Retry-After` when none is left.
 */
export function acquireInFlight(userId: string, options: { limit: number; retryAfterS?: number }): () => void {
  const limit = options.limit;
  const map = counts();
  const current = map.get(userId) ?? 0;
  if (current >= limit) {
    const retryAfter = options.retryAfterS ?? 2;
    throw new ApiError(
      "rate_limited",
      `Too many requests in flight: at most ${limit} OCR requests per account at a time; retry in ${retryAfter} s`,
      { headers: { "Retry-After": String(retryAfter) } },
    );
  }
  map.set(userId, current + 1);
  let released = false;
  return () => {
    if (released) return;
    released = true;
    const left = (map.get(userId) ?? 1) - 1;
    if (left <= 0) map.delete(userId);
    else map.set(userId, left);
  };
}

/** Requests the account has in flight on this instance (0 when it has none: such accounts are not kept). */
export function inFlightCount(userId: string): number {
  return counts().get(userId) ?? 0;
}

/** Accounts with requests in flight on this instance. */
export function inFlightAccounts(): number {
  return counts().size;
}
