/**
 * The AI SDK `ModelMessage`s Mastra takes and returns, as plain JSON, and the session's stored
 * messages made of them.
 *
 * Mastra's `result.response.messages` are AI SDK (v5) `ModelMessage`s. A stored message holds
 * one of them as its framework item. An assistant message with several tool calls, or a tool
 * message with several results, is stored as one message per call or result, so every stored
 * message projects to at most one tool call, as the session's readers expect; replay merges
 * the pieces back, so the model sees the message Mastra made.
 */
import type { FrameworkMessage, MessageRole } from "./dex.js";

/** A tool result's output, as the AI SDK types it. */
export type ToolOutput =
  | { type: "text" | "error-text"; value: string }
  | { type: "json" | "error-json"; value: unknown }
  | { type: "execution-denied"; reason?: string }
  | { type: "content"; value: { type: string; text?: string }[] };

export interface ToolCallPart {
  type: "tool-call";
  toolCallId: string;
  toolName: string;
  input: unknown;
  providerExecuted?: boolean;
  providerOptions?: Record<string, unknown>;
}

export interface ToolResultPart {
  type: "tool-result";
  toolCallId: string;
  toolName: string;
  output: ToolOutput;
  /** The call's arguments again: Mastra 1.71 reads a call's arguments back from its result when
   *  the call and its result come in one input (without it, the model is sent `{}`). */
  input?: unknown;
  providerOptions?: Record<string, unknown>;
}

export interface OtherPart {
  type: string;
  text?: string;
  [key: string]: unknown;
}

export type Part = ToolCallPart | ToolResultPart | OtherPart;

export interface ModelMessage {
  role: "system" | "user" | "assistant" | "tool";
  content: string | Part[];
  providerOptions?: Record<string, unknown>;
}

const ROLES: ReadonlySet<string> = new Set(["system", "user", "assistant", "tool"]);

/** One stored framework item (JSON text) as the message it holds. */
export function parseItem(frameworkItem: string): ModelMessage {
  const value: unknown = JSON.parse(frameworkItem);
  if (!isMessage(value)) {
    throw new Error("a stored framework item is not an AI SDK ModelMessage");
  }
  return value;
}

/** The user's text as the message Mastra builds for a text prompt. */
export function buildUserMessage(text: string): ModelMessage {
  return { role: "user", content: text };
}

/** The turn's messages so far, from the run state JSON (null: the turn has just started). */
export function loadRunState(frameworkRunState: string | null): ModelMessage[] {
  if (frameworkRunState === null || frameworkRunState === "") {
    return [];
  }
  const value: unknown = JSON.parse(frameworkRunState);
  if (!Array.isArray(value) || !value.every(isMessage)) {
    throw new Error("the Mastra run state is not a ModelMessage[] JSON array");
  }
  return value;
}

export function isToolCall(part: Part): part is ToolCallPart {
  return part.type === "tool-call";
}

export function isToolResult(part: Part): part is ToolResultPart {
  return part.type === "tool-result";
}

/** The parts of a message (a string content is one text part). */
export function partsOf(message: ModelMessage): Part[] {
  return typeof message.content === "string" ? [{ type: "text", text: message.content }] : message.content;
}

/**
 * The tool calls of the turn's last model response that are still to run: those of its
 * assistant message that neither the provider nor Mastra answered in the response.
 */
export function openCalls(messages: readonly ModelMessage[]): ToolCallPart[] {
  const index = messages.findLastIndex((message) => message.role === "assistant");
  const assistant = messages[index];
  if (assistant === undefined) {
    return [];
  }
  const answered = new Set(
    messages.slice(index + 1).flatMap((message) =>
      partsOf(message)
        .filter(isToolResult)
        .map((p) => p.toolCallId),
    ),
  );
  return partsOf(assistant).filter(
    (part): part is ToolCallPart =>
      isToolCall(part) && part.providerExecuted !== true && !answered.has(part.toolCallId),
  );
}

/** A tool call's arguments as the JSON text the session records. */
export function argumentsText(input: unknown): string {
  return typeof input === "string" ? input : JSON.stringify(input ?? {});
}

/** The text the model reads for a tool result, as the session projects it. */
export function resultText(output: ToolOutput): string {
  switch (output.type) {
    case "text":
    case "error-text":
      return output.value;
    case "json":
    case "error-json":
      return JSON.stringify(output.value);
    case "execution-denied":
      return output.reason ?? "";
    case "content":
      return output.value.map((item) => item.text ?? "").join("");
  }
}

/**
 * The stored history as the model gets it: consecutive pieces of one message (same turn, same
 * role, assistant or tool) merged back. Every message returned is new: the shared parsed items
 * are never changed.
 */
export function replayHistory(messages: readonly { turnId: string }[], items: readonly ModelMessage[]): ModelMessage[] {
  const history: ModelMessage[] = [];
  items.forEach((item, index) => {
    const last = history[history.length - 1];
    const sameTurn = index > 0 && messages[index]?.turnId === messages[index - 1]?.turnId;
    if (
      last !== undefined &&
      sameTurn &&
      last.role === item.role &&
      (item.role === "assistant" || item.role === "tool")
    ) {
      history[history.length - 1] = { ...last, content: [...partsOf(last), ...partsOf(item)] };
    } else {
      history.push({ ...item });
    }
  });
  return history;
}

/** One stored message per piece of each message, with its projection fields. */
export function toFrameworkMessages(messages: readonly ModelMessage[]): FrameworkMessage[] {
  return messages.flatMap((message) => pieces(message).map(project));
}

function isMessage(value: unknown): value is ModelMessage {
  if (typeof value !== "object" || value === null) {
    return false;
  }
  const { role, content } = value as { role?: unknown; content?: unknown };
  return typeof role === "string" && ROLES.has(role) && (typeof content === "string" || Array.isArray(content));
}

/** A message split so that each tool call (or tool result) is a piece of its own. */
function pieces(message: ModelMessage): ModelMessage[] {
  if (typeof message.content === "string" || (message.role !== "assistant" && message.role !== "tool")) {
    return [message];
  }
  const alone = (part: Part): boolean =>
    isToolResult(part) || (isToolCall(part) && part.providerExecuted !== true && message.role === "assistant");
  const split: Part[][] = [];
  for (const part of message.content) {
    const last = split[split.length - 1];
    if (last !== undefined && last[0] !== undefined && !alone(part) && !alone(last[0])) {
      last.push(part);
    } else {
      split.push([part]);
    }
  }
  return split.length > 1 ? split.map((content) => ({ ...message, content })) : [message];
}

function project(message: ModelMessage): FrameworkMessage {
  const frameworkItem = JSON.stringify(message);
  const parts = partsOf(message);
  if (message.role === "assistant") {
    const call = parts.find((part): part is ToolCallPart => isToolCall(part) && part.providerExecuted !== true);
    if (call !== undefined) {
      return {
        role: "assistant",
        frameworkItem,
        toolCallId: call.toolCallId,
        toolName: call.toolName,
        toolArguments: argumentsText(call.input),
      };
    }
    return { role: "assistant", frameworkItem, text: textOf(parts, "") };
  }
  if (message.role === "tool") {
    const [result] = parts;
    if (parts.length === 1 && result !== undefined && isToolResult(result)) {
      return {
        role: "tool",
        frameworkItem,
        toolCallId: result.toolCallId,
        toolName: result.toolName,
        toolOutput: resultText(result.output),
      };
    }
    return { role: "tool", frameworkItem };
  }
  return { role: roleOf(message), frameworkItem, text: textOf(parts, "\n") };
}

function textOf(parts: readonly Part[], separator: string): string | null {
  return (
    parts.map((part) => (part.type === "text" && typeof part.text === "string" ? part.text : "")).join(separator) ||
    null
  );
}

function roleOf(message: ModelMessage): MessageRole {
  if (message.role === "system") {
    throw new Error("a turn's messages hold no system message: give it as the Agent's instructions");
  }
  return message.role;
}
