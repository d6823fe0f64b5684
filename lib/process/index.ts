/*
 * One synchronous OCR request, from a validated body to its answer (the REST route and the MCP tool call it), and
 * the mapping of the engine's own errors to the API's codes (the job runner uses it too).
 */
export { checkedUpload, processDocument, type OpenCharge, type ProcessAccount, type ProcessDocumentInput, type ProcessDocumentResult } from "./process";
export { fromEngineError } from "./errors";
