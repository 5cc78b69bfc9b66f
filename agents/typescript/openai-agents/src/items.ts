/**
 * Stored session messages <-> the SDK's own input items (`AgentInputItem`, plain JSON).
 *
 * A stored message holds one input item as its framework item: the user's message, an
 * assistant message, a `function_call`, a `function_call_result`, a reasoning item, or an item
 * of a tool the SDK ran itself. Each item holds at most one tool call or result, so a stored
 * message projects to at most one, as the session's readers expect; the next turn replays the
 * items to the SDK unchanged.
 */
import type { AgentInputItem } from "@openai/agents";
import { type AgentToolCall, type FrameworkMessage, isFinal, type MessageRole, modelVisibleResult } from "./dex.js";
import { OUTCOME_UNKNOWN_TEXT } from "./texts.js";

type Fields = Record<string, unknown>;

/** One stored framework item (JSON text) as the SDK input item it holds. */
export function parseItem(frameworkItem: string): AgentInputItem {
  const value: unknown = JSON.parse(frameworkItem);
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new Error("a stored framework item is not an OpenAI Agents input item (a JSON object)");
  }
  const fields = value as Fields;
  if (typeof fields.type !== "string" && typeof fields.role !== "string") {
    throw new Error("a stored framework item is not an OpenAI Agents input item (no type or role)");
  }
  return value as AgentInputItem;
}

/** The user's text as the input item the SDK itself builds for a text input. */
export function buildUserMessage(text: string): AgentInputItem {
  return { role: "user", content: text };
}

/** One stored message per item, with its projection fields. */
export function toFrameworkMessages(items: readonly AgentInputItem[]): FrameworkMessage[] {
  return items.map(project);
}

/** The function calls of `items` that no `function_call_result` in them answers. */
export function unansweredCalls(items: readonly AgentInputItem[]): Fields[] {
  const answered = new Set(
    items.map((item) => item as Fields).flatMap((item) => (item.type === "function_call_result" ? [item.callId] : [])),
  );
  return items
    .map((item) => item as Fields)
    .filter((item) => item.type === "function_call" && !answered.has(item.callId));
}

/**
 * The result item of a function call that the turn leaves unfinished: its final record's text,
 * or the outcome-unknown text when the call has none (it never finished).
 */
export function unfinishedResult(call: Fields, records: readonly AgentToolCall[]): AgentInputItem {
  const record = records.find((candidate) => candidate.toolCallId === call.callId);
  const text = record !== undefined && isFinal(record) ? modelVisibleResult(record) : OUTCOME_UNKNOWN_TEXT;
  return {
    type: "function_call_result",
    name: String(call.name),
    callId: String(call.callId),
    status: "completed",
    output: { type: "text", text },
  };
}

/** The text the model reads for a function call result's output. */
export function outputText(output: unknown): string {
  if (typeof output === "string") {
    return output;
  }
  if (Array.isArray(output)) {
    return output.map(outputText).join("");
  }
  if (typeof output === "object" && output !== null) {
    const part = output as Fields;
    if (part.type === "text" || part.type === "input_text") {
      return typeof part.text === "string" ? part.text : "";
    }
  }
  return JSON.stringify(output);
}

function project(item: AgentInputItem): FrameworkMessage {
  const fields = item as Fields;
  const frameworkItem = JSON.stringify(item);
  switch (fields.type) {
    case "function_call":
      return {
        role: "assistant",
        frameworkItem,
        toolCallId: String(fields.callId),
        toolName: String(fields.name),
        toolArguments: String(fields.arguments),
      };
    case "function_call_result":
      return {
        role: "tool",
        frameworkItem,
        toolCallId: String(fields.callId),
        toolName: String(fields.name),
        toolOutput: outputText(fields.output),
      };
    case undefined:
    case "message":
      return { role: roleOf(fields.role), frameworkItem, text: contentText(fields.content) };
    default:
      // Reasoning, and the calls of tools the SDK ran itself (hosted tools, shell, computer):
      // replayed as they are, never deferred.
      return { role: "assistant", frameworkItem, text: null };
  }
}

function roleOf(role: unknown): MessageRole {
  return role === "assistant" ? "assistant" : "user";
}

function contentText(content: unknown): string | null {
  if (typeof content === "string") {
    return content;
  }
  if (!Array.isArray(content)) {
    return null;
  }
  const texts = content.flatMap((part: Fields) => {
    const text = part.text ?? part.refusal;
    return typeof text === "string" ? [text] : [];
  });
  return texts.length > 0 ? texts.join("") : null;
}
