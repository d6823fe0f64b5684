import type { CallToolRequest, CallToolResult, ServerContext } from "@modelcontextprotocol/server";
import { submitToolJob } from "../tasks";
import { servedTool, type ServedTool } from "../tool-calls";
import { toOcrRequest } from "../tool-definitions";
import {
  SHOW_EXTRACTION,
  SHOW_EXTRACTION_DESCRIPTION,
  jobToShow,
  showExtraction,
  showExtractionInputSchema,
  showExtractionMeta,
  showExtractionOutputSchema,
  type ShowExtractionInput,
} from "../viewer/tools";
import type { ToolCalls } from "./calls";

/** `show_extraction` (the viewer, ../viewer): a job's pages shown, or a document read as a job and shown as it is read. */
export function showExtractionTool(calls: ToolCalls): ServedTool {
  const { store, account, options, jobContext, toolFailure, nextCallId } = calls;
  const callShowExtraction = async (
    input: ShowExtractionInput,
    _request: CallToolRequest,
    ctx: ServerContext,
  ): Promise<CallToolResult> => {
    const { callId, index } = nextCallId();
    try {
      if (input.image_source === undefined) {
        return await showExtraction(
          store,
          options.env,
          options.deliveries,
          account.userId,
          jobToShow(input),
          input.page,
        );
      }
      // A document to read and show: a job (charged as extract_text's), shown as its pages are read.
      const context = jobContext(callId, { index, signal: ctx.mcpReq.signal });
      const view = await submitToolJob(
        toOcrRequest({ image_source: input.image_source, pages: input.pages, output_format: "json" }),
        context,
      );
      return await showExtraction(
        store,
        options.env,
        options.deliveries,
        account.userId,
        view.jobId,
        input.page,
        `Reading it as job ${view.jobId}.`,
      );
    } catch (error) {
      return toolFailure(error, callId, SHOW_EXTRACTION);
    }
  };

  return servedTool({
    name: SHOW_EXTRACTION,
    title: "Show the document (viewer)",
    description: SHOW_EXTRACTION_DESCRIPTION,
    inputSchema: showExtractionInputSchema,
    outputSchema: showExtractionOutputSchema,
    _meta: showExtractionMeta,
    annotations: {
      title: "Show the document (viewer)",
      readOnlyHint: true,
      destructiveHint: false,
      // With image_source it reads (and charges) again.
      idempotentHint: false,
      openWorldHint: true,
    },
    call: callShowExtraction,
  });
}
