import { isApiError } from "@/lib/errors";

/**
 * How an error is written to the server's (or the engine's) log. Two kinds of line: those for the operator, with
 * the whole stack, and those that must quote no message at all (a message may carry a URL, a key or a connection
 * string), with a code or a class name only. Never for a response body.
 */

/** For the operator: an Error's stack (or its message when it has none), anything else as a string. */
export function describeError(error: unknown): string {
  return error instanceof Error ? (error.stack ?? error.message) : String(error);
}

/**
 * Safe to log anywhere: the error's code, else its class name, else "error". `codes: "any"` takes any string
 * `code` property (Node's system errors, Redis clients, ApiError); `"api"` only an ApiError's.
 */
export function errorLabel(error: unknown, codes: "any" | "api" = "any"): string {
  const code = codes === "api" ? (isApiError(error) ? error.code : undefined) : stringCode(error);
  if (code !== undefined) return code;
  return error instanceof Error ? error.name : "error";
}

function stringCode(error: unknown): string | undefined {
  return typeof error === "object" && error !== null && "code" in error && typeof error.code === "string" ? error.code : undefined;
}
