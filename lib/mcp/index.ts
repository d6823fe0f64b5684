export { MCP_MAX_DURATION_S, MCP_PROGRESS_INTERVAL_MS, MCP_TOOL_DEADLINE_MS, readMcpConfig, type McpConfig, type SseTiming } from "./config";
export { createMcpRoute, type McpRoute, type McpRouteOptions } from "./route";
export { SESSION_TTL_MS, newSessionId, sessionMailboxId, sessionStreamEnd } from "./relay";
export {
  SERVER_INFO,
  TOOL_NAME,
  asksForProgress,
  buildServer,
  extractTextInputSchema,
  extractTextOutputSchema,
  imageSourceSchema,
  toOcrRequest,
  toolErrorResult,
  type BuildServerOptions,
  type ExtractTextInput,
} from "./server";
export { serveJsonExchange, serveStreamablePost, serveStreamedExchange, type StreamablePostOptions } from "./streamable";
