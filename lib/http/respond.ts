import { toApiError, toErrorResponse } from "@/lib/api/errors";
import { corsHeaders, setHeaders } from "./cors";
import { logRequest } from "./log";

/** What the log line says about an answer besides its status: known to the wrapper, never parsed from the body. */
export interface AnswerFacts {
  /** Pages charged. */
  pages?: number;
  /** Credits refunded after the work was done (its answer could not be delivered). */
  refunded?: number;
  /** Error code of a failure. */
  code?: string;
  /** Replayed for an `Idempotency-Key`. */
  replayed?: boolean;
}

/** The answer to a thrown error (`toErrorResponse`) and its code for the log line. */
export function errorAnswer(error: unknown, requestId: string): { response: Response; code: string } {
  const apiError = toApiError(error);
  return { response: toErrorResponse(apiError, requestId), code: apiError.code };
}

/** A copy of `response` with `headers` set on it (they win). `body` replaces a consumed body. */
export function withHeaders(
  response: Response,
  headers: Record<string, string>,
  body: BodyInit | null = response.body,
): Response {
  const merged = setHeaders(new Headers(response.headers), headers);
  return new Response(body, { status: response.status, statusText: response.statusText, headers: merged });
}

interface FinishOptions {
  req: Request;
  requestId: string;
  receivedAt: number;
  keyId?: string;
  /** Set last, e.g. the `RateLimit-*` headers. */
  headers?: Record<string, string>;
  facts?: AnswerFacts;
}

/** Every response leaves through here: CORS, `x-request-id`, extra headers, and one log line. */
export function finishResponse(
  response: Response,
  { req, requestId, receivedAt, keyId, headers = {}, facts = {} }: FinishOptions,
): Response {
  // A refusal of a request whose body was never read (a `401` before the key, a `429`): the connection closes after
  // the answer, so the server does not read the rest of a body no one will use (Node drains it to keep the connection
  // alive otherwise) — as after an unread body's `413` (lib/http/body.ts).
  const unread = response.status >= 400 && req.body !== null && !req.bodyUsed;
  const finished = withHeaders(response, {
    ...corsHeaders(),
    ...headers,
    "x-request-id": requestId,
    ...(unread && { Connection: "close" }),
  });
  logRequest({
    requestId,
    method: req.method,
    path: safePath(req.url),
    status: finished.status,
    ms: Date.now() - receivedAt,
    keyId,
    pages: facts.pages,
    refunded: facts.refunded,
    code: facts.code,
    replayed: facts.replayed,
  });
  return finished;
}

function safePath(url: string): string {
  try {
    return new URL(url).pathname.slice(0, 200);
  } catch {
    return "-";
  }
}
