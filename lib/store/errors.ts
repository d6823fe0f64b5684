import { ApiError, isApiError } from "@/lib/api/errors";
import { isRedisConnectionError } from "./redis-link";

/**
 * A failed Redis call as the `unavailable` error (503): keys and credits fail closed. The log line carries the
 * operation and the error's first clause only — @upstash/redis appends the whole command to its messages, and
 * commands carry password and key hashes. A lost connection is not logged per call: the link says it once
 * (lib/store/redis-link.ts).
 */
export function storeUnavailable(operation: string, error: unknown): ApiError {
  if (isApiError(error)) return error;
  const message = error instanceof Error ? error.message : String(error);
  if (!isRedisConnectionError(error))
    console.error(`[store] ${operation} failed: ${message.split(", command was:")[0]?.slice(0, 200)}`);
  return new ApiError("unavailable", "The account store is unavailable. Please try again shortly.", { cause: error });
}
