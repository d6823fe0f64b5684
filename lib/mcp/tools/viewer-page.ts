import type { CallToolRequest, CallToolResult, ServerContext } from "@modelcontextprotocol/server";
import { ANSWER_MARGIN_MS } from "../tasks";
import { servedTool, type ServedTool } from "../tool-calls";
import {
  VIEWER_PAGE,
  VIEWER_PAGE_DESCRIPTION,
  viewerPage,
  viewerPageInputSchema,
  viewerPageMeta,
  viewerPageOutputSchema,
  type ViewerPageInput,
} from "../viewer/tools";
import type { ToolCalls } from "./calls";

/** `read_viewer_page` (the viewer's own tool): a page's words and image. */
export function viewerPageTool(calls: ToolCalls): ServedTool {
  const { store, account, options, jobContext, toolFailure, nextCallId } = calls;
  const callViewerPage = async (
    input: ViewerPageInput,
    _request: CallToolRequest,
    ctx: ServerContext,
  ): Promise<CallToolResult> => {
    const { callId } = nextCallId();
    const context = jobContext(callId, { index: 0, signal: ctx.mcpReq.signal });
    try {
      return await viewerPage(store, options.env, options.deliveries, account.userId, input, {
        deadline: context.deadline - ANSWER_MARGIN_MS,
        pool: options.pool,
        ...(context.signal && { signal: context.signal }),
      });
    } catch (error) {
      return toolFailure(error, callId, VIEWER_PAGE);
    }
  };

  return servedTool({
    name: VIEWER_PAGE,
    title: "Viewer page",
    description: VIEWER_PAGE_DESCRIPTION,
    inputSchema: viewerPageInputSchema,
    outputSchema: viewerPageOutputSchema,
    _meta: viewerPageMeta,
    annotations: {
      title: "Viewer page",
      readOnlyHint: true,
      destructiveHint: false,
      idempotentHint: true,
      openWorldHint: false,
    },
    call: callViewerPage,
  });
}
