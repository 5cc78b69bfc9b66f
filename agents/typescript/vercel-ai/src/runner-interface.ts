// The TypeScript runner interface: agents/typescript/core/src/runner.ts exports exactly these
// names (more may be added, none renamed). camelCase here; snake_case on the wire, converted
// by serveRunners at the edge. Mirrors agents/python/core/src/dex_agents/runner.py.

export type ToolEffect = "read" | "idempotent_write" | "non_idempotent_write" | "unclassified";
export type MessageRole = "user" | "assistant" | "tool";

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
  resolution: "answered" | "declined" | "deadline_passed";
}
export interface AgentToolCall {
  toolCallId: string;
  turnId: string;
  toolName: string;
  arguments: string;
  effect: ToolEffect;
  requiresApproval: boolean;
  status: string /* ToolCallStatus union */;
  output: string | null;
  error: string | null;
  rejectionMessage: string | null;
  deferralOrder: number;
  toolSourceReference?: string | null;
  traceContext?: string | null;
  waitUntil?: string | null;
  inputContinuation?: string | null;
  inputAnswers?: QuestionAnswer[];
  inputQuestion?: string | null;
  inputChoices?: string[];
  inputAllowsFreeText?: boolean;
  cancellationReason?: "steered" | "turn_cancelled" | null;
  taskId?: string | null;
  taskPollIntervalSeconds?: number | null;
  taskAnswerPending?: boolean;
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
export interface ToolPolicy {
  effect?: ToolEffect | null;
  requiresApproval?: boolean | null;
}

/** One stored item: its projection plus the framework's own item as JSON text. */
export interface FrameworkMessage {
  role: MessageRole;
  frameworkItem: string;
  text?: string | null;
  toolCallId?: string | null;
  toolName?: string | null;
  toolArguments?: string | null;
  toolOutput?: string | null;
}

export interface DeferredToolCall {
  toolCallId: string;
  toolName: string;
  arguments: string;
  policy?: ToolPolicy | null;
  toolSourceReference?: string | null;
}

export type AgentTurnOutcome =
  | {
      kind: "turn_completed";
      newMessages?: FrameworkMessage[];
      usage?: AgentUsage | null;
      modelCallMetadata?: ModelCallMetadata | null;
      turnError?: string | null;
    }
  | {
      kind: "tool_calls_requested";
      frameworkRunState: string;
      toolCalls: DeferredToolCall[];
      usage?: AgentUsage | null;
      newMessages?: FrameworkMessage[];
      modelCallMetadata?: ModelCallMetadata | null;
    }
  | {
      kind: "turn_continued";
      frameworkRunState: string;
      newMessages?: FrameworkMessage[];
      usage?: AgentUsage | null;
      modelCallMetadata?: ModelCallMetadata | null;
    };

export interface EventWriter {
  write(type: string, payload: Record<string, unknown>): void;
}

/** What a runner is given for one model call. `history` is the turn's stored messages, each
 *  with its parsed framework item (parse via the runner's parseItem, cached per session by
 *  serveRunners; treat as read-only). */
export interface AgentTurnContext<Item = unknown> {
  flowId: string;
  turnId: string;
  attempt: number;
  stepExecutionId: string;
  messages: readonly AgentMessage[];
  items: readonly Item[]; // items[i] is messages[i]'s parsed framework item
  frameworkRunState: string | null;
  toolCalls: readonly AgentToolCall[];
  events: EventWriter;
  heartbeat(): void;
  signal: AbortSignal;
  toolPolicies: Readonly<Record<string, ToolPolicy>>;
  defaultToolEffect: ToolEffect;
  enabledBuiltInTools: readonly string[];
  sessionSettings: Readonly<Record<string, unknown>>;
  interactionMode: "chat" | "plan";
  plan: unknown | null;
  contextSummary: unknown | null;
  resolveToolPolicy(
    toolName: string,
    frameworkEffect?: ToolEffect | null,
    frameworkRequiresApproval?: boolean | null,
  ): Required<ToolPolicy>;
}

export type DeferredToolOutcome =
  | { kind: "tool_execution_result"; output: string }
  | {
      kind: "tool_input_requested";
      question: string;
      choices?: string[];
      allowsFreeText?: boolean;
      continuation?: string | null;
    }
  | { kind: "tool_task_started"; taskId: string; pollIntervalSeconds: number };

export interface DeferredToolExecution<Item = unknown> {
  flowId: string;
  turnId: string;
  stepExecutionId: string;
  toolCall: AgentToolCall;
  idempotencyKey: string;
  attempt: number;
  events: EventWriter;
  heartbeat(): void;
  signal: AbortSignal;
  saveHeartbeatCheckpoint(checkpoint: string): Promise<void>;
  heartbeatCheckpoint: string | null;
  inputAnswers: readonly QuestionAnswer[];
  supportsToolTasks: boolean;
  turn: AgentTurnContext<Item> | null;
}

/** Thrown by a tool: a failure the model reads, recorded `failed`, never retried. */
export class ToolExecutionError extends Error {}

export interface AgentFrameworkRunner<Item = unknown> {
  /** Parses one stored framework item (JSON text) into the framework's own message. The
   *  neutral user item {"kind":"user_text","text":...} is handed to buildUserMessage instead. */
  parseItem(frameworkItem: string): Item;
  /** The framework's own message for a user's text (replaces the neutral user_text item). */
  buildUserMessage(text: string): Item;
  runModelStep(turn: AgentTurnContext<Item>): Promise<AgentTurnOutcome>;
  executeDeferredToolCall(call: DeferredToolExecution<Item>): Promise<DeferredToolOutcome>;
  // Optional capabilities (advertised by describe when present):
  buildUnfinishedTurnMessages?(turn: AgentTurnContext<Item>): Promise<FrameworkMessage[]>;
  pollToolTask?(poll: unknown): Promise<unknown>;
  cancelToolTask?(cancellation: unknown): Promise<void>;
  summarizeContext?(request: unknown): Promise<{ text: string; usage?: AgentUsage | null }>;
  readonly supportsPlanMode?: boolean;
  readonly toolStepsReadTurn?: boolean;
}
