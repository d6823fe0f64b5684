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
 * Safe to log anywhere: the error's code, else its class name, else "error". By default any string `code` property
 * counts (Node's system errors, Redis clients, ApiError); `codeOf` narrows which codes are trusted (e.g. only an
 * ApiError's). A leaf with no imports, so the engine can log with it too.
 */
export function errorLabel(error: unknown, codeOf: (error: unknown) => string | undefined = stringCode): string {
  const code = codeOf(error);
  if (code !== undefined) return code;
  return error instanceof Error ? error.name : "error";
}

function stringCode(error: unknown): string | undefined {
  return typeof error === "object" && error !== null && "code" in error && typeof error.code === "string"
    ? error.code
    : undefined;
}
