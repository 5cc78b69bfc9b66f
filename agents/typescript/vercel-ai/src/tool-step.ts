/**
 * One tool call in its own Step, run by the tool's own `execute`.
 *
 * The arguments are parsed and checked against the tool's input schema the way the AI SDK
 * checks them before it runs a tool; a call that does not fit is a failure the model reads.
 */
import { asSchema, type JSONValue, type Tool, type ToolSet } from "ai";
import {
  type DeferredToolExecution,
  type DeferredToolOutcome,
  ToolCallInterruptedError,
  ToolExecutionError,
} from "./dex.js";
import { argumentsNotJsonText, invalidArgumentsText, notExecutableText, unknownToolText } from "./texts.js";

export interface ToolRun {
  tools: ToolSet;
  toolsContext: Record<string, unknown> | undefined;
}

/** Runs the recorded call with its tool; its output, as JSON, is the call's result. */
export async function runToolCall(run: ToolRun, call: DeferredToolExecution): Promise<DeferredToolOutcome> {
  const record = call.toolCall;
  const tool = Object.hasOwn(run.tools, record.toolName) ? run.tools[record.toolName] : undefined;
  if (tool === undefined) {
    throw new ToolExecutionError(unknownToolText(record.toolName, Object.keys(run.tools)));
  }
  if (tool.execute === undefined) {
    throw new ToolExecutionError(notExecutableText(record.toolName));
  }
  const input = await validInput(tool, record.toolName, record.arguments);
  let output: unknown;
  try {
    output = await finalOutput(
      tool.execute(input, {
        toolCallId: record.toolCallId,
        messages: [],
        abortSignal: call.cancellationSignal,
        context: run.toolsContext?.[record.toolName],
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
  // A string is recorded as it is (what the failure note and a person read); anything else as JSON.
  const recorded = typeof output === "string" ? output : JSON.stringify(toJson(output));
  return { kind: "tool_execution_result", output: recorded };
}

async function validInput(tool: Tool, toolName: string, argumentsText: string): Promise<unknown> {
  let value: unknown = {};
  if (argumentsText.trim() !== "") {
    try {
      value = JSON.parse(argumentsText);
    } catch {
      throw new ToolExecutionError(argumentsNotJsonText(toolName));
    }
  }
  const schema = asSchema(tool.inputSchema);
  if (schema.validate === undefined) {
    return value;
  }
  const result = await schema.validate(value);
  if (!result.success) {
    throw new ToolExecutionError(invalidArgumentsText(toolName, result.error.message));
  }
  return result.value;
}

/** The tool's result: a streaming tool's last value, as the AI SDK takes it. */
async function finalOutput(result: unknown): Promise<unknown> {
  if (isAsyncIterable(result)) {
    let last: unknown;
    for await (const value of result) {
      last = value;
    }
    return last;
  }
  return await result;
}

function isAsyncIterable(value: unknown): value is AsyncIterable<unknown> {
  return typeof value === "object" && value !== null && Symbol.asyncIterator in value;
}

/** An output as plain JSON (toJSON applied, undefined as null), as the AI SDK sends it. */
function toJson(output: unknown): JSONValue {
  if (output === undefined) {
    return null;
  }
  return JSON.parse(JSON.stringify(output)) as JSONValue;
}

function errorText(error: unknown): string {
  if (error instanceof Error) {
    return error.message;
  }
  return typeof error === "string" ? error : JSON.stringify(error);
}
