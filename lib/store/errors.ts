import { ApiError, isApiError } from "@/lib/api/errors";

/**
 * A failed Redis call as the `unavailable` error (503): keys and credits fail closed. The log line carries the
 * operation and the error's first clause only — @upstash/redis appends the whole command to its messages, and
 * commands carry password and key hashes.
 */
export function storeUnavailable(operation: string, error: unknown): ApiError {
  if (isApiError(error)) return error;
  const message = error instanceof Error ? error.message : String(error);
  console.error(`[store] ${operation} failed: ${message.split(", command was:")[0]?.slice(0, 200)}`);
  return new ApiError("unavailable", "The account store is unavailable. Please try again shortly.", { cause: error });
}
