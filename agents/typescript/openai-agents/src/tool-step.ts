/**
 * One tool call in its own Step, run by the application's own function tool (`invoke`, with the
 * tool's timeout, through the SDK's `invokeFunctionTool`), between the tool's input and output
 * guardrails, as the SDK runs them: a guardrail's `rejectContent` message is the call's result,
 * and its `throwException` fails the call (`tool input guardrail "<name>" tripped`).
 *
 * The tool's own error handling applies as the SDK applies it: by default a thrown error
 * becomes the SDK's fixed error text, which is the call's result; a tool made with
 * `errorFunction: null` lets the error through, and then a `ToolExecutionError` is a failure the
 * model reads and any other error fails the attempt (the effect decides about a retry).
 */
import {
  invokeFunctionTool,
  RunContext,
  runToolInputGuardrails,
  runToolOutputGuardrails,
  ToolInputGuardrailTripwireTriggered,
  ToolOutputGuardrailTripwireTriggered,
} from "@openai/agents";
import { type DeferredToolExecution, type DeferredToolOutcome, ToolExecutionError } from "./dex.js";
import type { AgentGraph } from "./gating.js";
import { outputText } from "./items.js";
import { argumentsNotJsonText, guardrailTrippedText, unknownToolText } from "./texts.js";

/** Runs the recorded call with its tool; the text the SDK would send the model is its result. */
export async function runToolCall(
  graph: AgentGraph,
  context: unknown,
  call: DeferredToolExecution,
): Promise<DeferredToolOutcome> {
  const record = call.toolCall;
  const tool = graph.functionTool(record.toolName, record.toolSourceReference);
  if (tool === undefined) {
    throw new ToolExecutionError(unknownToolText(record.toolName, graph.functionToolNames()));
  }
  try {
    JSON.parse(record.arguments === "" ? "{}" : record.arguments);
  } catch {
    throw new ToolExecutionError(argumentsNotJsonText(record.toolName));
  }
  const runContext = new RunContext(context);
  const agent = graph.agents.get(record.toolSourceReference ?? "") ?? graph.root;
  const toolCall = {
    type: "function_call" as const,
    callId: record.toolCallId,
    name: record.toolName,
    arguments: record.arguments,
  };
  try {
    const decision = await runToolInputGuardrails({
      guardrails: tool.inputGuardrails,
      context: runContext,
      agent,
      toolCall,
    });
    if (decision.type === "reject") {
      return { kind: "tool_execution_result", output: decision.message };
    }
    const output = await invokeFunctionTool({
      tool,
      runContext,
      input: record.arguments,
      details: { toolCall, signal: call.cancellationSignal },
    });
    const checked = await runToolOutputGuardrails({
      guardrails: tool.outputGuardrails,
      context: runContext,
      agent,
      toolCall,
      toolOutput: output,
    });
    return { kind: "tool_execution_result", output: recordedText(checked) };
  } catch (error) {
    if (error instanceof ToolInputGuardrailTripwireTriggered) {
      throw new ToolExecutionError(guardrailTrippedText("input", error.result.guardrail.name));
    }
    if (error instanceof ToolOutputGuardrailTripwireTriggered) {
      throw new ToolExecutionError(guardrailTrippedText("output", error.result.guardrail.name));
    }
    throw error;
  }
}

/** A tool's output as the text the SDK sends the model. */
export function recordedText(output: unknown): string {
  if (typeof output === "string") {
    return output;
  }
  if (output === null || output === undefined) {
    return String(output);
  }
  if (isTextPart(output) || (Array.isArray(output) && output.length > 0 && output.every(isTextPart))) {
    return outputText(output);
  }
  return JSON.stringify(output);
}

function isTextPart(value: unknown): boolean {
  return typeof value === "object" && value !== null && (value as { type?: unknown }).type === "text";
}
