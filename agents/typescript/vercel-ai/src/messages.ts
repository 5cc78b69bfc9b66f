/**
 * Stored session messages <-> AI SDK `ModelMessage`s.
 *
 * A stored message holds one `ModelMessage` as its framework item, in the AI SDK's own
 * plain-JSON shape. An assistant message with several tool calls, or a tool message with several
 * results, is stored as one message per call or result (each a `ModelMessage` of the same role
 * holding that one part), so every stored message projects to at most one tool call, as the
 * session's readers expect. Replay merges those pieces back: the model sees the message the
 * SDK made.
 */
import type { AssistantModelMessage, ModelMessage, ToolModelMessage, ToolResultPart } from "ai";
import type { FrameworkMessage, MessageRole } from "./dex.js";

type AssistantPart = Exclude<AssistantModelMessage["content"], string>[number];
type ToolPart = ToolModelMessage["content"][number];
type ToolCallPart = Extract<AssistantPart, { type: "tool-call" }>;

const ROLES: ReadonlySet<string> = new Set(["system", "user", "assistant", "tool"]);

/** One stored framework item (JSON text) as the AI SDK message it holds. */
export function parseItem(frameworkItem: string): ModelMessage {
  const value: unknown = JSON.parse(frameworkItem);
  if (!isMessage(value)) {
    throw new Error("a stored framework item is not an AI SDK ModelMessage");
  }
  return value;
}

/** The user's text as the message the AI SDK itself builds for a text prompt. */
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
    throw new Error("the Vercel AI SDK run state is not a ModelMessage[] JSON array");
  }
  return value;
}

export function dumpRunState(messages: readonly ModelMessage[]): string {
  return JSON.stringify(messages);
}

/**
 * The stored history as the model gets it: consecutive pieces of one message (same turn, same
 * role, assistant or tool) merged back into that message. Every message returned is new, so
 * the shared parsed items are never changed.
 */
export function replayHistory(messages: readonly { turnId: string }[], items: readonly ModelMessage[]): ModelMessage[] {
  const history: ModelMessage[] = [];
  let lastTurn: string | null = null;
  items.forEach((item, index) => {
    const turnId = messages[index]?.turnId ?? null;
    const last = history[history.length - 1];
    if (last !== undefined && turnId === lastTurn && isPieceOf(last, item)) {
      history[history.length - 1] = merged(last, item);
    } else {
      history.push({ ...item } as ModelMessage);
    }
    lastTurn = turnId;
  });
  return history;
}

/** One stored message per piece of each message, with its projection fields. */
export function toFrameworkMessages(messages: readonly ModelMessage[]): FrameworkMessage[] {
  return messages.flatMap((message) => pieces(message).map(project));
}

/** The tool calls of an assistant message that the runner defers (provider-run ones are not). */
export function deferrableCalls(message: ModelMessage | undefined): ToolCallPart[] {
  if (message === undefined || message.role !== "assistant" || typeof message.content === "string") {
    return [];
  }
  return message.content.filter(
    (part): part is ToolCallPart => part.type === "tool-call" && part.providerExecuted !== true,
  );
}

/** A tool call's arguments as the JSON text the session records. */
export function argumentsText(input: unknown): string {
  return typeof input === "string" ? input : JSON.stringify(input ?? {});
}

/** The text the model reads for a tool result, as the session projects it. */
export function resultText(part: ToolResultPart): string {
  const output = part.output;
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
      return output.value.map((item) => (item.type === "text" ? item.text : "")).join("");
  }
}

function isMessage(value: unknown): value is ModelMessage {
  if (typeof value !== "object" || value === null) {
    return false;
  }
  const { role, content } = value as { role?: unknown; content?: unknown };
  return typeof role === "string" && ROLES.has(role) && (typeof content === "string" || Array.isArray(content));
}

function isPieceOf(previous: ModelMessage, next: ModelMessage): boolean {
  return previous.role === next.role && (next.role === "assistant" || next.role === "tool");
}

function merged(first: ModelMessage, second: ModelMessage): ModelMessage {
  if (first.role === "assistant" && second.role === "assistant") {
    return { ...first, content: [...assistantParts(first), ...assistantParts(second)] };
  }
  if (first.role === "tool" && second.role === "tool") {
    return { ...first, content: [...first.content, ...second.content] };
  }
  throw new Error("only pieces of the same kind of message can be merged");
}

function assistantParts(message: AssistantModelMessage): AssistantPart[] {
  return typeof message.content === "string" ? [{ type: "text", text: message.content }] : message.content;
}

/** Parts in order: each `alone` part on its own, runs of other parts together. */
function groups<Part>(parts: readonly Part[], alone: (part: Part) => boolean): Part[][] {
  const result: Part[][] = [];
  for (const part of parts) {
    const last = result[result.length - 1];
    if (!alone(part) && last !== undefined && last[0] !== undefined && !alone(last[0])) {
      last.push(part);
    } else {
      result.push([part]);
    }
  }
  return result;
}

function pieces(message: ModelMessage): ModelMessage[] {
  if (message.role === "assistant" && typeof message.content !== "string") {
    const deferred = (part: AssistantPart): boolean => part.type === "tool-call" && part.providerExecuted !== true;
    const split = groups(message.content, deferred);
    return split.length > 1 ? split.map((content) => ({ ...message, content })) : [message];
  }
  if (message.role === "tool") {
    const result = (part: ToolPart): boolean => part.type === "tool-result";
    const split = groups(message.content, result);
    return split.length > 1 ? split.map((content) => ({ ...message, content })) : [message];
  }
  return [message];
}

function project(message: ModelMessage): FrameworkMessage {
  const frameworkItem = JSON.stringify(message);
  if (message.role === "assistant") {
    const [call] = deferrableCalls(message);
    if (call !== undefined) {
      return {
        role: "assistant",
        frameworkItem,
        toolCallId: call.toolCallId,
        toolName: call.toolName,
        toolArguments: argumentsText(call.input),
      };
    }
    const text = assistantParts(message)
      .map((part) => (part.type === "text" ? part.text : ""))
      .join("");
    return { role: "assistant", frameworkItem, text: text || null };
  }
  if (message.role === "tool") {
    const [part] = message.content;
    if (message.content.length === 1 && part !== undefined && part.type === "tool-result") {
      return {
        role: "tool",
        frameworkItem,
        toolCallId: part.toolCallId,
        toolName: part.toolName,
        toolOutput: resultText(part),
      };
    }
    return { role: "tool", frameworkItem };
  }
  return { role: roleOf(message), frameworkItem, text: userText(message) };
}

function roleOf(message: ModelMessage): MessageRole {
  if (message.role === "system") {
    throw new Error("a turn's messages hold no system message: give it as the runner's instructions");
  }
  return message.role;
}

function userText(message: ModelMessage): string | null {
  if (typeof message.content === "string") {
    return message.content;
  }
  const texts = message.content.map((part) => (part.type === "text" ? part.text : ""));
  return texts.join("\n") || null;
}
