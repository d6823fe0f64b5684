export {
  MCP_MAX_DURATION_S,
  MCP_PROGRESS_INTERVAL_MS,
  mcpConfig,
  type McpConfig,
  type SseTiming,
  type StreamCaps,
} from "./config";
export { createMcpRoute, type McpRoute } from "./route";
export { SESSION_TTL_MS, newSessionId, sessionMailboxId, sessionStreamEnd } from "./sse";
export { asksForProgress, buildServer } from "./server";
export { serveJsonExchange, serveStreamablePost, serveStreamedExchange } from "./streamable";
