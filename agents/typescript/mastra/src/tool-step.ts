/**
 * One tool call in its own Step, run by the Mastra tool's own `execute`.
 *
 * The arguments are parsed and checked with Mastra's own `validateToolInput`, as Mastra checks
 * them before it runs a tool; a call that does not fit, or a validation error the tool returns
 * (Mastra returns these rather than throwing), is a failure the model reads.
 */
import type { ToolsInput } from "@mastra/core/agent";
import { RequestContext } from "@mastra/core/request-context";
import { isValidationError, validateToolInput } from "@mastra/core/tools";
import {
  type DeferredToolExecution,
  type DeferredToolOutcome,
  ToolCallInterruptedError,
  ToolExecutionError,
  texts,
} from "./dex.js";

type Execute = (input: unknown, context: Record<string, unknown>) => unknown;

export interface ToolRun {
  tools: ToolsInput;
  agentId: string;
  requestContext: RequestContext | undefined;
}

/** Runs the recorded call with its tool; its output, as JSON, is the call's result. */
export async function runToolCall(run: ToolRun, call: DeferredToolExecution): Promise<DeferredToolOutcome> {
  const record = call.toolCall;
  const tool = Object.hasOwn(run.tools, record.toolName)
    ? (run.tools[record.toolName] as { execute?: unknown; inputSchema?: unknown })
    : undefined;
  if (tool === undefined) {
    throw new ToolExecutionError(texts.unknownToolText(record.toolName, Object.keys(run.tools)));
  }
  if (typeof tool.execute !== "function") {
    throw new ToolExecutionError(texts.notExecutableText(record.toolName));
  }
  const input = validInput(tool.inputSchema, record.toolName, record.arguments);
  let output: unknown;
  try {
    output = await finalOutput(
      (tool.execute as Execute).call(tool, input, {
        // Mastra's agent context for a tool call; `suspend` is not offered (the session waits instead).
        toolCallId: record.toolCallId,
        messages: [],
        agentId: run.agentId,
        abortSignal: call.cancellationSignal,
        requestContext: run.requestContext ?? new RequestContext(),
      }),
    );
  } catch (error) {
    // A request sent with no result back fails the attempt: the call's effect decides.
    if (
      error instanceof ToolExecutionError ||
      error instanceof ToolCallInterruptedError ||
      call.cancellationSignal.aborted
    ) {
      throw error;
    }
    throw new ToolExecutionError(errorText(error));
  }
  if (isValidationError(output)) {
    throw new ToolExecutionError(output.message);
  }
  // A string is recorded as it is (what the failure note and a person read); anything else as JSON.
  const recorded = typeof output === "string" ? output : JSON.stringify(output === undefined ? null : output);
  return { kind: "tool_execution_result", output: recorded };
}

function validInput(schema: unknown, toolName: string, argumentsText: string): unknown {
  let value: unknown = {};
  if (argumentsText.trim() !== "") {
    try {
      value = JSON.parse(argumentsText);
    } catch {
      throw new ToolExecutionError(texts.argumentsNotJsonText(toolName));
    }
  }
  const result = validateToolInput(schema as Parameters<typeof validateToolInput>[0], value, toolName);
  if (result.error !== undefined) {
    throw new ToolExecutionError(texts.invalidArgumentsText(toolName, result.error.message));
  }
  return result.data;
}

/** The tool's result: a streaming tool's last value. */
async function finalOutput(result: unknown): Promise<unknown> {
  if (typeof result === "object" && result !== null && Symbol.asyncIterator in result) {
    let last: unknown;
    for await (const value of result as AsyncIterable<unknown>) {
      last = value;
    }
    return last;
  }
  return await result;
}

function errorText(error: unknown): string {
  if (error instanceof Error) {
    return error.message;
  }
  return typeof error === "string" ? error : JSON.stringify(error);
}
