/**
 * An OAuth error (RFC 6749 §5.2, RFC 7591 §3.2.2): the `error` code and a readable `error_description`, answered as
 * `{ error, error_description }` JSON by the token, registration and revocation endpoints, or as query parameters of
 * the redirect back to the client by the authorization endpoint.
 */
export class OAuthProblem extends Error {
  readonly error: string;
  readonly status: number;
  readonly headers: Record<string, string>;

  constructor(
    error: string,
    description: string,
    { status = 400, headers = {} }: { status?: number; headers?: Record<string, string> } = {},
  ) {
    super(description);
    this.name = "OAuthProblem";
    this.error = error;
    this.status = status;
    this.headers = headers;
  }
}

export function isOAuthProblem(error: unknown): error is OAuthProblem {
  return error instanceof Error && error.name === "OAuthProblem" && "error" in error && "status" in error;
}

/** The JSON answer of an OAuth endpoint's error; never cached. */
export function problemResponse(problem: OAuthProblem): Response {
  return Response.json(
    { error: problem.error, error_description: problem.message },
    { status: problem.status, headers: { "Cache-Control": "no-store", ...problem.headers } },
  );
}
