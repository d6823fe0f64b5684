import type { CallToolRequest, CallToolResult, ServerContext } from "@modelcontextprotocol/server";
import { ocrRequestSchema } from "@/lib/api/schemas";
import { intake, requestOf, type IntakeOutcome } from "@/lib/intake";
import type { JobView } from "@/lib/jobs";
import { configuredOrigin } from "@/lib/service-origin";
import { DEFAULT_SLICE_CHARS, extractTextOutputSchema } from "../jobs";
import {
  ProgressChannel,
  answerWithJob,
  createTaskResult,
  findCallJob,
  jobAccepted,
  submitToolJob,
  type JobCallContext,
} from "../tasks";
import { CANCEL_POLL_MS, holdRunningCall } from "../running-calls";
import { servedTool, type ServedTool } from "../tool-calls";
import { answerWithin } from "../tool-answers";
import {
  TOOL_DESCRIPTION,
  TOOL_NAME,
  extractTextInputSchema,
  toOcrRequest,
  type ExtractTextInput,
} from "../tool-definitions";
import type { ToolCalls } from "./calls";

/**
 * `extract_text`: a keyed retry's earlier job, a task-augmented call (a job at once), or the intake, which makes the
 * document a job read within the call or in the background while the call waits, page by page; a cancel from another
 * POST cancels the job (../running-calls.ts); progress notifications on the way.
 */
export function extractTextTool(calls: ToolCalls): ServedTool {
  const { store, account, options, jobContext, toolFailure, nextCallId, progressFor } = calls;
  const extractText = async (
    input: ExtractTextInput,
    callId: string,
    context: JobCallContext,
    rpcId: string | number,
    progress?: ProgressChannel,
  ): Promise<CallToolResult> => {
    // The client's `notifications/cancelled` comes in another POST, maybe to another instance: the call's job is named
    // in the store under its key and JSON-RPC id while it runs, and the cancel cancels the job (../running-calls.ts).
    const releases: Array<() => Promise<void>> = [];
    const name = async (jobId: string) => {
      releases.push(await holdRunningCall(store, account, context.deadline, rpcId, jobId));
    };
    try {
      return await readOrWait(input, callId, context, name, progress);
    } finally {
      await Promise.all(releases.map((release) => release()));
    }
  };

  const readOrWait = async (
    input: ExtractTextInput,
    callId: string,
    context: JobCallContext,
    name: (jobId: string) => Promise<void>,
    progress?: ProgressChannel,
  ): Promise<CallToolResult> => {
    // The intake reads it now when it fits this call (a job read in the call), else makes it a job read in the
    // background (by its expected work), waited for within the call, page by page.
    let outcome: IntakeOutcome;
    try {
      outcome = await intake(store, {
        ...requestOf(ocrRequestSchema.parse(toOcrRequest(input))),
        env: options.env,
        settings: options.settings,
        pool: options.pool,
        workQueue: options.workQueue,
        deliveries: options.deliveries,
        mode: "fit",
        account,
        requestId: callId,
        receivedAt: options.receivedAt,
        deadline: context.deadline,
        // The client went away (the SSE session's stream closed; the SDK's request signal on a transport that
        // delivers it to the call): the read stops and its job is refunded.
        cancel: context.signal,
        // A cancel of its job (`notifications/cancelled`) stops a read in the call: nothing is charged.
        watch: { opened: name, pollMs: context.pollMs ?? CANCEL_POLL_MS },
        serverHost: options.serverHost,
        // A job's webhook links (the account's default receiver): the configured origin, never the request's Host.
        origin: configuredOrigin(options.env) ?? undefined,
      });
    } catch (error) {
      return toolFailure(error, callId, TOOL_NAME);
    }
    if (outcome.kind === "job") {
      try {
        const view = await jobAccepted(outcome.view, outcome.creditsRemaining, context);
        // From here on a cancel cancels the job.
        await name(view.jobId);
        // From here on the notifications count pages.
        progress?.stopTimer();
        return await answerWithJob(
          view,
          context,
          `This document is more than one call reads (${outcome.reason ?? "its work"}).`,
          progress,
        );
      } catch (error) {
        return toolFailure(error, callId, TOOL_NAME);
      }
    }
    const { result } = outcome;
    options.onExtracted?.(result);
    return answerWithin(result, input);
  };

  const callExtractText = async (
    input: ExtractTextInput,
    request: CallToolRequest,
    ctx: ServerContext,
  ): Promise<CallToolResult> => {
    const { callId, index } = nextCallId();
    const context = jobContext(callId, {
      index,
      signal: ctx.mcpReq.signal,
      maxChars: input.max_chars ?? DEFAULT_SLICE_CHARS,
    });
    return runExtractText(input, request, ctx, callId, context);
  };

  const runExtractText = async (
    input: ExtractTextInput,
    request: CallToolRequest,
    ctx: ServerContext,
    callId: string,
    context: JobCallContext,
  ): Promise<CallToolResult> => {
    // The retry of a call whose answer was lost (same Idempotency-Key): the job the first one started, not another.
    let earlier: JobView | null;
    try {
      earlier = await findCallJob(context);
    } catch (error) {
      return toolFailure(error, callId, TOOL_NAME);
    }
    if (request.params.task !== undefined) {
      // A task-augmented call (MCP 2025-11-25): the document becomes a job at once, whatever its length.
      try {
        return createTaskResult(earlier ?? (await submitToolJob(toOcrRequest(input), context)), options.pool);
      } catch (error) {
        return toolFailure(error, callId, TOOL_NAME);
      }
    }
    const progress = progressFor(ctx, request.params._meta?.progressToken);
    try {
      if (earlier !== null) {
        progress?.stopTimer();
        // While the call waits for the job, the client's `notifications/cancelled` finds it (./running-calls.ts).
        const release = await holdRunningCall(store, account, context.deadline, ctx.mcpReq.id, earlier.jobId);
        try {
          return await answerWithJob(
            earlier,
            context,
            "This call was made before with the same Idempotency-Key.",
            progress,
          );
        } finally {
          await release();
        }
      }
      return await extractText(input, callId, context, ctx.mcpReq.id, progress);
    } catch (error) {
      return toolFailure(error, callId, TOOL_NAME);
    } finally {
      await progress?.flush();
    }
  };

  return servedTool({
    name: TOOL_NAME,
    title: "Extract text (OCR)",
    description: TOOL_DESCRIPTION,
    inputSchema: extractTextInputSchema,
    outputSchema: extractTextOutputSchema,
    annotations: {
      title: "Extract text (OCR)",
      readOnlyHint: true,
      destructiveHint: false,
      // Not idempotent: every call reads the file again and charges credits (REST's Idempotency-Key is the retry tool).
      idempotentHint: false,
      // URLs reach the open web.
      openWorldHint: true,
    },
    // The tool may be called as a task (MCP 2025-11-25, tool-level negotiation).
    execution: { taskSupport: "optional" },
    call: callExtractText,
  });
}
