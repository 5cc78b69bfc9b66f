/**
 * The runner wire bodies (snake_case JSON, the Python core's field names and order) and their
 * conversion to and from the camelCase runner types.
 *
 * Each type has its own converter naming every field, so user data inside a body (session
 * settings, tool arguments, event payloads, run states) is carried as it is: a generic key
 * rewriter would rename the keys of those too.
 */

import type {
  AgentMessage,
  AgentPlan,
  AgentToolCall,
  AgentToolCallRecord,
  AgentToolCallRecordStatus,
  AgentTurnOutcome,
  AgentUsage,
  CancellationReason,
  ContextSummary,
  ContextSummaryResult,
  DeferredToolCall,
  DeferredToolOutcome,
  FrameworkMessage,
  InteractionMode,
  MessageRole,
  ModelCallMetadata,
  QuestionAnswer,
  QuestionResolution,
  ToolEffect,
  ToolPolicy,
  ToolTaskPollOutcome,
} from "./runner.js";

/** The major version of the runner wire protocol that `describe` answers. */
export const PROTOCOL_VERSION = 1;

/** The neutral item the engine stores for a user's text (see `buildUserMessage`). */
export interface WireUserTextItem {
  kind: "user_text";
  text: string;
}

export interface WireAgentMessage {
  sequence: number;
  turn_id: string;
  role: MessageRole;
  text?: string | null;
  tool_call_id?: string | null;
  tool_name?: string | null;
  tool_arguments?: string | null;
  tool_output?: string | null;
  framework_item: string;
  created_at: string;
}

export interface WireQuestionAnswer {
  interrupt_id: string;
  question: string;
  answer: string;
  resolution?: QuestionResolution;
}

export interface WireAgentToolCall {
  tool_call_id: string;
  turn_id: string;
  tool_name: string;
  arguments: string;
  effect: ToolEffect;
  requires_approval: boolean;
  status: AgentToolCallRecordStatus;
  output?: string | null;
  error?: string | null;
  rejection_message?: string | null;
  deferral_order: number;
  tool_source_reference?: string | null;
  trace_context?: string | null;
  wait_until?: string | null;
  input_continuation?: string | null;
  input_answers?: WireQuestionAnswer[];
  input_question?: string | null;
  input_choices?: string[];
  input_allows_free_text?: boolean;
  cancellation_reason?: CancellationReason | null;
  task_id?: string | null;
  task_poll_interval_seconds?: number | null;
  task_answer_pending?: boolean;
  framework_data?: string | null;
}

export interface WireAgentUsage {
  model_calls?: number;
  input_tokens?: number;
  output_tokens?: number;
  cached_input_tokens?: number;
  reasoning_tokens?: number;
}

export interface WireModelCallMetadata {
  request_model: string | null;
  response_model: string | null;
  provider_name: string | null;
  response_id: string | null;
  finish_reasons: string[];
}

export interface WireToolPolicy {
  effect?: ToolEffect | null;
  requires_approval?: boolean | null;
}

export interface WireAgentPlan {
  revision: number;
  status: AgentPlan["status"];
  tasks?: { content: string; status: "pending" | "in_progress" | "completed" }[];
  updated_at: string;
}

export interface WireContextSummary {
  generation: number;
  first_sequence?: number;
  last_sequence: number;
  text: string;
  created_at: string;
}

export interface WireFrameworkMessage {
  role: MessageRole;
  framework_item: string;
  text: string | null;
  tool_call_id: string | null;
  tool_name: string | null;
  tool_arguments: string | null;
  tool_output: string | null;
}

export interface WireDeferredToolCall {
  tool_call_id: string;
  tool_name: string;
  arguments: string;
  policy: WireToolPolicy | null;
  tool_source_reference: string | null;
}

/** Which stored messages a call sees, and which of them the body carries. */
export interface WireHistory {
  first_sequence: number;
  last_sequence: number;
  messages_after: number;
}

/** `run_model_step`'s and `build_unfinished_turn_messages`' body, and a tool call's `turn`. */
export interface WireTurn {
  flow_type: string;
  flow_id: string;
  turn_id: string;
  attempt: number;
  step_execution_id: string;
  history: WireHistory;
  messages: WireAgentMessage[];
  framework_run_state: string | null;
  tool_calls: WireAgentToolCall[];
  tool_policies: Record<string, WireToolPolicy>;
  default_tool_effect: ToolEffect;
  enabled_built_in_tools?: string[];
  session_settings?: Record<string, unknown>;
  interaction_mode?: InteractionMode;
  plan?: WireAgentPlan | null;
  context_summary?: WireContextSummary | null;
  /** The Step attempt's deadline, in epoch milliseconds (null: none; absent: an older Worker). */
  deadline?: number | null;
}

export interface WireToolExecution {
  flow_type: string;
  flow_id: string;
  turn_id: string;
  step_execution_id: string;
  tool_call: WireAgentToolCall;
  idempotency_key: string;
  attempt: number;
  heartbeat_checkpoint?: string | null;
  input_answers?: WireQuestionAnswer[];
  supports_tool_tasks?: boolean;
  turn?: WireTurn | null;
  /** The Step attempt's deadline, in epoch milliseconds (null: none; absent: an older Worker). */
  deadline?: number | null;
}

export interface WireToolTaskPoll {
  flow_type: string;
  flow_id: string;
  tool_call: WireAgentToolCall;
  idempotency_key: string;
  attempt: number;
  input_answers?: WireQuestionAnswer[];
  pending_answer?: WireQuestionAnswer | null;
  /** The Step attempt's deadline, in epoch milliseconds (null: none; absent: an older Worker). */
  deadline?: number | null;
}

export interface WireToolTaskCancellation {
  flow_type: string;
  flow_id: string;
  tool_call: WireAgentToolCall;
  idempotency_key: string;
  attempt: number;
  /** The Step attempt's deadline, in epoch milliseconds (null: none; absent: an older Worker). */
  deadline?: number | null;
}

export interface WireContextSummaryRequest {
  flow_type: string;
  flow_id: string;
  turn_id: string;
  attempt: number;
  step_execution_id?: string;
  previous_summary: WireContextSummary | null;
  history: WireHistory;
  messages: WireAgentMessage[];
  through_sequence: number;
  input_token_budget: number;
  session_settings?: Record<string, unknown>;
  /** The Step attempt's deadline, in epoch milliseconds (null: none; absent: an older Worker). */
  deadline?: number | null;
}

export type WireTurnOutcome =
  | {
      kind: "turn_completed";
      new_messages: WireFrameworkMessage[];
      usage: WireAgentUsage | null;
      model_call_metadata: WireModelCallMetadata | null;
      turn_error: string | null;
    }
  | {
      kind: "tool_calls_requested";
      framework_run_state: string;
      tool_calls: WireDeferredToolCall[];
      usage: WireAgentUsage | null;
      new_messages: WireFrameworkMessage[];
      model_call_metadata: WireModelCallMetadata | null;
    }
  | {
      kind: "turn_continued";
      framework_run_state: string;
      new_messages: WireFrameworkMessage[];
      usage: WireAgentUsage | null;
      model_call_metadata: WireModelCallMetadata | null;
    };

export type WireToolOutcome =
  | { kind: "tool_execution_result"; output: string; framework_data: string | null }
  | {
      kind: "tool_input_requested";
      question: string;
      choices: string[];
      allows_free_text: boolean;
      continuation: string | null;
    }
  | { kind: "tool_task_started"; task_id: string; poll_interval_seconds: number }
  | { kind: "tool_task_pending"; poll_interval_seconds: number; continuation: string | null };

export interface WireCapabilities {
  unfinished_turn_messages: boolean;
  tool_tasks: boolean;
  tool_task_cancellation: boolean;
  context_compaction: boolean;
  plan_mode: boolean;
  tool_steps_read_turn: boolean;
}

/** A flow's session options, set by the app that serves its runner (seconds). */
export interface WireSessionOptions {
  interrupt_deadline_seconds?: number;
  max_durable_wait_seconds?: number;
}

export interface WireDescribe {
  protocol_version: number;
  flows: Record<string, { capabilities: WireCapabilities; session_options?: WireSessionOptions }>;
}

/** One line of a call's NDJSON response. */
export type WireLine =
  | { accepted: true }
  | { need_history: { after_sequence: number } }
  | { event: { type: string; payload: Record<string, unknown> } }
  | { heartbeat: true }
  | { checkpoint: string }
  | { result: unknown }
  | {
      error: {
        kind: "tool_execution_error" | "runner_error";
        message: string;
        stack?: string;
        /** A model provider's HTTP status, when the error was one (the engine decides on it
         *  whether RunModel tries again). */
        status_code?: number;
        /** That answer's `retry-after` and `retry-after-ms` headers. */
        response_headers?: Record<string, string>;
      };
    };

// From the wire ------------------------------------------------------------------------------

export function messageFromWire(m: WireAgentMessage): AgentMessage {
  return {
    sequence: m.sequence,
    turnId: m.turn_id,
    role: m.role,
    text: m.text ?? null,
    toolCallId: m.tool_call_id ?? null,
    toolName: m.tool_name ?? null,
    toolArguments: m.tool_arguments ?? null,
    toolOutput: m.tool_output ?? null,
    frameworkItem: m.framework_item,
    createdAt: m.created_at,
  };
}

export function questionAnswerFromWire(a: WireQuestionAnswer): QuestionAnswer {
  return {
    interruptId: a.interrupt_id,
    question: a.question,
    answer: a.answer,
    resolution: a.resolution ?? "answered",
  };
}

/** A runner's view of a record: a RunModel Step's records are final, a tool Step's own call
 *  approved (the statuses of `AgentToolCallStatus`). */
export function runnerToolCallFromWire(c: WireAgentToolCall): AgentToolCall {
  return toolCallFromWire(c) as AgentToolCall;
}

export function toolCallFromWire(c: WireAgentToolCall): AgentToolCallRecord {
  return {
    toolCallId: c.tool_call_id,
    turnId: c.turn_id,
    toolName: c.tool_name,
    arguments: c.arguments,
    effect: c.effect,
    requiresApproval: c.requires_approval,
    status: c.status,
    output: c.output ?? null,
    error: c.error ?? null,
    rejectionMessage: c.rejection_message ?? null,
    deferralOrder: c.deferral_order,
    toolSourceReference: c.tool_source_reference ?? null,
    traceContext: c.trace_context ?? null,
    waitUntil: c.wait_until ?? null,
    inputContinuation: c.input_continuation ?? null,
    inputAnswers: (c.input_answers ?? []).map(questionAnswerFromWire),
    inputQuestion: c.input_question ?? null,
    inputChoices: [...(c.input_choices ?? [])],
    inputAllowsFreeText: c.input_allows_free_text ?? true,
    cancellationReason: c.cancellation_reason ?? null,
    taskId: c.task_id ?? null,
    taskPollIntervalSeconds: c.task_poll_interval_seconds ?? null,
    taskAnswerPending: c.task_answer_pending ?? false,
    frameworkData: c.framework_data ?? null,
  };
}

export function usageFromWire(u: WireAgentUsage): AgentUsage {
  return {
    modelCalls: u.model_calls ?? 0,
    inputTokens: u.input_tokens ?? 0,
    outputTokens: u.output_tokens ?? 0,
    cachedInputTokens: u.cached_input_tokens ?? 0,
    reasoningTokens: u.reasoning_tokens ?? 0,
  };
}

export function toolPolicyFromWire(p: WireToolPolicy): ToolPolicy {
  return { effect: p.effect ?? null, requiresApproval: p.requires_approval ?? null };
}

export function toolPoliciesFromWire(
  policies: Record<string, WireToolPolicy>,
): Record<string, ToolPolicy> {
  const result: Record<string, ToolPolicy> = {};
  for (const [name, policy] of Object.entries(policies)) result[name] = toolPolicyFromWire(policy);
  return result;
}

export function planFromWire(p: WireAgentPlan): AgentPlan {
  return {
    revision: p.revision,
    status: p.status,
    tasks: (p.tasks ?? []).map((t) => ({ content: t.content, status: t.status })),
    updatedAt: p.updated_at,
  };
}

export function contextSummaryFromWire(s: WireContextSummary): ContextSummary {
  return {
    generation: s.generation,
    firstSequence: s.first_sequence ?? 1,
    lastSequence: s.last_sequence,
    text: s.text,
    createdAt: s.created_at,
  };
}

export function modelCallMetadataFromWire(m: Partial<WireModelCallMetadata>): ModelCallMetadata {
  return {
    requestModel: m.request_model ?? null,
    responseModel: m.response_model ?? null,
    providerName: m.provider_name ?? null,
    responseId: m.response_id ?? null,
    finishReasons: [...(m.finish_reasons ?? [])],
  };
}

// To the wire --------------------------------------------------------------------------------

export function usageToWire(u: AgentUsage): Required<WireAgentUsage> {
  return {
    model_calls: u.modelCalls,
    input_tokens: u.inputTokens,
    output_tokens: u.outputTokens,
    cached_input_tokens: u.cachedInputTokens,
    reasoning_tokens: u.reasoningTokens,
  };
}

export function modelCallMetadataToWire(m: ModelCallMetadata): WireModelCallMetadata {
  return {
    request_model: m.requestModel ?? null,
    response_model: m.responseModel ?? null,
    provider_name: m.providerName ?? null,
    response_id: m.responseId ?? null,
    finish_reasons: [...(m.finishReasons ?? [])],
  };
}

export function toolPolicyToWire(p: ToolPolicy): WireToolPolicy {
  return { effect: p.effect ?? null, requires_approval: p.requiresApproval ?? null };
}

export function frameworkMessageToWire(m: FrameworkMessage): WireFrameworkMessage {
  return {
    role: m.role,
    framework_item: m.frameworkItem,
    text: m.text ?? null,
    tool_call_id: m.toolCallId ?? null,
    tool_name: m.toolName ?? null,
    tool_arguments: m.toolArguments ?? null,
    tool_output: m.toolOutput ?? null,
  };
}

export function deferredToolCallToWire(c: DeferredToolCall): WireDeferredToolCall {
  return {
    tool_call_id: c.toolCallId,
    tool_name: c.toolName,
    arguments: c.arguments,
    policy: c.policy ? toolPolicyToWire(c.policy) : null,
    tool_source_reference: c.toolSourceReference ?? null,
  };
}

function usageOrNull(u: AgentUsage | null | undefined): WireAgentUsage | null {
  return u ? usageToWire(u) : null;
}

function metadataOrNull(m: ModelCallMetadata | null | undefined): WireModelCallMetadata | null {
  return m ? modelCallMetadataToWire(m) : null;
}

export function turnOutcomeToWire(o: AgentTurnOutcome): WireTurnOutcome {
  const newMessages = (o.newMessages ?? []).map(frameworkMessageToWire);
  switch (o.kind) {
    case "turn_completed":
      return {
        kind: o.kind,
        new_messages: newMessages,
        usage: usageOrNull(o.usage),
        model_call_metadata: metadataOrNull(o.modelCallMetadata),
        turn_error: o.turnError ?? null,
      };
    case "tool_calls_requested":
      return {
        kind: o.kind,
        framework_run_state: o.frameworkRunState,
        tool_calls: o.toolCalls.map(deferredToolCallToWire),
        usage: usageOrNull(o.usage),
        new_messages: newMessages,
        model_call_metadata: metadataOrNull(o.modelCallMetadata),
      };
    case "turn_continued":
      return {
        kind: o.kind,
        framework_run_state: o.frameworkRunState,
        new_messages: newMessages,
        usage: usageOrNull(o.usage),
        model_call_metadata: metadataOrNull(o.modelCallMetadata),
      };
    default:
      throw new TypeError(`unknown turn outcome kind ${String((o as { kind: unknown }).kind)}`);
  }
}

export function toolOutcomeToWire(o: DeferredToolOutcome | ToolTaskPollOutcome): WireToolOutcome {
  switch (o.kind) {
    case "tool_execution_result":
      return { kind: o.kind, output: o.output, framework_data: o.frameworkData ?? null };
    case "tool_input_requested":
      return {
        kind: o.kind,
        question: o.question,
        choices: [...(o.choices ?? [])],
        allows_free_text: o.allowsFreeText ?? true,
        continuation: o.continuation ?? null,
      };
    case "tool_task_started":
      return { kind: o.kind, task_id: o.taskId, poll_interval_seconds: o.pollIntervalSeconds };
    case "tool_task_pending":
      return {
        kind: o.kind,
        poll_interval_seconds: o.pollIntervalSeconds,
        continuation: o.continuation ?? null,
      };
    default:
      throw new TypeError(`unknown tool outcome kind ${String((o as { kind: unknown }).kind)}`);
  }
}

export function contextSummaryResultToWire(r: ContextSummaryResult): {
  text: string;
  usage: WireAgentUsage | null;
  model_call_metadata: WireModelCallMetadata | null;
} {
  return {
    text: r.text,
    usage: usageOrNull(r.usage),
    model_call_metadata: metadataOrNull(r.modelCallMetadata),
  };
}

/** A wire deadline (epoch ms) as a Date, or null. */
export function deadlineFromWire(deadline: number | null | undefined): Date | null {
  return typeof deadline === "number" && Number.isFinite(deadline) ? new Date(deadline) : null;
}
