import { McpServer, type CallToolResult } from "@modelcontextprotocol/server";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { serveJsonExchange } from "@/lib/mcp";
import { serveTools, servedTool } from "@/lib/mcp/tool-calls";

/**
 * Why `serveTools` replaces the SDK's `tools/call` handler (lib/mcp/tool-calls.ts): the SDK answers a call whose
 * arguments violate the tool's input schema — and any error its tool throws — with an `isError` tool result, where
 * this service answers a malformed call with JSON-RPC `-32602` (docs/mcp.md#behaviour-and-decisions). The first case
 * pins the SDK's behaviour: when it fails, the SDK has changed, and the override may no longer be needed.
 * No store, no engine: one tool that echoes its argument, over the same JSON exchange the route uses.
 */

const echoInput = z.strictObject({ word: z.string().min(1) });
const echoOutput = z.strictObject({ word: z.string() });
const echo = async ({ word }: z.infer<typeof echoInput>): Promise<CallToolResult> => ({
  content: [{ type: "text", text: word }],
  structuredContent: { word },
});

const resultSchema = z.looseObject({ id: z.literal(1), result: z.looseObject({ isError: z.boolean().optional() }) });
const errorSchema = z.looseObject({
  id: z.literal(1),
  error: z.looseObject({ code: z.number(), message: z.string() }),
});

async function call(server: McpServer, name: string, args: unknown) {
  const body = { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name, arguments: args } };
  const request = new Request("http://localhost/api/mcp", { method: "POST", body: JSON.stringify(body) });
  const response = await serveJsonExchange(request, body, server);
  expect(response.status).toBe(200);
  return (await response.json()) as unknown;
}

function sdkServer(): McpServer {
  const server = new McpServer({ name: "pin", version: "0.0.0" });
  server.registerTool("echo", { inputSchema: echoInput, outputSchema: echoOutput }, echo);
  return server;
}

function ourServer(): McpServer {
  const server = new McpServer({ name: "pin", version: "0.0.0" });
  serveTools(server, [
    servedTool({
      name: "echo",
      title: "Echo",
      description: "Echo a word",
      inputSchema: echoInput,
      outputSchema: echoOutput,
      annotations: {},
      call: echo,
    }),
  ]);
  return server;
}

describe("the tools/call override (serveTools)", () => {
  it.each([
    ["an unknown field", { word: "hi", extra: 1 }],
    ["a missing field", {}],
  ])(
    "the SDK's own handler answers %s with an isError result, not a JSON-RPC error (why the override exists)",
    async (_label, args) => {
      const answer = resultSchema.parse(await call(sdkServer(), "echo", args));
      expect(answer.result.isError).toBe(true);
    },
  );

  it.each([
    ["an unknown field", { word: "hi", extra: 1 }, /extra/],
    ["a missing field", {}, /word/],
  ])("ours answers %s with -32602, the tool not run", async (_label, args, message) => {
    const answer = errorSchema.parse(await call(ourServer(), "echo", args));
    expect(answer.error.code).toBe(-32602);
    expect(answer.error.message).toMatch(message);
  });

  it("ours answers an unknown tool with -32602 naming the tools it has", async () => {
    const answer = errorSchema.parse(await call(ourServer(), "ocr", {}));
    expect(answer.error).toMatchObject({ code: -32602, message: expect.stringMatching(/Unknown tool "ocr".*echo/) });
  });

  it("a valid call runs the tool: the same result as the SDK's handler", async () => {
    const [ours, sdk] = [
      await call(ourServer(), "echo", { word: "hi" }),
      await call(sdkServer(), "echo", { word: "hi" }),
    ];
    expect(ours).toEqual(sdk);
    expect(ours).toMatchObject({ result: { content: [{ text: "hi" }], structuredContent: { word: "hi" } } });
  });
});
