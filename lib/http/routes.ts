import { ApiError } from "@/lib/api/errors";
import { getEnv } from "@/lib/env";
import { getStore } from "@/lib/store";
import { preflightHeaders } from "./cors";
import type { RequestContext } from "./context";
import { newRequestId } from "./request-id";
import { errorAnswer, finishResponse } from "./respond";

export type RouteHandler = (req: Request) => Promise<Response>;

/** For routes without a key (`/api/openapi.json`, health): request id, CORS, the one catch, one log line. */
export function withRequest(handler: (context: RequestContext) => Promise<Response>): RouteHandler {
  return async (req) => {
    const requestId = newRequestId();
    const receivedAt = Date.now();
    let response: Response;
    let code: string | undefined;
    try {
      response = await handler(requestContext(req, requestId, receivedAt));
    } catch (error) {
      ({ response, code } = errorAnswer(error, requestId));
    }
    return finishResponse(response, { req, requestId, receivedAt, facts: { code } });
  };
}

/** A request's context: its configuration read now (a bad one throws here, inside the wrapper's catch), the store on first read. */
export function requestContext(req: Request, requestId: string, receivedAt: number): RequestContext {
  const env = getEnv();
  return {
    req,
    requestId,
    receivedAt,
    env,
    get store() {
      return getStore();
    },
  };
}

/** `OPTIONS`: the CORS preflight answer, `204` with `Allow`; no key needed. */
export function preflight(methods: readonly string[]): RouteHandler {
  const allow = [...new Set([...methods, "OPTIONS"])];
  return withRequest(
    async () => new Response(null, { status: 204, headers: { ...preflightHeaders(allow), Allow: allow.join(", ") } }),
  );
}

/** Every other method: `405 method_not_allowed` with `Allow`. */
export function methodNotAllowed(methods: readonly string[]): RouteHandler {
  const allow = [...new Set([...methods, "OPTIONS"])];
  return withRequest(async ({ req }) => {
    throw new ApiError(
      "method_not_allowed",
      `${req.method.slice(0, 20)} is not allowed here; use ${allow.join(" or ")}`,
      {
        headers: { Allow: allow.join(", ") },
      },
    );
  });
}
