export { SSE_PROTOCOL_VERSION, createSseTransport, type SseTransport, type SseTransportOptions } from "./transport";
export { SESSION_TTL_MS, newSessionId, sessionMailboxId, sessionStreamEnd } from "./relay";
