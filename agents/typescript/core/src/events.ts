/**
 * A session's events as a discriminated union on `type`: one member per event type the
 * engine writes (the contract's event table), each with its payload typed and in camelCase,
 * converted field by field from the snake_case JSON as the client converts its records.
 * Event types an adapter writes (prefixed, such as `openai_agents.handoff`) keep their payload
 * as the adapter wrote it.
 */

import type {
  AgentPlan,
  AgentToolCallRecordStatus,
  AgentUsage,
  CancellationReason,
  ToolEffect,
} from "./runner.js";
import { usageFromWire, type WireAgentUsage } from "./wire.js";

/** What every event carries besides its type and payload. */
interface EventFields {
  /** The turn it belongs to; null for an event outside any turn. */
  turnId: string | null;
  /** One-based attempt of the Step that wrote it. */
  attempt: number;
  /** Shared by all attempts of a Step; "" for events a client call writes. */
  stepExecutionId: string;
  /** The resume token: follow the events after it. */
  offset: number;
  createdAt: string;
}

/** The payload of each event type the engine writes. */
export interface AgentEventPayloads {
  turn_started: {
    /** The sequence of the turn's (first) user message. */
    sequence: number;
    /** The queued message that began the turn (`QueuedUserMessage.messageId`), else null. */
    messageId: string | null;
  };
  turn_completed: { messageCount: number };
  turn_failed: { error: string };
  turn_steered: { steeredMessageCount: number; messageCount: number };
  turn_cancelled: { messageCount: number };
  text_delta: { text: string };
  reasoning_delta: { text: string };
  tool_call_deferred: {
    toolCallId: string;
    toolName: string;
    effect: ToolEffect;
    requiresApproval: boolean;
  };
  tool_call_started: { toolCallId: string; toolName: string };
  tool_call_finished: { toolCallId: string; toolName: string; status: AgentToolCallRecordStatus };
  interrupt_raised: {
    interruptId: string;
    toolCallId: string;
    toolName: string;
    deadline: string | null;
    kind: "tool_approval" | "question";
    question: string | null;
    choices: string[];
    allowsFreeText: boolean;
  };
  interrupt_resolved: {
    interruptId: string;
    approved: boolean;
    rejectionMessage: string | null;
    kind: "tool_approval" | "question";
    answered: boolean;
    cancellationReason: CancellationReason | null;
  };
  timer_started: { toolCallId: string; waitUntil: string; reason: string | null };
  plan_updated: { revision: number; status: AgentPlan["status"]; taskCount: number };
  plan_execution_started: { revision: number };
  tool_task_started: { toolCallId: string; toolName: string; taskId: string };
  usage_recorded: { recorded: AgentUsage; session: AgentUsage };
  compaction_started: { throughSequence: number };
  compaction_finished: { generation: number; throughSequence: number };
}

export type EngineEventType = keyof AgentEventPayloads;

/** An event the engine writes; narrow on `type` to read its payload. */
export type EngineAgentEvent = {
  [T in EngineEventType]: EventFields & { type: T; payload: AgentEventPayloads[T] };
}[EngineEventType];

/** An event a runner wrote under its own prefixed type (`openai_agents.handoff`); its payload
 *  is the runner's JSON as written. A type this client does not know arrives as one too. */
export interface AdapterAgentEvent extends EventFields {
  type: `${string}.${string}`;
  payload: Record<string, unknown>;
}

/** One event of a session's stream. */
export type AgentEvent = EngineAgentEvent | AdapterAgentEvent;

/** The event of type `T`. */
export type AgentEventOf<T extends EngineEventType> = Extract<EngineAgentEvent, { type: T }>;

type Json = Record<string, unknown>;

const str = (v: unknown): string => (typeof v === "string" ? v : v == null ? "" : String(v));
const strOrNull = (v: unknown): string | null => (v == null ? null : String(v));
const num = (v: unknown): number => (typeof v === "number" ? v : Number(v ?? 0));
const usage = (v: unknown): AgentUsage => usageFromWire((v ?? {}) as WireAgentUsage);

const PAYLOADS: { [T in EngineEventType]: (p: Json) => AgentEventPayloads[T] } = {
  turn_started: (p) => ({ sequence: num(p.sequence), messageId: strOrNull(p.message_id) }),
  turn_completed: (p) => ({ messageCount: num(p.message_count) }),
  turn_failed: (p) => ({ error: str(p.error) }),
  turn_steered: (p) => ({
    steeredMessageCount: num(p.steered_message_count),
    messageCount: num(p.message_count),
  }),
  turn_cancelled: (p) => ({ messageCount: num(p.message_count) }),
  text_delta: (p) => ({ text: str(p.text) }),
  reasoning_delta: (p) => ({ text: str(p.text) }),
  tool_call_deferred: (p) => ({
    toolCallId: str(p.tool_call_id),
    toolName: str(p.tool_name),
    effect: p.effect as ToolEffect,
    requiresApproval: p.requires_approval === true,
  }),
  tool_call_started: (p) => ({ toolCallId: str(p.tool_call_id), toolName: str(p.tool_name) }),
  tool_call_finished: (p) => ({
    toolCallId: str(p.tool_call_id),
    toolName: str(p.tool_name),
    status: p.status as AgentToolCallRecordStatus,
  }),
  interrupt_raised: (p) => ({
    interruptId: str(p.interrupt_id),
    toolCallId: str(p.tool_call_id),
    toolName: str(p.tool_name),
    deadline: strOrNull(p.deadline),
    kind: p.kind === "question" ? "question" : "tool_approval",
    question: strOrNull(p.question),
    choices: Array.isArray(p.choices) ? p.choices.map(str) : [],
    allowsFreeText: p.allows_free_text !== false,
  }),
  interrupt_resolved: (p) => ({
    interruptId: str(p.interrupt_id),
    approved: p.approved === true,
    rejectionMessage: strOrNull(p.rejection_message),
    kind: p.kind === "question" ? "question" : "tool_approval",
    answered: p.answered === true,
    cancellationReason: (p.cancellation_reason as CancellationReason | null | undefined) ?? null,
  }),
  timer_started: (p) => ({
    toolCallId: str(p.tool_call_id),
    waitUntil: str(p.wait_until),
    reason: strOrNull(p.reason),
  }),
  plan_updated: (p) => ({
    revision: num(p.revision),
    status: p.status as AgentPlan["status"],
    taskCount: num(p.task_count),
  }),
  plan_execution_started: (p) => ({ revision: num(p.revision) }),
  tool_task_started: (p) => ({
    toolCallId: str(p.tool_call_id),
    toolName: str(p.tool_name),
    taskId: str(p.task_id),
  }),
  usage_recorded: (p) => ({ recorded: usage(p.recorded), session: usage(p.session) }),
  compaction_started: (p) => ({ throughSequence: num(p.through_sequence) }),
  compaction_finished: (p) => ({
    generation: num(p.generation),
    throughSequence: num(p.through_sequence),
  }),
};

/** Whether `type` is one the engine writes (its payload is typed). */
export function isEngineEventType(type: string): type is EngineEventType {
  return Object.hasOwn(PAYLOADS, type);
}

/** An event from the API's JSON (an SSE event's data). */
export function eventFromJson(e: Json): AgentEvent {
  const fields: EventFields = {
    turnId: (e.turn_id as string | null | undefined) ?? null,
    attempt: (e.attempt as number | undefined) ?? 1,
    stepExecutionId: (e.step_execution_id as string | undefined) ?? "",
    offset: e.offset as number,
    createdAt: (e.created_at as string | undefined) ?? "",
  };
  const type = String(e.type);
  const raw = (e.payload as Json | null | undefined) ?? {};
  if (isEngineEventType(type)) {
    const payload = (PAYLOADS[type] as (p: Json) => unknown)(raw);
    return { ...fields, type, payload } as EngineAgentEvent;
  }
  return { ...fields, type: type as AdapterAgentEvent["type"], payload: raw };
}
