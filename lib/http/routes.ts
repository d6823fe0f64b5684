import { ApiError } from "@/lib/api/errors";
import { services } from "@/lib/services";
import type { SettingsOverrides } from "@/lib/settings";
import { preflightHeaders } from "./cors";
import type { RequestContext } from "./context";
import { newRequestId } from "./request-id";
import { errorAnswer, finishResponse } from "./respond";

export type RouteHandler = (req: Request) => Promise<Response>;

/** What a route instance is given besides the process's services: overrides of the modules' settings (tests). */
export interface RouteOptions {
  settings?: SettingsOverrides;
}

/**
 * A route handler, and `with(options)`: the same route as an instance with its own settings — how a test passes
 * short timings to a route (`processRoute.POST.with({ settings: { fetch: { timeoutMs: 400 } } })(req)`), there being
 * no `main` above a route to pass them down from.
 */
export interface Route extends RouteHandler {
  with(options: RouteOptions): RouteHandler;
}

/** A `Route` from the function that serves one request with a route instance's options. */
export function route(serve: (req: Request, options: RouteOptions) => Promise<Response>): Route {
  const handler: RouteHandler = (req) => serve(req, {});
  return Object.assign(handler, { with: (options: RouteOptions) => (req: Request) => serve(req, options) });
}

/** For routes without a key (`/api/openapi.json`, health): request id, CORS, the one catch, one log line. */
export function withRequest(handler: (context: RequestContext) => Promise<Response>): Route {
  return route(async (req, options) => {
    const requestId = newRequestId();
    const receivedAt = Date.now();
    let response: Response;
    let code: string | undefined;
    try {
      response = await handler(requestContext(req, requestId, receivedAt, options));
    } catch (error) {
      ({ response, code } = errorAnswer(error, requestId));
    }
    return finishResponse(response, { req, requestId, receivedAt, facts: { code } });
  });
}

/**
 * A request's context: the process's services (lib/services.ts) — its configuration read now (a bad one throws
 * here, inside the wrapper's catch), the process's settings with the route instance's overrides, the store, the
 * engine pool and the queues on first read.
 */
export function requestContext(
  req: Request,
  requestId: string,
  receivedAt: number,
  options: RouteOptions = {},
): RequestContext {
  const given = services(options.settings);
  return {
    req,
    requestId,
    receivedAt,
    env: given.env,
    settings: given.settings,
    get store() {
      return given.store;
    },
    get pool() {
      return given.pool;
    },
    get workQueue() {
      return given.workQueue;
    },
    get deliveries() {
      return given.deliveries;
    },
  };
}

/** `OPTIONS`: the CORS preflight answer, `204` with `Allow`; no key needed. */
export function preflight(methods: readonly string[]): Route {
  const allow = [...new Set([...methods, "OPTIONS"])];
  return withRequest(
    async () => new Response(null, { status: 204, headers: { ...preflightHeaders(allow), Allow: allow.join(", ") } }),
  );
}

/** Every other method: `405 method_not_allowed` with `Allow`. */
export function methodNotAllowed(methods: readonly string[]): Route {
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
