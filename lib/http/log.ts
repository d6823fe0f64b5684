import { getEnv } from "@/lib/env";

interface RequestLogLine {
  requestId: string;
  method: string;
  /** Path only: a query string may carry secrets. */
  path: string;
  status: number;
  /** Milliseconds from request received to response ready. */
  ms: number;
  keyId?: string;
  /** Pages charged (0 on failure). */
  pages?: number;
  /** Pages read and charged, then refunded because the answer could not be delivered (logged when nonzero). */
  refunded?: number;
  /** Error code of a failure. */
  code?: string;
  /** The response was replayed for an `Idempotency-Key`. */
  replayed?: boolean;
}

/**
 * One line per request when `LOG_REQUESTS` is on. By construction it holds ids, numbers and codes only: never a
 * key, a file, a URL or a message that could quote one.
 */
export function logRequest(line: RequestLogLine): void {
  let enabled = true;
  try {
    enabled = getEnv().LOG_REQUESTS;
  } catch {
    // A configuration error is reported by the request itself; still log.
  }
  if (!enabled) return;
  const parts = [
    "api",
    `request_id=${line.requestId}`,
    `key_id=${line.keyId ?? "-"}`,
    `method=${line.method}`,
    `path=${line.path}`,
    `status=${line.status}`,
    `pages=${line.pages ?? 0}`,
    `ms=${Math.round(line.ms)}`,
  ];
  if (line.refunded) parts.push(`refunded=${line.refunded}`);
  if (line.code) parts.push(`code=${line.code}`);
  if (line.replayed) parts.push("replayed=1");
  console.info(parts.join(" "));
}
