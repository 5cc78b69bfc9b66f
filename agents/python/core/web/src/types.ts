// The HTTP API's JSON, snake_case as the Python client's models serialize.

export type SessionStatus =
  | "waiting_for_user_message"
  | "running_model"
  | "running_tools"
  | "compacting_context"
  | "failed";

/** What a session waits on a person for (the project's addition to the contract), derived from
 *  its pending interrupts; its status stays `running_tools` meanwhile. */
export type WaitingFor = "approval" | "answer";

export type ToolEffect = "read" | "idempotent_write" | "non_idempotent_write" | "unclassified";

export type ToolCallStatus =
  | "awaiting_approval"
  | "approved"
  | "awaiting_answer"
  | "waiting_for_timer"
  | "waiting_for_task"
  | "rejected"
  | "succeeded"
  | "failed"
  | "outcome_unknown";

export const FINAL_TOOL_STATUSES: ReadonlySet<string> = new Set([
  "rejected",
  "succeeded",
  "failed",
  "outcome_unknown",
]);

export interface SessionSummary {
  session_id: string;
  flow_type: string;
  status: SessionStatus | null;
  turn_count: number;
  active_turn_id: string | null;
  created_at: string;
  updated_at: string;
  waiting_for: WaitingFor | null;
}

export interface AgentState {
  status: SessionStatus;
  turn_count: number;
  active_turn_id: string | null;
  next_message_sequence: number;
  last_turn_error: string | null;
  interaction_mode: "chat" | "planning" | "executing";
  accepts_turn_control: boolean;
}

export interface AgentMessage {
  sequence: number;
  turn_id: string;
  role: "user" | "assistant" | "tool";
  text: string | null;
  tool_call_id: string | null;
  tool_name: string | null;
  tool_arguments: string | null;
  tool_output: string | null;
  created_at: string;
}

export interface AgentToolCall {
  tool_call_id: string;
  turn_id: string;
  tool_name: string;
  arguments: string;
  effect: ToolEffect;
  requires_approval: boolean;
  status: ToolCallStatus;
  output: string | null;
  error: string | null;
  rejection_message: string | null;
  deferral_order: number;
  wait_until: string | null;
  input_question: string | null;
  input_choices: string[];
  input_allows_free_text: boolean;
  cancellation_reason: "steered" | "turn_cancelled" | null;
  task_id: string | null;
  task_poll_interval_seconds: number | null;
}

export interface AgentInterrupt {
  interrupt_id: string;
  kind: "tool_approval" | "question";
  tool_call_id: string;
  tool_name: string;
  arguments: string;
  created_at: string;
  deadline: string | null;
  question: string | null;
  choices: string[];
  allows_free_text: boolean;
}

export interface AgentUsage {
  model_calls: number;
  input_tokens: number;
  output_tokens: number;
  cached_input_tokens: number;
  reasoning_tokens: number;
}

export interface PendingUserMessage {
  message_id: string;
  message: { text: string; plan_mode: boolean };
}

export interface AgentPlan {
  revision: number;
  status: "draft" | "active" | "completed" | "cleared";
  tasks: { content: string; status: "pending" | "in_progress" | "completed" }[];
  updated_at: string;
}

export interface SessionSnapshot {
  session_id: string;
  flow_type: string;
  resume_token: string;
  state: AgentState | null;
  messages: AgentMessage[];
  pending_interrupts: AgentInterrupt[];
  tool_calls: AgentToolCall[];
  usage: AgentUsage;
  queued_message_count: number;
  plan: AgentPlan | null;
  queued_messages: PendingUserMessage[];
  steered_messages: PendingUserMessage[];
  session_settings: Record<string, unknown> | null;
  waiting_for: WaitingFor | null;
}

/** Why the Step a failure route handles failed. */
export interface StepRecovery {
  detail: string;
  attempt_progress: "NOT_STARTED" | "NOT_COMPLETED";
  error_type: string;
}

export interface StepExecution {
  step_execution_id: string;
  step_type: string;
  status: "scheduled" | "waiting" | "parked" | "running" | "succeeded" | "failed" | "cancelled";
  attempts: number;
  input: string;
  error: string | null;
  next_steps: string[];
  scheduled_at: string;
  started_at: string | null;
  ended_at: string | null;
  /** On a failure route only. */
  recovery?: StepRecovery | null;
}

export interface WorkerInfo {
  worker_id: string;
  state: "running" | "stopped";
  beats: number;
  flow_types: string[];
  lease_seconds: number;
  host: string;
  pid: number;
  started_at: string;
  heartbeat_at: string;
}

/** One AgentEvent from `/api/sessions/{id}/events`; `payload` is a JSON object. */
export interface AgentEvent {
  type: string;
  turn_id: string | null;
  attempt: number;
  payload: Record<string, unknown>;
  step_execution_id: string;
  offset?: number;
  created_at?: string;
}

export interface ApiErrorBody {
  error: { code: string; message: string; field: string | null };
}
