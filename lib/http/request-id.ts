import { randomBytes } from "node:crypto";

/**
 * A new request id, `req_` + 16 random bytes in base64url. Always ours: an incoming `x-request-id` is not reused,
 * because request ids key credit reservations and ledger entries and must be unique.
 */
export function newRequestId(): string {
  return `req_${randomBytes(16).toString("base64url")}`;
}
