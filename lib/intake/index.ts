/*
 * The one intake (docs/architecture.md#intake): every document — a REST request, a job, an MCP call — is checked,
 * loaded, inspected and paid for once here, then read now (lib/process) or as a job (lib/jobs).
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
export { inputSourceOf, sourceOfBody, type DocumentSource } from "./source";
export { currentScope, requestScope, runInScope, withinScope, type RequestScope } from "@/lib/request-scope";
