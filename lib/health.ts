import { countOverdueReservations } from "@/lib/credits";
import { getStore, MISSING_STORE_MESSAGE } from "@/lib/store";

/** A store that does not answer within this is reported as down: a health check must not hang. */
const PING_TIMEOUT_MS = 1_500;

export interface StoreHealth {
  kind: string;
  ok: boolean;
  latencyMs: number;
  /**
   * Credit reservations still open after their request's deadline (their instance died before settling them); the
   * sweep refunds them within a minute or two. A number that stays above zero means nothing sweeps.
   */
  overdueReservations?: number;
  error?: string;
}

/** Whether the store answers (and how many credit reservations are overdue): `GET /api/health`'s `store` field. */
export async function checkStore(): Promise<StoreHealth> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  let kind = "none";
  try {
    const store = getStore(); // throws in production when no Redis is configured
    kind = store.kind;
    await withTimeout(store.ping(), PING_TIMEOUT_MS, `no answer within ${PING_TIMEOUT_MS} ms`);
    const latencyMs = elapsed();
    const overdueReservations = await withTimeout(countOverdueReservations(), PING_TIMEOUT_MS, "no answer").catch(() => undefined);
    return { kind, ok: true, latencyMs, ...(overdueReservations !== undefined && { overdueReservations }) };
  } catch (error) {
    // Fixed wording, never the raw error: it could carry a connection string.
    const reason =
      error instanceof TimeoutError
        ? error.message
        : kind !== "none"
          ? "unreachable"
          : error instanceof Error && error.message === MISSING_STORE_MESSAGE
            ? "no store is configured"
            : "the store configuration is invalid";
    return { kind, ok: false, latencyMs: elapsed(), error: reason };
  }
}

class TimeoutError extends Error {}

function withTimeout<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new TimeoutError(message)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
