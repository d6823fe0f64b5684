import type { CallToolRequest, CallToolResult, ServerContext } from "@modelcontextprotocol/server";
import {
  GET_EXTRACTION,
  getExtractionInputSchema,
  getExtractionOutputSchema,
  waitForJob,
  type GetExtractionInput,
  type GetExtractionOutput,
} from "../jobs";
import { readExtractionSlice } from "../extraction-slices";
import { ANSWER_MARGIN_MS, JOB_POLL_MS } from "../tasks";
import { servedTool, type ServedTool } from "../tool-calls";
import { extractionResult } from "../tool-answers";
import { GET_EXTRACTION_DESCRIPTION } from "../tool-definitions";
import type { ToolCalls } from "./calls";

/** `get_extraction`: a job's text in slices, waiting (within the call's budget) for its next page when none is ready. */
export function getExtractionTool(calls: ToolCalls): ServedTool {
  const { store, account, requestId, options, jobContext, toolFailure } = calls;
  const callGetExtraction = async (
    input: GetExtractionInput,
    _request: CallToolRequest,
    ctx: ServerContext,
  ): Promise<CallToolResult> => {
    let slice: GetExtractionOutput;
    try {
      slice = await readExtractionSlice(store, options.env, options.deliveries, account.userId, input);
      const { jobId } = slice;
      if (
        slice.text === "" &&
        slice.nextCursor !== null &&
        jobId !== null &&
        (slice.status === "queued" || slice.status === "running")
      ) {
        // Nothing ready at the cursor yet: wait (within the call's budget) for the job to settle another page, then
        // look again — so an agent polling a running job makes a call per page or so, not one every few seconds.
        const context = jobContext(requestId);
        const changed = new AbortController();
        const settledBefore = slice.pagesDone + slice.pagesFailed;
        await waitForJob(account.userId, jobId, {
          store,
          env: options.env,
          deliveries: options.deliveries,
          until: context.deadline - ANSWER_MARGIN_MS,
          pollMs: context.pollMs ?? JOB_POLL_MS,
          reportedBefore: settledBefore,
          onPages: () => changed.abort(),
          // Also when the client went away (the SSE session's stream closed).
          signal: AbortSignal.any([changed.signal, ctx.mcpReq.signal, ...(context.signal ? [context.signal] : [])]),
        });
        slice = await readExtractionSlice(store, options.env, options.deliveries, account.userId, input);
      }
    } catch (error) {
      return toolFailure(error, requestId, GET_EXTRACTION);
    }
    return extractionResult(slice);
  };

  return servedTool({
    name: GET_EXTRACTION,
    title: "Get extracted text (job)",
    description: GET_EXTRACTION_DESCRIPTION,
    inputSchema: getExtractionInputSchema,
    outputSchema: getExtractionOutputSchema,
    annotations: {
      title: "Get extracted text (job)",
      readOnlyHint: true,
      destructiveHint: false,
      idempotentHint: true,
      openWorldHint: false,
    },
    call: callGetExtraction,
  });
}
