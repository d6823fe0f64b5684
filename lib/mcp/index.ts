export { MCP_MAX_DURATION_S, MCP_TOOL_DEADLINE_MS, readMcpConfig, type McpConfig, type SseTiming } from "./config";
export { createMcpRoute, type McpRoute, type McpRouteOptions } from "./route";
export { SESSION_TTL_MS, newSessionId, sessionMailboxId, sessionStreamEnd } from "./relay";
export {
  SERVER_INFO,
  TOOL_NAME,
  buildServer,
  extractTextInputSchema,
  extractTextOutputSchema,
  imageSourceSchema,
  toOcrRequest,
  toolErrorResult,
  type BuildServerOptions,
  type ExtractTextInput,
} from "./server";
export { serveJsonExchange, serveStreamablePost } from "./streamable";
