/**
 * A session's snapshot as AI SDK UI messages, for a page reload: the same conversion as the
 * session API's `GET /sessions/{id}/ui-messages` (the Python core's), so a page that reloads
 * from either shows the same messages.
 *
 * One UI message per stored user message (`user-<sequence>`) and one assistant UI message per
 * turn (`assistant-<turnId>`): `step-start` where a model call's output begins, `text` parts,
 * and a `dynamic-tool` part per tool call with its result. The active turn's tool calls come
 * from its records, with `approval-requested` for a pending approval and a
 * `data-dex-question` part for a pending question. The notes the session stores as user
 * messages for the model are left out: the tool parts already show those calls. So is a user
 * message that continues a turn already under way (a Stepwise `decide_turn_continuation`
 * message, stored after the turn's model output): the turn's stream shows none and goes on in
 * the same assistant message with a new step, so the model output after it begins a step here
 * too.
 */

import type { AgentInterrupt, AgentSnapshot, Message, ToolCall } from "./client.js";
import * as texts from "./texts.js";

export type UIPart = Record<string, unknown> & { type: string };
export interface UIMessage {
  id: string;
  role: "user" | "assistant";
  parts: UIPart[];
}

interface ToolOutcome {
  state: "output-available" | "output-error" | "output-denied";
  output?: unknown;
  errorText?: string;
  reason?: string | null;
}

interface ToolView {
  toolName: string;
  input: unknown;
  outcome: ToolOutcome | null;
}

const REJECTION_TEXTS = new Set([
  texts.DEFAULT_REJECTION_TEXT,
  texts.STEERED_REJECTION,
  texts.TURN_CANCELLED_REJECTION,
  texts.APPROVAL_DEADLINE_PASSED,
  texts.QUESTION_DEADLINE_PASSED,
  texts.QUESTION_DECLINED,
  texts.PLANNING_TURN_REJECTION,
]);
const NOTE_HEADERS = [
  texts.TURN_FAILURE_NOTE_HEADER,
  texts.STEERED_NOTE_HEADER,
  texts.CANCELLED_NOTE_HEADER,
];
export const QUESTION_PART = "data-dex-question";

/** The ID of a turn's assistant UI message. */
export function assistantMessageId(turnId: string): string {
  return `assistant-${turnId}`;
}

/** A stored JSON text as its value; text that is not JSON stays a string. */
function jsonValue(text: string | null): unknown {
  if (text === null) return null;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function recordOutcome(record: ToolCall): ToolOutcome | null {
  switch (record.status) {
    case "succeeded":
      return { state: "output-available", output: jsonValue(record.output) };
    case "failed":
      return { state: "output-error", errorText: record.error ?? "" };
    case "outcome_unknown":
      return { state: "output-error", errorText: texts.OUTCOME_UNKNOWN_TEXT };
    case "rejected":
      return { state: "output-denied", reason: record.rejectionMessage };
    default:
      return null;
  }
}

/** The outcome a stored tool result shows (a failure prefix, a fixed text, or the output). */
function storedOutcome(toolOutput: string | null): ToolOutcome {
  const text = toolOutput ?? "";
  if (text.startsWith(texts.TOOL_CALL_FAILED_PREFIX)) {
    return { state: "output-error", errorText: text.slice(texts.TOOL_CALL_FAILED_PREFIX.length) };
  }
  if (text === texts.OUTCOME_UNKNOWN_TEXT) return { state: "output-error", errorText: text };
  if (REJECTION_TEXTS.has(text)) {
    return { state: "output-denied", reason: text === texts.DEFAULT_REJECTION_TEXT ? null : text };
  }
  return { state: "output-available", output: jsonValue(toolOutput) };
}

function toolPart(toolCallId: string, view: ToolView): UIPart {
  const part: UIPart = {
    type: "dynamic-tool",
    toolName: view.toolName,
    toolCallId,
    state: "input-available",
    input: view.input,
  };
  if (view.outcome !== null) applyOutcome(part, view.outcome);
  return part;
}

function applyOutcome(part: UIPart, outcome: ToolOutcome): void {
  part.state = outcome.state;
  if (outcome.state === "output-available") {
    part.output = outcome.output;
  } else if (outcome.state === "output-error") {
    part.errorText = outcome.errorText ?? "";
  } else {
    const approval: Record<string, unknown> = { id: part.toolCallId, approved: false };
    if (outcome.reason !== null && outcome.reason !== undefined) approval.reason = outcome.reason;
    part.approval = approval;
  }
}

function questionPart(interrupt: AgentInterrupt): UIPart {
  return {
    type: QUESTION_PART,
    id: interrupt.interruptId,
    data: {
      interrupt_id: interrupt.interruptId,
      tool_call_id: interrupt.toolCallId,
      tool_name: interrupt.toolName,
      question: interrupt.question,
      choices: interrupt.choices,
      allows_free_text: interrupt.allowsFreeText,
      deadline: interrupt.deadline,
      status: "pending",
    },
  };
}

/** The snapshot's messages as AI SDK UI messages, for a page reload. */
export function convertAgentSnapshotToUIMessages(snapshot: AgentSnapshot): UIMessage[] {
  const messages: UIMessage[] = [];
  const underWay = new Set<string>(); // the turns with model output so far
  for (const message of snapshot.messages) {
    if (message.role === "user") {
      if (isNote(message)) continue;
      // A message that continues its turn: the turn's next model output begins a step.
      if (underWay.has(message.turnId)) startStep(turnMessage(messages, message.turnId));
      else messages.push(userMessage(message));
      continue;
    }
    underWay.add(message.turnId);
    addToTurn(turnMessage(messages, message.turnId), message);
  }
  const active = snapshot.state?.activeTurnId ?? null;
  if (active !== null) addActiveTurn(turnMessage(messages, active), snapshot, active);
  return messages;
}

/** The turn's next model output begins a step of its own, as its stream's does. */
function startStep(ui: UIMessage): void {
  const last = ui.parts.at(-1);
  if (last !== undefined && last.type !== "step-start") ui.parts.push({ type: "step-start" });
}

function isNote(message: Message): boolean {
  const text = message.text ?? "";
  return NOTE_HEADERS.some((header) => text.startsWith(header));
}

function userMessage(message: Message): UIMessage {
  return {
    id: `user-${message.sequence}`,
    role: "user",
    parts: [{ type: "text", text: message.text ?? "" }],
  };
}

/** The turn's assistant UI message when it is the last one, else a new one. */
function turnMessage(messages: UIMessage[], turnId: string): UIMessage {
  const messageId = assistantMessageId(turnId);
  const last = messages.at(-1);
  if (last !== undefined && last.id === messageId) return last;
  const taken = messages.filter((m) => m.id.startsWith(messageId)).length;
  const id = taken === 0 ? messageId : `${messageId}-${taken + 1}`;
  const message: UIMessage = { id, role: "assistant", parts: [] };
  messages.push(message);
  return message;
}

function addToTurn(ui: UIMessage, message: Message): void {
  const parts = ui.parts;
  if (message.role === "tool") {
    if (message.toolCallId) {
      let part = toolPartOf(parts, message.toolCallId);
      if (part === undefined) {
        part = toolPart(message.toolCallId, {
          toolName: message.toolName ?? "",
          input: null,
          outcome: null,
        });
        parts.push(part);
      }
      applyOutcome(part, storedOutcome(message.toolOutput));
    }
    return;
  }
  if (parts.length === 0 || endsWithToolResult(parts)) parts.push({ type: "step-start" });
  if (message.text) parts.push({ type: "text", text: message.text, state: "done" });
  if (message.toolCallId) {
    const view = {
      toolName: message.toolName ?? "",
      input: jsonValue(message.toolArguments),
      outcome: null,
    };
    parts.push(toolPart(message.toolCallId, view));
  }
}

/** A model call's output after a tool result begins a new step. */
function endsWithToolResult(parts: UIPart[]): boolean {
  const last = parts.at(-1);
  return last !== undefined && last.type === "dynamic-tool" && last.state !== "input-available";
}

/** The active turn's records the stored messages do not show yet, and its pending
 *  interrupts: approvals as `approval-requested`, questions as `data-dex-question`. */
function addActiveTurn(ui: UIMessage, snapshot: AgentSnapshot, turnId: string): void {
  const parts = ui.parts;
  const records = snapshot.toolCalls
    .filter((r) => r.turnId === turnId)
    .sort((a, b) => a.deferralOrder - b.deferralOrder);
  if (records.length > 0 && parts.length === 0) parts.push({ type: "step-start" });
  for (const record of records) {
    if (toolPartOf(parts, record.toolCallId) === undefined) {
      const view = {
        toolName: record.toolName,
        input: jsonValue(record.arguments),
        outcome: recordOutcome(record),
      };
      parts.push(toolPart(record.toolCallId, view));
    }
  }
  for (const interrupt of snapshot.pendingInterrupts) {
    if (interrupt.kind === "question") {
      parts.push(questionPart(interrupt));
      continue;
    }
    const part = toolPartOf(parts, interrupt.toolCallId);
    if (part !== undefined && part.state === "input-available") {
      part.state = "approval-requested";
      part.approval = { id: interrupt.interruptId };
    }
  }
}

function toolPartOf(parts: UIPart[], toolCallId: string): UIPart | undefined {
  return parts.find((p) => p.type === "dynamic-tool" && p.toolCallId === toolCallId);
}
