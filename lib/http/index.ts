export { readApiKey } from "./api-key";
export { MAX_JSON_DEPTH, isJsonContentType, maxBodyBytes, requestBody, type RequestBody } from "./body";
export type { ApiContext, Report, RequestContext } from "./context";
export { CORS_ALLOW_HEADERS, CORS_EXPOSE_HEADERS, corsHeaders, preflightHeaders } from "./cors";
export { logRequest } from "./log";
export { newRequestId } from "./request-id";
export { requestOrigin } from "./origin";
export { methodNotAllowed, preflight, withRequest, type RouteHandler } from "./routes";
export { isFinalOutcome, withApiKey } from "./with-api-key";
