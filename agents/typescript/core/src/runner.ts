/**
 * The runner protocol in TypeScript: what a framework adapter implements, and what a call
 * gives it. The names mirror the Python core's runner protocol (camelCase here, snake_case on
 * the wire); `serveRunners` converts at the edge and turns the callables (events, heartbeats,
 * checkpoints) into stream lines.
 *
 * A runner lets its framework make exactly one model call per `runModelStep` and runs no tool
 * it can defer: the engine stores the framework's run state, runs every tool call in its own
 * Step through `executeDeferredToolCall`, and calls the runner again with the final records.
 */

import { AsyncLocalStorage } from "node:async_hooks";

/** How a tool call may affect the world; decides its Step type, retries and approval. */
export type ToolEffect = "read" | "idempotent_write" | "non_idempotent_write" | "unclassified";
export type MessageRole = "user" | "assistant" | "tool";
export type InteractionMode = "chat" | "planning" | "executing";
/** A tool call's status as a runner sees it: every record a RunModel Step gets is final, and
 *  a tool Step's own call is `approved` (or still `awaiting_approval` for none that needs it). */
export type AgentToolCallStatus =
  | "awaiting_approval"
  | "approved"
  | "rejected"
  | "succeeded"
  | "failed"
  | "outcome_unknown";
/** A stored record's status: the runner's six plus the three a call waits in. */
export type AgentToolCallRecordStatus =
  | AgentToolCallStatus
  | "awaiting_answer"
  | "waiting_for_timer"
  | "waiting_for_task";
export type CancellationReason = "steered" | "turn_cancelled";
export type QuestionResolution = "answered" | "declined" | "deadline_passed";

/** One stored message: its projection plus the framework's own item as JSON text. */
export interface AgentMessage {
  sequence: number;
  turnId: string;
  role: MessageRole;
  text: string | null;
  toolCallId: string | null;
  toolName: string | null;
  toolArguments: string | null;
  toolOutput: string | null;
  frameworkItem: string;
  createdAt: string;
}

export interface QuestionAnswer {
  interruptId: string;
  question: string;
  answer: string;
  resolution: QuestionResolution;
}

/** The engine's stored record of one tool call of a turn (what `ToolTaskPoll.toolCall` and
 *  `ToolTaskCancellation.toolCall` carry: a task's record waits in `waiting_for_task`). */
export interface AgentToolCallRecord {
  toolCallId: string;
  turnId: string;
  toolName: string;
  arguments: string;
  effect: ToolEffect;
  requiresApproval: boolean;
  status: AgentToolCallRecordStatus;
  output: string | null;
  error: string | null;
  rejectionMessage: string | null;
  deferralOrder: number;
  toolSourceReference: string | null;
  traceContext: string | null;
  waitUntil: string | null;
  inputContinuation: string | null;
  inputAnswers: QuestionAnswer[];
  inputQuestion: string | null;
  inputChoices: string[];
  inputAllowsFreeText: boolean;
  cancellationReason: CancellationReason | null;
  taskId: string | null;
  taskPollIntervalSeconds: number | null;
  taskAnswerPending: boolean;
  /** The runner's own data about a succeeded call (`ToolExecutionResult.frameworkData`). */
  frameworkData: string | null;
}

/** A tool call record as a runner's turn and tool Step see it: `AgentToolCallStatus`. */
export interface AgentToolCall extends Omit<AgentToolCallRecord, "status"> {
  status: AgentToolCallStatus;
}

export interface AgentUsage {
  modelCalls: number;
  inputTokens: number;
  outputTokens: number;
  cachedInputTokens: number;
  reasoningTokens: number;
}

export interface ModelCallMetadata {
  requestModel?: string | null;
  responseModel?: string | null;
  providerName?: string | null;
  responseId?: string | null;
  finishReasons?: string[];
}

/** Per-tool override of the effect table; null fields fall back to the defaults. */
export interface ToolPolicy {
  effect?: ToolEffect | null;
  requiresApproval?: boolean | null;
}

/** A tool's complete policy, every default applied. */
export interface ResolvedToolPolicy {
  effect: ToolEffect;
  requiresApproval: boolean;
}

export interface AgentPlanTask {
  content: string;
  status: "pending" | "in_progress" | "completed";
}

export interface AgentPlan {
  revision: number;
  status: "draft" | "active" | "completed" | "cleared";
  tasks: AgentPlanTask[];
  updatedAt: string;
}

export interface ContextSummary {
  generation: number;
  firstSequence: number;
  lastSequence: number;
  text: string;
  createdAt: string;
}

/** One item a runner returns to be stored: its projection plus the item as JSON text.
 *  `frameworkItem` is given back unchanged (parsed by `parseItem`) on later calls. */
export interface FrameworkMessage {
  role: MessageRole;
  frameworkItem: string;
  text?: string | null;
  toolCallId?: string | null;
  toolName?: string | null;
  toolArguments?: string | null;
  toolOutput?: string | null;
}

/** A tool call the model asked for, which the engine runs in its own Step. */
export interface DeferredToolCall {
  toolCallId: string;
  toolName: string;
  arguments: string;
  policy?: ToolPolicy | null;
  toolSourceReference?: string | null;
}

/** The model gave a final answer. */
export interface TurnCompleted {
  kind: "turn_completed";
  newMessages?: FrameworkMessage[];
  usage?: AgentUsage | null;
  modelCallMetadata?: ModelCallMetadata | null;
  turnError?: string | null;
}

/** The model asked for tools: each runs in its own Step, then the runner is called again. */
export interface ToolCallsRequested {
  kind: "tool_calls_requested";
  frameworkRunState: string;
  toolCalls: DeferredToolCall[];
  usage?: AgentUsage | null;
  newMessages?: FrameworkMessage[];
  modelCallMetadata?: ModelCallMetadata | null;
}

/** Make another model call in the same turn. */
export interface TurnContinued {
  kind: "turn_continued";
  frameworkRunState: string;
  newMessages?: FrameworkMessage[];
  usage?: AgentUsage | null;
  modelCallMetadata?: ModelCallMetadata | null;
}

export type AgentTurnOutcome = TurnCompleted | ToolCallsRequested | TurnContinued;

/** Writes an event to the session's stream (a line of the call's response). */
export interface EventWriter {
  write(type: string, payload: Record<string, unknown>): void;
}

/** Which stored messages a turn sees: every sequence from `firstSequence` through
 *  `lastSequence` (0: none). */
export interface HistoryRange {
  firstSequence: number;
  lastSequence: number;
}

/** What a runner is given for one model call. `messages` is the turn's stored history and
 *  `items[i]` the parsed framework item of `messages[i]` (parsed once per session by
 *  `parseItem` or `buildUserMessage` and shared between calls: treat both as read-only). */
export interface AgentTurnContext<Item = unknown> {
  flowType: string;
  flowId: string;
  turnId: string;
  attempt: number;
  stepExecutionId: string;
  history: HistoryRange;
  messages: readonly AgentMessage[];
  items: readonly Item[];
  frameworkRunState: string | null;
  toolCalls: readonly AgentToolCall[];
  events: EventWriter;
  heartbeat(): void;
  /** Aborted when the engine closes the call's connection (a Worker gone, `cancel_turn`). */
  cancellationSignal: AbortSignal;
  /** When the Step attempt making this call times out (its method timeout from the attempt's
   *  start), or null when the Step has none or the Worker does not say. */
  deadline: Date | null;
  toolPolicies: Readonly<Record<string, ToolPolicy>>;
  defaultToolEffect: ToolEffect;
  enabledBuiltInTools: readonly string[];
  sessionSettings: Readonly<Record<string, unknown>>;
  interactionMode: InteractionMode;
  plan: AgentPlan | null;
  contextSummary: ContextSummary | null;
  /** The complete policy of a tool: explicit ToolPolicy, then framework metadata, then the
   *  session's default effect; approval defaults to the effect's default. */
  resolveToolPolicy(
    toolName: string,
    frameworkEffect?: ToolEffect | null,
    frameworkRequiresApproval?: boolean | null,
  ): ResolvedToolPolicy;
}

export interface ToolExecutionResult {
  kind: "tool_execution_result";
  /** What the model reads as the call's result. */
  output: string;
  /**
   * The runner's own data about the call (a JSON text of its choosing): framework state the
   * tool wrote, actions it asked for. Stored with the record, given back on
   * `AgentToolCall.frameworkData` in the RunModel Steps that follow.
   */
  frameworkData?: string | null;
}

/** The tool needs the user's answer before it takes any effect. */
export interface ToolInputRequested {
  kind: "tool_input_requested";
  question: string;
  choices?: string[];
  allowsFreeText?: boolean;
  continuation?: string | null;
}

/** The tool started remote work that the session polls. */
export interface ToolTaskStarted {
  kind: "tool_task_started";
  taskId: string;
  pollIntervalSeconds: number;
}

export interface ToolTaskPending {
  kind: "tool_task_pending";
  pollIntervalSeconds: number;
  continuation?: string | null;
}

export type DeferredToolOutcome = ToolExecutionResult | ToolInputRequested | ToolTaskStarted;
export type ToolTaskPollOutcome = ToolExecutionResult | ToolInputRequested | ToolTaskPending;

/** One run of a deferred tool call, in its own Step. */
export interface DeferredToolExecution<Item = unknown> {
  flowType: string;
  flowId: string;
  turnId: string;
  stepExecutionId: string;
  toolCall: AgentToolCall;
  /** Stable across the attempts of this call: pass it to the service the tool writes to. */
  idempotencyKey: string;
  attempt: number;
  events: EventWriter;
  heartbeat(): void;
  /** Aborted when the engine closes the call's connection (a Worker gone, `cancel_turn`). */
  cancellationSignal: AbortSignal;
  /** When the Step attempt making this call times out (its method timeout from the attempt's
   *  start), or null when the Step has none or the Worker does not say. */
  deadline: Date | null;
  /** Resolves when the checkpoint line is written to the response, not when it is
   *  committed: one sent just before this process dies may be lost. */
  saveHeartbeatCheckpoint(checkpoint: string): Promise<void>;
  heartbeatCheckpoint: string | null;
  inputAnswers: readonly QuestionAnswer[];
  supportsToolTasks: boolean;
  /** The active turn, for a runner with `toolStepsReadTurn`; null for any other. */
  turn: AgentTurnContext<Item> | null;
}

export interface ToolTaskPoll {
  flowType: string;
  flowId: string;
  toolCall: AgentToolCallRecord;
  idempotencyKey: string;
  attempt: number;
  inputAnswers: readonly QuestionAnswer[];
  events: EventWriter;
  heartbeat(): void;
  /** Aborted when the engine closes the call's connection (a Worker gone, `cancel_turn`). */
  cancellationSignal: AbortSignal;
  /** When the Step attempt making this call times out (its method timeout from the attempt's
   *  start), or null when the Step has none or the Worker does not say. */
  deadline: Date | null;
  pendingAnswer: QuestionAnswer | null;
}

export interface ToolTaskCancellation {
  flowType: string;
  flowId: string;
  toolCall: AgentToolCallRecord;
  idempotencyKey: string;
  attempt: number;
  heartbeat(): void;
  /** Aborted when the engine closes the call's connection (a Worker gone, `cancel_turn`). */
  cancellationSignal: AbortSignal;
  /** When the Step attempt making this call times out (its method timeout from the attempt's
   *  start), or null when the Step has none or the Worker does not say. */
  deadline: Date | null;
}

export interface ContextSummaryRequest<Item = unknown> {
  flowType: string;
  flowId: string;
  turnId: string;
  attempt: number;
  /** The CompactContext Step execution making the call ("" from an older Worker). */
  stepExecutionId: string;
  previousSummary: ContextSummary | null;
  history: HistoryRange;
  messages: readonly AgentMessage[];
  items: readonly Item[];
  throughSequence: number;
  events: EventWriter;
  heartbeat(): void;
  /** Aborted when the engine closes the call's connection (a Worker gone, `cancel_turn`). */
  cancellationSignal: AbortSignal;
  /** When the Step attempt making this call times out (its method timeout from the attempt's
   *  start), or null when the Step has none or the Worker does not say. */
  deadline: Date | null;
  inputTokenBudget: number;
  sessionSettings: Readonly<Record<string, unknown>>;
}

export interface ContextSummaryResult {
  text: string;
  usage?: AgentUsage | null;
  modelCallMetadata?: ModelCallMetadata | null;
}

/** Thrown by a tool: a failure the model reads, recorded `failed`, never retried. */
export class ToolExecutionError extends Error {
  override name = "ToolExecutionError";
}

/** A framework adapter, served to the engine by `serveRunners`. */
export interface AgentFrameworkRunner<Item = unknown> {
  /** Parses one stored framework item (JSON text) into the framework's own message. The
   *  neutral user item `{"kind":"user_text","text":...}` goes to buildUserMessage instead. */
  parseItem(frameworkItem: string): Item;
  /** The framework's own message for a user's text (replaces the neutral user_text item). */
  buildUserMessage(text: string): Item;
  runModelStep(turn: AgentTurnContext<Item>): Promise<AgentTurnOutcome>;
  executeDeferredToolCall(call: DeferredToolExecution<Item>): Promise<DeferredToolOutcome>;
  // Optional capabilities (advertised by describe when present):
  buildUnfinishedTurnMessages?(turn: AgentTurnContext<Item>): Promise<FrameworkMessage[]>;
  pollToolTask?(poll: ToolTaskPoll): Promise<ToolTaskPollOutcome>;
  cancelToolTask?(cancellation: ToolTaskCancellation): Promise<void>;
  summarizeContext?(request: ContextSummaryRequest<Item>): Promise<ContextSummaryResult>;
  /** The next model input's size in tokens (`estimate_input_tokens`). A Worker calling this
   *  runner over HTTP estimates from the stored texts itself; these two are for in-process
   *  use and runners that share the Python core's names. */
  estimateInputTokens?(turn: AgentTurnContext<Item>): number | Promise<number>;
  /** The last sequence to summarize, which never separates a tool call from its result, or
   *  null for none (`select_compaction_cutoff`). */
  selectCompactionCutoff?(
    turn: AgentTurnContext<Item>,
    retainedTokenBudget: number,
  ): number | null | Promise<number | null>;
  readonly supportsPlanMode?: boolean;
  readonly toolStepsReadTurn?: boolean;
}

/** Each effect's approval default (the Python core's effect table). */
export const EFFECT_REQUIRES_APPROVAL: Readonly<Record<ToolEffect, boolean>> = {
  read: false,
  idempotent_write: false,
  non_idempotent_write: true,
  unclassified: true,
};

/** An explicit ToolPolicy wins, then framework metadata, then the session default. */
export function resolveToolPolicy(
  toolName: string,
  policies: Readonly<Record<string, ToolPolicy>>,
  defaultEffect: ToolEffect,
  frameworkEffect?: ToolEffect | null,
  frameworkRequiresApproval?: boolean | null,
): ResolvedToolPolicy {
  const explicit = Object.hasOwn(policies, toolName) ? policies[toolName] : undefined;
  const effect = explicit?.effect || frameworkEffect || defaultEffect;
  const requiresApproval =
    explicit?.requiresApproval ?? frameworkRequiresApproval ?? EFFECT_REQUIRES_APPROVAL[effect];
  return { effect, requiresApproval };
}

const toolExecutions = new AsyncLocalStorage<DeferredToolExecution>();

/** The tool execution this code runs inside (set around `executeDeferredToolCall`), e.g. for
 *  its idempotency key; undefined outside one. */
export function currentToolExecution(): DeferredToolExecution | undefined {
  return toolExecutions.getStore();
}

/** Runs `fn` with `execution` as the current tool execution. */
export function withToolExecution<T>(execution: DeferredToolExecution, fn: () => T): T {
  return toolExecutions.run(execution, fn);
}
