/**
 * Chat Completions items: the stored framework items, the run state, and the model input.
 *
 * Every framework item is one Chat Completions message as JSON text, the same shape as the
 * Python core's Stepwise stores, so a session's history reads the same in either language and
 * replays to any provider. The turn's items stay in the run state until the turn ends, and a
 * tool result is built from each final record when the next model call needs it.
 */

import { isFinal, modelVisibleResult } from "../records.js";
import type {
  AgentMessage,
  AgentToolCall,
  AgentTurnContext,
  ContextSummary,
  FrameworkMessage,
} from "../runner.js";
import { CONTEXT_SUMMARY_PREFIX, OUTCOME_UNKNOWN_TEXT } from "../texts.js";

/** One function call of an assistant item. */
export interface ChatToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

/** A text part of a message's content (content is a string or a list of parts). */
export interface ChatContentPart {
  type: string;
  text?: string;
  [key: string]: unknown;
}

/** One Chat Completions message. */
export interface ChatItem {
  role: "system" | "user" | "assistant" | "tool";
  content?: string | ChatContentPart[] | null;
  tool_calls?: ChatToolCall[];
  tool_call_id?: string;
  name?: string;
  [key: string]: unknown;
}

export function dumps(value: unknown): string {
  return JSON.stringify(value);
}

export function userItem(text: string): ChatItem {
  return { role: "user", content: text };
}

export function summaryItem(summary: Pick<ContextSummary, "text">): ChatItem {
  return userItem(`${CONTEXT_SUMMARY_PREFIX}\n${summary.text}`);
}

export function toolCallsOf(item: ChatItem): ChatToolCall[] {
  return item.role === "assistant" && Array.isArray(item.tool_calls) ? item.tool_calls : [];
}

/** A message's content as text: parts show their text. */
export function contentText(content: ChatItem["content"]): string | null {
  if (content === null || content === undefined || typeof content === "string")
    return content ?? null;
  if (Array.isArray(content)) {
    return content.map((part) => (typeof part?.text === "string" ? part.text : "")).join("");
  }
  return String(content);
}

/** The stored projection of one item. */
export function toFrameworkMessage(item: ChatItem): FrameworkMessage {
  if (item.role === "tool") {
    return {
      role: "tool",
      frameworkItem: dumps(item),
      toolCallId: item.tool_call_id ?? "",
      toolName: item.name ?? null,
      toolOutput: contentText(item.content),
    };
  }
  const calls = toolCallsOf(item);
  const single = calls.length === 1 ? calls[0] : undefined;
  return {
    role: item.role === "user" ? "user" : "assistant",
    frameworkItem: dumps(item),
    text: contentText(item.content),
    toolCallId: single?.id ?? null,
    toolName: single?.function.name ?? null,
    toolArguments: single?.function.arguments ?? null,
  };
}

export function toFrameworkMessages(items: readonly ChatItem[]): FrameworkMessage[] {
  return items.map(toFrameworkMessage);
}

const ROLES: ReadonlySet<string> = new Set(["user", "assistant", "tool", "system"]);

/** A stored item parsed, or null when it is not a Chat Completions message (another runner's). */
export function parseChatItem(frameworkItem: string): ChatItem | null {
  try {
    const value = JSON.parse(frameworkItem) as unknown;
    if (typeof value === "object" && value !== null && !Array.isArray(value)) {
      const role = (value as { role?: unknown }).role;
      if (typeof role === "string" && ROLES.has(role)) return value as ChatItem;
    }
  } catch {
    // Not JSON: another runner's item.
  }
  return null;
}

/** A stored message's item; a message another runner stored falls back to its text. */
export function storedItem(message: AgentMessage, parsed?: ChatItem | null): ChatItem {
  const item = parsed === undefined ? parseChatItem(message.frameworkItem) : parsed;
  if (item !== null) return item;
  if (message.role === "tool") {
    return {
      role: "tool",
      tool_call_id: message.toolCallId ?? "",
      content: message.toolOutput ?? "",
    };
  }
  return { role: message.role, content: message.text ?? "" };
}

/** FrameworkRunState: the turn's unstored items, and the continuations made in a row. */
export class RunState {
  constructor(
    readonly items: ChatItem[] = [],
    readonly consecutiveContinuations = 0,
  ) {}

  static load(text: string | null): RunState {
    if (!text) return new RunState();
    const raw = JSON.parse(text) as { items?: ChatItem[]; consecutive_continuations?: number };
    return new RunState([...(raw.items ?? [])], Number(raw.consecutive_continuations ?? 0));
  }

  dump(): string {
    // The count is kept only after a continuation.
    const raw: Record<string, unknown> = { items: this.items };
    if (this.consecutiveContinuations)
      raw.consecutive_continuations = this.consecutiveContinuations;
    return dumps(raw);
  }
}

/** Tool calls of the items' model responses that have no tool result yet, in order. */
export function unansweredCalls(items: readonly ChatItem[]): ChatToolCall[] {
  const answered = new Set(
    items.filter((item) => item.role === "tool").map((item) => item.tool_call_id),
  );
  return items.flatMap(toolCallsOf).filter((call) => !answered.has(call.id));
}

/**
 * A tool result for every unanswered call, from its final record. With `strict`, a call
 * without a final record is an error (RunModel runs only when every record is final);
 * otherwise its outcome counts as unknown, so the history stays valid.
 */
export function toolResultItems(
  items: readonly ChatItem[],
  records: readonly AgentToolCall[],
  strict: boolean,
): ChatItem[] {
  const byId = new Map(records.map((record) => [record.toolCallId, record]));
  return unansweredCalls(items).map((call) => {
    const record = byId.get(call.id);
    let content: string;
    if (record !== undefined && isFinal(record)) {
      content = modelVisibleResult(record);
    } else if (strict) {
      throw new Error(`tool call ${call.id} has no final record`);
    } else {
      content = OUTCOME_UNKNOWN_TEXT;
    }
    return { role: "tool", tool_call_id: call.id, name: call.function.name, content };
  });
}

/** The stored items before the turn, and the turn's own stored items. */
export function splitTurn(turn: AgentTurnContext<ChatItem | null>): [ChatItem[], ChatItem[]] {
  const earlier: ChatItem[] = [];
  const current: ChatItem[] = [];
  turn.messages.forEach((message, index) => {
    const item = storedItem(message, turn.items[index] ?? null);
    (message.turnId === turn.turnId ? current : earlier).push(item);
  });
  return [earlier, current];
}

/** An item as the model receives it: tool results carry no name, which strict servers refuse;
 *  the stored item keeps it for display and for the transcript. */
export function stripForRequest(item: ChatItem): ChatItem {
  if (item.role === "tool") {
    const { name: _name, ...rest } = item;
    return rest as ChatItem;
  }
  return { ...item };
}
