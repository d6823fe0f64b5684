import type { OcrResponse } from "@/lib/api-schemas";
import { ApiError, toApiError, toErrorResponse } from "@/lib/errors";
import { corsHeaders, setHeaders } from "./cors";
import { logRequest } from "./log";

/** What the wrapper learns about a response for its log line, without parsing the body. */
interface ResponseFacts {
  pages?: number;
  code?: string;
  replayed?: boolean;
  /**
   * The answer reports a failure of the moment (timeout, overloaded, no credits…) inside a 200, as MCP tool
   * errors do: like a REST 402 or 5xx, it is not stored for `Idempotency-Key` replays, so a retry runs again.
   */
  transient?: boolean;
}

const facts = new WeakMap<Response, ResponseFacts>();

export function describeResponse(response: Response): ResponseFacts {
  return facts.get(response) ?? {};
}

/** A copy of `response` with other headers, keeping what the log line needs. `body` replaces a consumed body. */
export function rebuildResponse(response: Response, headers: Headers, body: BodyInit | null = response.body): Response {
  const copy = new Response(body, { status: response.status, statusText: response.statusText, headers });
  facts.set(copy, describeResponse(response));
  return copy;
}

export function noteResponse(response: Response, extra: ResponseFacts): Response {
  facts.set(response, { ...describeResponse(response), ...extra });
  return response;
}

/** The 200 of `POST /api/ocr/process`: the body and `x-credits-remaining`. */
export function ocrResponse({ response, creditsRemaining }: { response: OcrResponse; creditsRemaining: number }): Response {
  const answer = Response.json(response, { headers: { "x-credits-remaining": String(creditsRemaining) } });
  return noteResponse(answer, { pages: response.creditsUsed });
}

/** `toErrorResponse`, remembering the code for the log line. */
export function errorResponse(error: unknown, requestId: string): Response {
  const apiError: ApiError = toApiError(error);
  return noteResponse(toErrorResponse(apiError, requestId), { code: apiError.code });
}

interface FinishOptions {
  req: Request;
  requestId: string;
  receivedAt: number;
  keyId?: string;
  /** Set last, e.g. the `RateLimit-*` headers. */
  headers?: Record<string, string>;
}

/** Every response leaves through here: CORS, `x-request-id`, extra headers, and one log line. */
export function finishResponse(response: Response, { req, requestId, receivedAt, keyId, headers = {} }: FinishOptions): Response {
  const merged = setHeaders(new Headers(response.headers), { ...corsHeaders(), ...headers, "x-request-id": requestId });
  const finished = rebuildResponse(response, merged);
  const { pages, code, replayed } = describeResponse(response);
  logRequest({
    requestId,
    method: req.method,
    path: safePath(req.url),
    status: finished.status,
    ms: Date.now() - receivedAt,
    keyId,
    pages,
    code,
    replayed,
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
