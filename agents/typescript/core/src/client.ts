/**
 * `AgentClient`: the typed client of the session API that `dex-agents serve` answers (its
 * RPCs, snapshots, message pages, Workers, and a session's events as Server-Sent Events with
 * `Last-Event-ID` resume). Results are camelCase, converted field by field from the
 * snake_case JSON, so user data (settings, event payloads) keeps its keys.
 */

import type {
  AgentMessage,
  AgentPlan,
  AgentToolCall,
  AgentUsage,
  CancellationReason,
  ContextSummary,
  InteractionMode,
  MessageRole,
  ToolCallStatus,
  ToolEffect,
} from "./runner.js";
import {
  contextSummaryFromWire,
  planFromWire,
  usageFromWire,
  type WireAgentPlan,
  type WireAgentUsage,
  type WireContextSummary,
} from "./wire.js";

export type SessionStatus =
  | "waiting_for_user_message"
  | "running_model"
  | "running_tools"
  | "compacting_context"
  | "failed";

export interface AgentState {
  status: SessionStatus;
  turnCount: number;
  activeTurnId: string | null;
  nextMessageSequence: number;
  lastTurnError: string | null;
  interactionMode: InteractionMode;
  acceptsTurnControl: boolean;
}

/** A stored message as the API shows it (without the framework's item). */
export type Message = Omit<AgentMessage, "frameworkItem">;

/** A tool call record as the API shows it (without what only Steps read). */
export type ToolCall = Omit<
  AgentToolCall,
  | "toolSourceReference"
  | "traceContext"
  | "inputContinuation"
  | "inputAnswers"
  | "taskAnswerPending"
  | "frameworkData"
>;

export interface AgentInterrupt {
  interruptId: string;
  kind: "tool_approval" | "question";
  toolCallId: string;
  toolName: string;
  arguments: string;
  createdAt: string;
  deadline: string | null;
  question: string | null;
  choices: string[];
  allowsFreeText: boolean;
}

export interface PendingUserMessage {
  messageId: string;
  message: { text: string; planMode: boolean };
}

/** What a session waits on a person for (the project's addition to the contract): derived
 *  from its pending interrupts, while its status stays `running_tools`. */
export type WaitingFor = "approval" | "answer";

export interface Snapshot {
  sessionId: string;
  flowType: string;
  /** Follow the events after it and none is missed or seen twice. */
  resumeToken: string;
  state: AgentState | null;
  messages: Message[];
  pendingInterrupts: AgentInterrupt[];
  toolCalls: ToolCall[];
  usage: AgentUsage;
  queuedMessageCount: number;
  plan: AgentPlan | null;
  queuedMessages: PendingUserMessage[];
  steeredMessages: PendingUserMessage[];
  waitingFor: WaitingFor | null;
  contextSummary: ContextSummary | null;
  sessionSettings: Record<string, unknown> | null;
}

export interface MessagesPage {
  messages: Message[];
  nextBeforeSequence: number | null;
  deletedBeforeSequence: number | null;
}

export interface SessionSummary {
  sessionId: string;
  flowType: string;
  status: SessionStatus | null;
  turnCount: number;
  activeTurnId: string | null;
  createdAt: string;
  updatedAt: string;
  waitingFor: WaitingFor | null;
}

export interface WorkerInfo {
  workerId: string;
  state: "running" | "stopped";
  beats: number;
  flowTypes: string[];
  leaseSeconds: number;
  host: string;
  pid: number;
  startedAt: string;
  heartbeatAt: string;
}

export interface StepExecution {
  stepExecutionId: string;
  stepType: string;
  status: "scheduled" | "waiting" | "running" | "succeeded" | "failed" | "cancelled";
  attempts: number;
  input: string;
  error: string | null;
  nextSteps: string[];
  scheduledAt: string;
  startedAt: string | null;
  endedAt: string | null;
}

/** One event of a session's stream; `payload` is the event's own JSON object. */
export interface AgentEvent {
  type: string;
  turnId: string | null;
  attempt: number;
  payload: Record<string, unknown>;
  stepExecutionId: string;
  offset: number;
  createdAt: string;
}

// Errors --------------------------------------------------------------------------------------

/** An error the API answered: its HTTP status, its code, and the request field it is about. */
export class DexAgentsError extends Error {
  override name = "DexAgentsError";
  constructor(
    message: string,
    readonly status: number,
    readonly code: string,
    readonly field: string | null = null,
  ) {
    super(message);
  }
}
/** 400: input the API refuses (an ID, a text, settings, a resume token). */
export class InvalidInputError extends DexAgentsError {
  override name = "InvalidInputError";
}
/** 401: a missing or wrong token. */
export class UnauthorizedError extends DexAgentsError {
  override name = "UnauthorizedError";
}
/** 403: a session token on another session's route, or on a route it does not open. */
export class ForbiddenError extends DexAgentsError {
  override name = "ForbiddenError";
}
/** 404: no such session (code `session_not_found`) or route. */
export class NotFoundError extends DexAgentsError {
  override name = "NotFoundError";
}
/** 409: a session with this ID exists. */
export class SessionExistsError extends DexAgentsError {
  override name = "SessionExistsError";
}
/** 413: a text over its limit. */
export class MessageTooLargeError extends DexAgentsError {
  override name = "MessageTooLargeError";
}
/** 422: a body or query that does not parse. */
export class InvalidRequestError extends DexAgentsError {
  override name = "InvalidRequestError";
}
/** 503: the database is unavailable; try again later. */
export class DatabaseUnavailableError extends DexAgentsError {
  override name = "DatabaseUnavailableError";
}

const ERROR_CLASSES: Record<number, typeof DexAgentsError> = {
  400: InvalidInputError,
  401: UnauthorizedError,
  403: ForbiddenError,
  404: NotFoundError,
  409: SessionExistsError,
  413: MessageTooLargeError,
  422: InvalidRequestError,
  503: DatabaseUnavailableError,
};

async function errorOf(response: Response): Promise<DexAgentsError> {
  const text = await response.text();
  let detail: { code?: string; message?: string; field?: string | null } = {};
  try {
    detail = (JSON.parse(text) as { error?: typeof detail }).error ?? {};
  } catch {
    detail = { message: text };
  }
  const Kind = ERROR_CLASSES[response.status] ?? DexAgentsError;
  const message = detail.message || `HTTP ${response.status}`;
  return new Kind(message, response.status, detail.code ?? "http_error", detail.field ?? null);
}

// The client ----------------------------------------------------------------------------------

export interface AgentClientOptions {
  /** The API's root, e.g. `http://127.0.0.1:8000/api`. */
  baseUrl: string;
  token?: string;
  fetch?: typeof fetch;
  /** How long `events` waits before it reconnects after the stream broke. */
  reconnectDelayMs?: number;
}

/** A session token for a browser: it opens only `sessionId`, until `expiresAt`. */
export interface SessionToken {
  token: string;
  sessionId: string;
  /** ISO 8601, UTC. */
  expiresAt: string;
}

export interface StartSessionOptions {
  sessionId?: string;
  sessionSettings?: Record<string, unknown>;
}

export class AgentClient {
  private readonly baseUrl: string;
  private readonly fetcher: typeof fetch;
  private readonly reconnectDelayMs: number;

  constructor(private readonly options: AgentClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, "");
    this.fetcher = options.fetch ?? ((input, init) => fetch(input, init));
    this.reconnectDelayMs = options.reconnectDelayMs ?? 1000;
  }

  async startSession(
    flowType: string,
    message?: string | null,
    options: StartSessionOptions = {},
  ): Promise<{ sessionId: string }> {
    const body = {
      flow_type: flowType,
      message: message ?? null,
      session_id: options.sessionId ?? null,
      session_settings: options.sessionSettings ?? null,
    };
    const answer = (await this.call("POST", "/sessions", body)) as { session_id: string };
    return { sessionId: answer.session_id };
  }

  /** Mints a session token (needs the server's token): the application's backend hands it
   *  to the browser, which may then read this session and its streams, send, steer, cancel,
   *  and answer or resolve its interrupts, and nothing else. It lives `expiresInSeconds`
   *  (default 3600, at most 86400). */
  async mintSessionToken(
    sessionId: string,
    options: { expiresInSeconds?: number } = {},
  ): Promise<SessionToken> {
    const body =
      options.expiresInSeconds === undefined ? undefined : { expires_in: options.expiresInSeconds };
    const minted = (await this.call("POST", `${session(sessionId)}/tokens`, body)) as Json;
    return {
      token: minted.token as string,
      sessionId: minted.session_id as string,
      expiresAt: minted.expires_at as string,
    };
  }

  /** Queues a user message; false when plan mode is asked of a flow without it. */
  sendMessage(sessionId: string, text: string, options: { planMode?: boolean } = {}) {
    return this.rpc("POST", `${session(sessionId)}/messages`, {
      text,
      plan_mode: options.planMode ?? false,
    });
  }

  /** Redirects the active turn with new text or a queued message (give exactly one). */
  steer(sessionId: string, steer: { text: string } | { messageId: string }) {
    const body = "text" in steer ? { text: steer.text } : { message_id: steer.messageId };
    return this.rpc("POST", `${session(sessionId)}/steer`, body);
  }

  cancelQueuedMessage(sessionId: string, messageId: string) {
    const path = `${session(sessionId)}/queued-messages/${encodeURIComponent(messageId)}`;
    return this.rpc("DELETE", path);
  }

  cancelTurn(sessionId: string, turnId?: string) {
    return this.rpc("POST", `${session(sessionId)}/cancel`, { turn_id: turnId ?? null });
  }

  resolveInterrupt(
    sessionId: string,
    interruptId: string,
    approved: boolean,
    rejectionMessage?: string,
  ) {
    const path = `${session(sessionId)}/interrupts/${encodeURIComponent(interruptId)}/resolve`;
    return this.rpc("POST", path, { approved, rejection_message: rejectionMessage ?? null });
  }

  answerQuestion(sessionId: string, interruptId: string, answer: string) {
    const path = `${session(sessionId)}/interrupts/${encodeURIComponent(interruptId)}/answer`;
    return this.rpc("POST", path, { answer });
  }

  executePlan(sessionId: string, revision: number) {
    return this.rpc("POST", `${session(sessionId)}/plan/execute`, { revision });
  }

  updateSettings(sessionId: string, sessionSettings: Record<string, unknown>) {
    return this.rpc("PUT", `${session(sessionId)}/settings`, { session_settings: sessionSettings });
  }

  async getSnapshot(sessionId: string): Promise<Snapshot> {
    return snapshotFromJson((await this.call("GET", `${session(sessionId)}/snapshot`)) as Json);
  }

  async getMessages(
    sessionId: string,
    options: { beforeSequence?: number; limit?: number } = {},
  ): Promise<MessagesPage> {
    const query = new URLSearchParams();
    if (options.beforeSequence !== undefined) {
      query.set("before_sequence", String(options.beforeSequence));
    }
    if (options.limit !== undefined) query.set("limit", String(options.limit));
    const suffix = query.size > 0 ? `?${query}` : "";
    const page = (await this.call("GET", `${session(sessionId)}/messages${suffix}`)) as Json;
    return {
      messages: (page.messages as Json[]).map(messageFromJson),
      nextBeforeSequence: (page.next_before_sequence as number | null) ?? null,
      deletedBeforeSequence: (page.deleted_before_sequence as number | null) ?? null,
    };
  }

  async listSessions(limit?: number): Promise<SessionSummary[]> {
    const suffix = limit === undefined ? "" : `?limit=${limit}`;
    const sessions = (await this.call("GET", `/sessions${suffix}`)) as Json[];
    return sessions.map((s) => ({
      sessionId: s.session_id as string,
      flowType: s.flow_type as string,
      status: (s.status as SessionStatus | null) ?? null,
      turnCount: s.turn_count as number,
      activeTurnId: (s.active_turn_id as string | null) ?? null,
      createdAt: s.created_at as string,
      updatedAt: s.updated_at as string,
      waitingFor: (s.waiting_for as WaitingFor | null | undefined) ?? null,
    }));
  }

  async listWorkers(): Promise<WorkerInfo[]> {
    const workers = (await this.call("GET", "/workers")) as Json[];
    return workers.map((w) => ({
      workerId: w.worker_id as string,
      state: w.state as WorkerInfo["state"],
      beats: w.beats as number,
      flowTypes: [...(w.flow_types as string[])],
      leaseSeconds: w.lease_seconds as number,
      host: w.host as string,
      pid: w.pid as number,
      startedAt: w.started_at as string,
      heartbeatAt: w.heartbeat_at as string,
    }));
  }

  async getStepHistory(sessionId: string): Promise<StepExecution[]> {
    const steps = (await this.call("GET", `${session(sessionId)}/steps`)) as Json[];
    return steps.map((s) => ({
      stepExecutionId: s.step_execution_id as string,
      stepType: s.step_type as string,
      status: s.status as StepExecution["status"],
      attempts: s.attempts as number,
      input: s.input as string,
      error: (s.error as string | null) ?? null,
      nextSteps: [...((s.next_steps as string[] | undefined) ?? [])],
      scheduledAt: s.scheduled_at as string,
      startedAt: (s.started_at as string | null) ?? null,
      endedAt: (s.ended_at as string | null) ?? null,
    }));
  }

  /** The session's events after `after` (a resume token: an event's offset, or a snapshot's
   *  `resumeToken`), live until `signal` aborts or the loop breaks. A broken stream is
   *  reopened with `Last-Event-ID` set to the last event read, so none is missed or seen
   *  twice. API errors (an unknown session, a bad token) are thrown, not retried. */
  async *events(
    sessionId: string,
    options: { after?: string | number; signal?: AbortSignal } = {},
  ): AsyncGenerator<AgentEvent, void, undefined> {
    let last = options.after === undefined ? null : String(options.after);
    const signal = options.signal;
    while (!signal?.aborted) {
      const headers: Record<string, string> = { ...this.headers(), accept: "text/event-stream" };
      if (last !== null) headers["last-event-id"] = last;
      let response: Response;
      try {
        response = await this.fetcher(`${this.baseUrl}${session(sessionId)}/events`, {
          headers,
          signal: signal ?? null,
        });
      } catch {
        if (signal?.aborted) return;
        await sleep(this.reconnectDelayMs, signal);
        continue;
      }
      if (!response.ok) throw await errorOf(response);
      try {
        for await (const message of sseMessages(response)) {
          if (message.data === undefined) continue;
          const event = eventFromJson(JSON.parse(message.data) as Json);
          last = message.id ?? String(event.offset);
          yield event;
        }
      } catch (error) {
        if (signal?.aborted) return;
        if (error instanceof SyntaxError) throw error;
      }
      await sleep(this.reconnectDelayMs, signal);
    }
  }

  private headers(): Record<string, string> {
    return this.options.token ? { authorization: `Bearer ${this.options.token}` } : {};
  }

  private async rpc(method: string, path: string, body?: unknown): Promise<boolean> {
    return ((await this.call(method, path, body)) as { result: boolean }).result;
  }

  private async call(method: string, path: string, body?: unknown): Promise<unknown> {
    const headers: Record<string, string> = { ...this.headers(), accept: "application/json" };
    if (body !== undefined) headers["content-type"] = "application/json";
    const response = await this.fetcher(`${this.baseUrl}${path}`, {
      method,
      headers,
      body: body === undefined ? null : JSON.stringify(body),
    });
    if (!response.ok) throw await errorOf(response);
    return response.json();
  }
}

type Json = Record<string, unknown>;

function session(sessionId: string): string {
  return `/sessions/${encodeURIComponent(sessionId)}`;
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done);
  });
}

// Server-Sent Events ---------------------------------------------------------------------------

interface SseMessage {
  id?: string;
  data?: string;
}

/** The messages of an SSE body: `id:` and `data:` fields, dispatched at each blank line;
 *  comments (`: ping`) and other fields are skipped. */
async function* sseMessages(response: Response): AsyncGenerator<SseMessage> {
  if (response.body === null) return;
  const decoder = new TextDecoder();
  let buffer = "";
  let message: SseMessage = {};
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(chunk, { stream: true });
    let end = buffer.search(/\r\n|\r|\n/);
    while (end >= 0) {
      const line = buffer.slice(0, end);
      buffer = buffer.slice(end + (buffer.startsWith("\r\n", end) ? 2 : 1));
      if (line === "") {
        if (message.data !== undefined || message.id !== undefined) yield message;
        message = {};
      } else if (!line.startsWith(":")) {
        message = withField(message, line);
      }
      end = buffer.search(/\r\n|\r|\n/);
    }
  }
}

function withField(message: SseMessage, line: string): SseMessage {
  const colon = line.indexOf(":");
  const name = colon < 0 ? line : line.slice(0, colon);
  let value = colon < 0 ? "" : line.slice(colon + 1);
  if (value.startsWith(" ")) value = value.slice(1);
  if (name === "data") {
    return { ...message, data: message.data === undefined ? value : `${message.data}\n${value}` };
  }
  if (name === "id") return { ...message, id: value };
  return message;
}

// From the API's JSON --------------------------------------------------------------------------

export function messageFromJson(m: Json): Message {
  return {
    sequence: m.sequence as number,
    turnId: m.turn_id as string,
    role: m.role as MessageRole,
    text: (m.text as string | null) ?? null,
    toolCallId: (m.tool_call_id as string | null) ?? null,
    toolName: (m.tool_name as string | null) ?? null,
    toolArguments: (m.tool_arguments as string | null) ?? null,
    toolOutput: (m.tool_output as string | null) ?? null,
    createdAt: m.created_at as string,
  };
}

export function toolCallFromJson(c: Json): ToolCall {
  return {
    toolCallId: c.tool_call_id as string,
    turnId: c.turn_id as string,
    toolName: c.tool_name as string,
    arguments: c.arguments as string,
    effect: c.effect as ToolEffect,
    requiresApproval: c.requires_approval as boolean,
    status: c.status as ToolCallStatus,
    output: (c.output as string | null) ?? null,
    error: (c.error as string | null) ?? null,
    rejectionMessage: (c.rejection_message as string | null) ?? null,
    deferralOrder: c.deferral_order as number,
    waitUntil: (c.wait_until as string | null) ?? null,
    inputQuestion: (c.input_question as string | null) ?? null,
    inputChoices: [...((c.input_choices as string[] | undefined) ?? [])],
    inputAllowsFreeText: (c.input_allows_free_text as boolean | undefined) ?? true,
    cancellationReason: (c.cancellation_reason as CancellationReason | null) ?? null,
    taskId: (c.task_id as string | null) ?? null,
    taskPollIntervalSeconds: (c.task_poll_interval_seconds as number | null) ?? null,
  };
}

export function interruptFromJson(i: Json): AgentInterrupt {
  return {
    interruptId: i.interrupt_id as string,
    kind: i.kind as AgentInterrupt["kind"],
    toolCallId: i.tool_call_id as string,
    toolName: i.tool_name as string,
    arguments: i.arguments as string,
    createdAt: i.created_at as string,
    deadline: (i.deadline as string | null) ?? null,
    question: (i.question as string | null) ?? null,
    choices: [...((i.choices as string[] | undefined) ?? [])],
    allowsFreeText: (i.allows_free_text as boolean | undefined) ?? true,
  };
}

function stateFromJson(s: Json): AgentState {
  return {
    status: s.status as SessionStatus,
    turnCount: s.turn_count as number,
    activeTurnId: (s.active_turn_id as string | null) ?? null,
    nextMessageSequence: s.next_message_sequence as number,
    lastTurnError: (s.last_turn_error as string | null) ?? null,
    interactionMode: (s.interaction_mode as InteractionMode | undefined) ?? "chat",
    acceptsTurnControl: (s.accepts_turn_control as boolean | undefined) ?? false,
  };
}

function pendingFromJson(p: Json): PendingUserMessage {
  const message = p.message as Json;
  return {
    messageId: p.message_id as string,
    message: {
      text: message.text as string,
      planMode: (message.plan_mode as boolean | undefined) ?? false,
    },
  };
}

/** A snapshot from the API's JSON (`GET /sessions/{id}/snapshot`). */
export function snapshotFromJson(s: Json): Snapshot {
  return {
    sessionId: s.session_id as string,
    flowType: s.flow_type as string,
    resumeToken: String(s.resume_token),
    state: s.state ? stateFromJson(s.state as Json) : null,
    messages: ((s.messages as Json[] | undefined) ?? []).map(messageFromJson),
    pendingInterrupts: ((s.pending_interrupts as Json[] | undefined) ?? []).map(interruptFromJson),
    toolCalls: ((s.tool_calls as Json[] | undefined) ?? []).map(toolCallFromJson),
    usage: usageFromWire((s.usage as WireAgentUsage | undefined) ?? {}),
    queuedMessageCount: (s.queued_message_count as number | undefined) ?? 0,
    plan: s.plan ? planFromWire(s.plan as WireAgentPlan) : null,
    queuedMessages: ((s.queued_messages as Json[] | undefined) ?? []).map(pendingFromJson),
    steeredMessages: ((s.steered_messages as Json[] | undefined) ?? []).map(pendingFromJson),
    waitingFor: (s.waiting_for as WaitingFor | null | undefined) ?? null,
    contextSummary: s.context_summary
      ? contextSummaryFromWire(s.context_summary as WireContextSummary)
      : null,
    sessionSettings: (s.session_settings as Record<string, unknown> | null | undefined) ?? null,
  };
}

export function eventFromJson(e: Json): AgentEvent {
  return {
    type: e.type as string,
    turnId: (e.turn_id as string | null) ?? null,
    attempt: (e.attempt as number | undefined) ?? 1,
    payload: (e.payload as Record<string, unknown> | undefined) ?? {},
    stepExecutionId: (e.step_execution_id as string | undefined) ?? "",
    offset: e.offset as number,
    createdAt: (e.created_at as string | undefined) ?? "",
  };
}
