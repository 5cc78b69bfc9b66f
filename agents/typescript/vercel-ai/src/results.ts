/**
 * The recorded outcome of each tool call, turned into the tool message the model reads next.
 *
 * A succeeded call's output is the string its tool returned, or the JSON of any other value; it
 * goes back to the model the way the AI SDK would have sent it had it run the tool itself (the
 * tool's `toModelOutput`, else text for a string and JSON for anything else). A string that is
 * itself a JSON number, boolean, null, object or array comes back as that value. Every other
 * final outcome is the session contract's text.
 */
import type { JSONValue, ModelMessage, ToolResultPart, ToolSet } from "ai";
import { type AgentToolCall, isFinal, modelVisibleResult } from "./dex.js";
import { deferrableCalls } from "./messages.js";
import { OUTCOME_UNKNOWN_TEXT } from "./texts.js";

type ToolResultOutput = ToolResultPart["output"];

/**
 * The tool message answering the calls of the turn's last assistant message, or null when that
 * message made no deferred call. `strict`: every call must have a final record (a model step);
 * otherwise a missing or unfinished record reads as outcome unknown (an unfinished turn).
 */
export async function resultsMessage(
  turnMessages: readonly ModelMessage[],
  records: readonly AgentToolCall[],
  tools: ToolSet,
  strict: boolean,
): Promise<ModelMessage | null> {
  const calls = deferrableCalls(turnMessages[turnMessages.length - 1]);
  if (calls.length === 0) {
    return null;
  }
  const byId = new Map(records.map((record) => [record.toolCallId, record]));
  const content: ToolResultPart[] = [];
  for (const call of calls) {
    const record = byId.get(call.toolCallId);
    if (strict && (record === undefined || !isFinal(record))) {
      throw new Error(`no final tool call record for deferred call ${JSON.stringify(call.toolCallId)}`);
    }
    const output =
      record !== undefined && isFinal(record)
        ? await outputOf(record, call.input, tools)
        : ({ type: "error-text", value: OUTCOME_UNKNOWN_TEXT } as const);
    content.push({ type: "tool-result", toolCallId: call.toolCallId, toolName: call.toolName, output });
  }
  return { role: "tool", content };
}

async function outputOf(record: AgentToolCall, input: unknown, tools: ToolSet): Promise<ToolResultOutput> {
  const text = modelVisibleResult(record);
  if (record.status === "rejected") {
    return { type: "execution-denied", reason: text };
  }
  if (record.status !== "succeeded") {
    return { type: "error-text", value: text };
  }
  const parsed = parsedOutput(text);
  const value = parsed === undefined || typeof parsed === "string" ? text : parsed;
  const tool = Object.hasOwn(tools, record.toolName) ? tools[record.toolName] : undefined;
  if (tool?.toModelOutput !== undefined) {
    return await tool.toModelOutput({ toolCallId: record.toolCallId, input, output: value });
  }
  return typeof value === "string" ? { type: "text", value } : { type: "json", value };
}

/** The recorded output as JSON, or undefined when it is not JSON (a string the tool returned). */
function parsedOutput(text: string): JSONValue | undefined {
  try {
    return JSON.parse(text) as JSONValue;
  } catch {
    return undefined;
  }
}
