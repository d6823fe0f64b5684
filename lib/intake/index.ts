/*
 * The one intake (docs/architecture.md#intake): every document — a REST request, a job, an MCP call — is checked,
 * loaded, inspected and paid for once here: a job, read now in the request (read-now.ts) or in the background (lib/jobs).
 */
export {
  intake,
  processDocument,
  readOrQueue,
  requestOf,
  submitJob,
  type IntakeInput,
  type ProcessDocumentInput,
  type IntakeMode,
  type IntakeOutcome,
} from "./intake";
export {
  readNow,
  type InlineWatch,
  type ProcessAccount,
  type ProcessDocumentResult,
  type ReadNowInput,
} from "./read-now";
export { acquireInFlight } from "./in-flight";
export { inputSourceOf, sourceOfBody, type DocumentSource } from "./source";
export { currentScope, requestScope, runInScope, withinScope, type RequestScope } from "@/lib/request-scope";
