import { createMcpRoute } from "@/lib/mcp";

export const runtime = "nodejs";
// The Vercel Hobby maximum: the SSE stream closes itself before it (at 295 s: lib/mcp/config.ts); a tool
// call is bounded by REQUEST_DEADLINE_MS like REST. Keep equal to MCP_MAX_DURATION_S (a literal: Next reads it statically).
export const maxDuration = 300;

// /api/mcp – MCP over Streamable HTTP (POST) and the legacy HTTP+SSE transport (GET + POST ?sessionId=…)
const route = createMcpRoute();

export const GET = route.GET;
export const POST = route.POST;
export const OPTIONS = route.OPTIONS;
export const HEAD = route.HEAD;
export const PUT = route.PUT;
export const PATCH = route.PATCH;
export const DELETE = route.DELETE;
