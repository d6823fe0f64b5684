/*
 * Reading a document now, for the answer (the intake, lib/intake, decides it), the account's requests in flight, and
 * the mapping of the engine's own errors to the API's codes (the job runner uses it too).
 */
export {
  readNow,
  type OpenCharge,
  type ProcessAccount,
  type ProcessDocumentResult,
  type ReadNowInput,
} from "./process";
export { fromEngineError } from "./errors";
export { acquireInFlight } from "./in-flight";
