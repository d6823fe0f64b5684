export { readApiKey } from "./api-key";
export { MAX_JSON_DEPTH, isJsonContentType, maxBodyBytes, readBody, readJson } from "./body";
export { CORS_ALLOW_HEADERS, CORS_EXPOSE_HEADERS, corsHeaders, preflightHeaders } from "./cors";
export { logRequest } from "./log";
export { newRequestId } from "./request-id";
export { errorResponse, noteResponse, ocrResponse } from "./respond";
export { requestOrigin } from "./origin";
export { methodNotAllowed, preflight, withRequest, type RequestContext, type RouteHandler } from "./routes";
export { isFinalOutcome, withApiKey, type ApiContext } from "./with-api-key";
