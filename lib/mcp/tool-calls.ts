import {
  ProtocolError,
  ProtocolErrorCode,
  type CallToolRequest,
  type CallToolResult,
  type McpServer,
  type ServerContext,
  type ToolAnnotations,
  type ToolExecution,
} from "@modelcontextprotocol/server";
import { registerAppTool } from "@modelcontextprotocol/ext-apps/server";
import { z } from "zod";
import { describeZodError } from "@/lib/api/errors";

/** A tool as {@link serveTools} serves it: listed by the SDK, called through our one `tools/call` handler. */
export interface ServedTool<Input = unknown> {
  name: string;
  title: string;
  description: string;
  /** Checked before `call`: a violation is a JSON-RPC `-32602`, nothing run. */
  inputSchema: z.ZodType<Input>;
  /** Listed in `tools/list`; a result's `structuredContent` is projected on it. */
  outputSchema: z.ZodObject;
  annotations: ToolAnnotations;
  /** The tool's `_meta`: an MCP App's `ui` (resource, visibility), registered with ext-apps' `registerAppTool`. */
  _meta?: { ui: { resourceUri: string; visibility?: Array<"model" | "app"> } };
  /** `registerTool` takes none: set on the registered tool (e.g. `taskSupport`, MCP 2025-11-25). */
  execution?: ToolExecution;
  /**
   * A call whose arguments passed `inputSchema`: a tool result, or for a task-augmented call its `CreateTaskResult`
   * (carrying `task`; answered as it is, not projected on the output schema).
   */
  call(input: Input, request: CallToolRequest, ctx: ServerContext): Promise<CallToolResult>;
}

/** A tool of any input type, for the list {@link serveTools} takes (each tool checks its own input). */
export function servedTool<Input>(tool: ServedTool<Input>): ServedTool {
  return tool as unknown as ServedTool;
}

/**
 * Serve `tools` on `server`: registered for `tools/list` (the SDK converts their schemas), and called through our own
 * `tools/call` handler, which replaces the SDK's.
 *
 * Why ours: the SDK's handler catches every error its tool throws — an unknown field, a missing `image_source`, a
 * `ProtocolError` — and answers it as an `isError` tool result (MCP 2025's idiom). This service answers a malformed
 * call (unknown tool, arguments that violate the input schema) with JSON-RPC `-32602` and a bug with `-32603`, and
 * keeps `isError` results for failures the model can act on (docs/mcp.md#behaviour-and-decisions).
 * tests/mcp/tool-calls.test.ts pins the SDK's behaviour: when it stops turning argument errors into results, this
 * override can go.
 */
export function serveTools(server: McpServer, tools: ServedTool[]): void {
  const byName = new Map(tools.map((tool) => [tool.name, tool]));
  for (const tool of tools) {
    const { name, call: _call, execution, inputSchema, outputSchema, _meta, ...config } = tool;
    const never = async (): Promise<CallToolResult> => {
      // Never called: `tools/call` is ours (below).
      throw new ProtocolError(ProtocolErrorCode.InternalError, "served by the tools/call handler of serveTools");
    };
    const schemas = { inputSchema: inputSchema as z.ZodObject, outputSchema };
    const registered =
      _meta !== undefined
        ? registerAppTool(server, name, { ...config, ...schemas, _meta }, never)
        : server.registerTool(name, { ...config, ...schemas }, never);
    if (execution) registered.execution = execution;
  }
  // Each output schema as JSON Schema once (objects at the root, so the SDK passes `structuredContent` through unwrapped).
  const outputJsonSchemas = new Map(
    tools.map((tool) => [tool.name, z.toJSONSchema(tool.outputSchema) as Record<string, unknown>]),
  );
  const listed = tools.map((tool) => tool.name);
  const names = listed.length > 1 ? `${listed.slice(0, -1).join(", ")} and ${listed.at(-1)}` : listed.join("");

  server.server.removeRequestHandler("tools/call");
  server.server.setRequestHandler("tools/call", async (request, ctx) => {
    const { name, arguments: args } = request.params;
    const tool = byName.get(name);
    if (tool === undefined) {
      throw new ProtocolError(
        ProtocolErrorCode.InvalidParams,
        `Unknown tool ${JSON.stringify(name.slice(0, 100))}: this server has ${names}`,
      );
    }
    const parsed = tool.inputSchema.safeParse(args ?? {});
    if (!parsed.success) {
      throw new ProtocolError(
        ProtocolErrorCode.InvalidParams,
        `Invalid arguments for tool ${name}: ${describeZodError(parsed.error)}`,
      );
    }
    const result = await tool.call(parsed.data, request, ctx);
    return "task" in result ? result : server.server.projectCallToolResult(result, outputJsonSchemas.get(name));
  });
}
