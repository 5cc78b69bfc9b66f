// What the viewer keeps from a session's live events between two snapshots: the text each
// model call streamed, and what it learned about each tool call.
import type { AgentEvent, AgentMessage, ToolCallStatus, ToolEffect } from "./types";

/** The text one Step execution streamed; only its highest attempt is kept. */
export interface LiveText {
  key: string;
  turnId: string;
  stepExecutionId: string;
  attempt: number;
  text: string;
  reasoning: string;
}

/** A tool call as the events describe it; the snapshot's record has the rest. */
export interface LiveToolCall {
  key: string;
  turnId: string;
  toolCallId: string;
  toolName: string;
  effect: ToolEffect | null;
  requiresApproval: boolean;
  status: ToolCallStatus | "requested" | "running";
}

export interface LiveState {
  texts: LiveText[];
  toolCalls: Map<string, LiveToolCall>;
}

export const emptyLive = (): LiveState => ({ texts: [], toolCalls: new Map() });

export const TURN_END_EVENTS: ReadonlySet<string> = new Set([
  "turn_completed",
  "turn_failed",
  "turn_steered",
  "turn_cancelled",
]);

export const toolKey = (turnId: string, toolCallId: string): string => `${turnId}/${toolCallId}`;

function appendText(texts: LiveText[], event: AgentEvent, field: "text" | "reasoning"): LiveText[] {
  const delta = typeof event.payload.text === "string" ? event.payload.text : "";
  const turnId = event.turn_id ?? "";
  const key = `${turnId}|${event.step_execution_id}`;
  const index = texts.findIndex((entry) => entry.key === key);
  const current = texts[index];
  if (current === undefined) {
    const fresh = { key, turnId, stepExecutionId: event.step_execution_id, attempt: event.attempt };
    return [...texts, { ...fresh, text: "", reasoning: "", [field]: delta }];
  }
  if (event.attempt < current.attempt) return texts; // a late delta of an abandoned attempt
  const restarted = event.attempt > current.attempt;
  const base = restarted ? { ...current, text: "", reasoning: "", attempt: event.attempt } : current;
  const next = { ...base, [field]: base[field] + delta };
  return texts.map((entry, i) => (i === index ? next : entry));
}

function updateToolCall(
  calls: Map<string, LiveToolCall>,
  event: AgentEvent,
): Map<string, LiveToolCall> {
  const payload = event.payload;
  const toolCallId = String(payload.tool_call_id ?? "");
  const turnId = event.turn_id ?? "";
  const key = toolKey(turnId, toolCallId);
  const known: LiveToolCall = calls.get(key) ?? {
    key,
    turnId,
    toolCallId,
    toolName: String(payload.tool_name ?? ""),
    effect: null,
    requiresApproval: false,
    status: "requested",
  };
  let next = known;
  if (event.type === "tool_call_deferred") {
    next = {
      ...known,
      effect: (payload.effect as ToolEffect | undefined) ?? known.effect,
      requiresApproval: payload.requires_approval === true,
    };
  } else if (event.type === "tool_call_started") {
    next = { ...known, status: "running" };
  } else if (event.type === "tool_call_finished") {
    next = { ...known, status: payload.status as ToolCallStatus };
  }
  const copy = new Map(calls);
  copy.set(key, next);
  return copy;
}

const TOOL_EVENTS = new Set(["tool_call_deferred", "tool_call_started", "tool_call_finished"]);

/** `state` with one more event applied. */
export function applyEvent(state: LiveState, event: AgentEvent): LiveState {
  if (event.type === "text_delta") return { ...state, texts: appendText(state.texts, event, "text") };
  if (event.type === "reasoning_delta") {
    return { ...state, texts: appendText(state.texts, event, "reasoning") };
  }
  if (TOOL_EVENTS.has(event.type)) {
    return { ...state, toolCalls: updateToolCall(state.toolCalls, event) };
  }
  return state;
}

/** `state` without the live text of `turnIds`, which the stored messages now hold. */
export function dropTurnTexts(state: LiveState, turnIds: ReadonlySet<string>): LiveState {
  return { ...state, texts: state.texts.filter((entry) => !turnIds.has(entry.turnId)) };
}

/** The live texts still to show beside the stored `messages`: those of the active turn, and
 * of turns the messages do not know yet; a turn that ended has its stored messages instead,
 * and a model call whose text a runner already stored is not shown twice. */
export function textsToShow(
  texts: LiveText[],
  activeTurnId: string | null,
  messages: readonly AgentMessage[],
): LiveText[] {
  const storedTurns = new Set(messages.map((message) => message.turn_id));
  const storedTexts = new Set(
    messages.filter((m) => m.role === "assistant" && m.text).map((m) => `${m.turn_id}\n${m.text}`),
  );
  return texts.filter(
    (entry) =>
      (entry.text || entry.reasoning) &&
      (entry.turnId === activeTurnId || !storedTurns.has(entry.turnId)) &&
      !storedTexts.has(`${entry.turnId}\n${entry.text}`),
  );
}
