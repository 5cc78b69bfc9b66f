/**
 * `AgentClient`: the typed client of the session API that `dex-agents serve` answers. Its
 * methods are the contract's RPCs by their names in camelCase (`sendUserMessage`,
 * `getAgentSnapshot`, ...), the Python client's helpers (`runTurn`, `waitForTurn`,
 * `startSessionAndWait`), Workers, Step history, and a session's events as Server-Sent Events
 * with `Last-Event-ID` resume. Results are camelCase, converted field by field from the
 * snake_case JSON, so user data (settings, adapters' event payloads) keeps its keys.
 */

import { type AgentEvent, type AgentEventOf, eventFromJson } from "./events.js";
import type {
  AgentMessage,
  AgentPlan,
  AgentToolCallRecord,
  AgentToolCallRecordStatus,
  AgentUsage,
  CancellationReason,
  ContextSummary,
  InteractionMode,
  MessageRole,
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
  AgentToolCallRecord,
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

export interface AgentSnapshot {
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

export interface AgentMessagesPage {
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

/** Why the Step a failure route handles failed: its last error, whether its last attempt had
 *  passed its point of no return, and the error's type. */
export interface StepRecovery {
  detail: string;
  attemptProgress: "NOT_STARTED" | "NOT_COMPLETED";
  errorType: string;
}

export interface StepExecution {
  stepExecutionId: string;
  stepType: string;
  /** `parked`: a waiting Step that no Worker holds. */
  status: "scheduled" | "waiting" | "parked" | "running" | "succeeded" | "failed" | "cancelled";
  attempts: number;
  input: string;
  error: string | null;
  nextSteps: string[];
  scheduledAt: string;
  startedAt: string | null;
  endedAt: string | null;
  /** On a failure route only: why the Step it handles failed (its input is that Step's). */
  recovery: StepRecovery | null;
}

/** A user message: its text, and whether it asks for a plan (Flows with plan mode only). */
export interface AgentUserMessage {
  text: string;
  planMode?: boolean;
}

/** A queued user message: the turn it begins is the first `turn_started` event after
 *  `eventOffset` whose payload has this `messageId`. */
export interface QueuedUserMessage {
  messageId: string;
  eventOffset: number;
}

export type TurnStatus =
  | "completed"
  | "failed"
  | "steered"
  | "cancelled"
  | "waiting_for_interrupts";

/** What `runTurn`, `waitForTurn` and `startSessionAndWait` return: how one turn ended, or that
 *  it waits on interrupts (approvals, questions) until they are resolved. */
export interface TurnResult {
  sessionId: string;
  turnId: string;
  status: TurnStatus;
  /** The turn's last assistant text (null when the model produced none). */
  text: string | null;
  /** Why a failed turn failed. */
  error: string | null;
  /** The messages the turn stored so far, its user message first. */
  messages: Message[];
  /** The pending interrupts, when the status is `waiting_for_interrupts`. */
  interrupts: AgentInterrupt[];
  /** Usage of the turn's model calls (since `after`, for `waitForTurn`). */
  usage: AgentUsage;
  /** The resume token of the last event read: `waitForTurn(..., { after: eventOffset })`
   *  waits for what the turn does next. */
  eventOffset: number;
}

/** A turn that reached no outcome in time (`runTurn`, `waitForTurn`, `startSessionAndWait`). */
export class TurnTimeoutError extends Error {
  override name = "TimeoutError";
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
  /** How long `followEvents` waits before it reconnects after the stream broke. */
  reconnectDelayMs?: number;
  /** Where the client's warnings go (a session started for a flow type no live Worker
   *  hosts); `console.warn` by default. */
  onWarning?: (warning: string) => void;
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
  /** Warn (through `onWarning`) when no live Worker hosts the flow type; default true. The
   *  result's `warning` says it either way. */
  warnIfNotHosted?: boolean;
}

export interface StartedSession {
  sessionId: string;
  /** Why the session may not start soon: no live Worker hosts its flow type (it waits until
   *  one does). Null when a live Worker hosts it. */
  warning: string | null;
}

export interface WaitOptions {
  /** How long to wait for the turn's outcome before a `TurnTimeoutError`; default 300 s. */
  timeoutMs?: number;
  /** Stops the wait (the promise rejects with the signal's reason). */
  signal?: AbortSignal;
}

const DEFAULT_TURN_TIMEOUT_MS = 300_000;
/** The largest page `listAgentMessages` returns. */
const MESSAGE_PAGE_LIMIT = 200;
const TURN_END_STATUSES: Readonly<Record<string, TurnStatus>> = {
  turn_completed: "completed",
  turn_failed: "failed",
  turn_steered: "steered",
  turn_cancelled: "cancelled",
};

export class AgentClient {
  private readonly baseUrl: string;
  private readonly fetcher: typeof fetch;
  private readonly reconnectDelayMs: number;
  private readonly warn: (warning: string) => void;

  constructor(private readonly options: AgentClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, "");
    this.fetcher = options.fetch ?? ((input, init) => fetch(input, init));
    this.reconnectDelayMs = options.reconnectDelayMs ?? 1000;
    this.warn = options.onWarning ?? ((warning) => console.warn(`dex-agents: ${warning}`));
  }

  // Sessions -----------------------------------------------------------------------------------

  /** Starts a session of a flow type a Worker hosts. Warns (`onWarning`) when no live Worker
   *  hosts it, unless `warnIfNotHosted` is false; `warning` says it either way. */
  async startSession(
    flowType: string,
    initialMessage?: string | null,
    options: StartSessionOptions = {},
  ): Promise<StartedSession> {
    const body = {
      flow_type: flowType,
      message: initialMessage ?? null,
      session_id: options.sessionId ?? null,
      session_settings: options.sessionSettings ?? null,
    };
    const answer = (await this.call("POST", "/sessions", body)) as Json;
    const warning = (answer.warning as string | null | undefined) ?? null;
    if (warning !== null && options.warnIfNotHosted !== false) this.warn(warning);
    return { sessionId: answer.session_id as string, warning };
  }

  /** Starts a session with `initialMessage` and waits for that first turn's outcome (see
   *  `runTurn`); the result carries the new session's ID. */
  async startSessionAndWait(
    flowType: string,
    initialMessage: string,
    options: StartSessionOptions & WaitOptions = {},
  ): Promise<TurnResult> {
    if (!initialMessage.trim()) {
      throw new InvalidInputError(
        "initial_message must not be blank",
        400,
        "invalid_input",
        "message",
      );
    }
    const { sessionId } = await this.startSession(flowType, initialMessage, options);
    // The initial message begins the session's first turn, before any queued message.
    return this.awaitTurn(sessionId, options, {
      after: 0,
      isStart: (event) => event.turnId === "turn-1",
    });
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

  // RPCs ---------------------------------------------------------------------------------------

  /** Queues a user message; the session takes it when no turn runs. False when plan mode is
   *  asked of a flow without it; blank text is refused (`InvalidInputError`). */
  async sendUserMessage(sessionId: string, message: string | AgentUserMessage): Promise<boolean> {
    return (await this.sendUserMessageForTurn(sessionId, message)) !== null;
  }

  /** `sendUserMessage` that says where to find the turn the message begins (see
   *  `QueuedUserMessage`); null where `sendUserMessage` returns false. */
  async sendUserMessageForTurn(
    sessionId: string,
    message: string | AgentUserMessage,
  ): Promise<QueuedUserMessage | null> {
    const { text, planMode } = typeof message === "string" ? { text: message } : message;
    const path = `${session(sessionId)}/messages`;
    const sent = (await this.call("POST", path, { text, plan_mode: planMode ?? false })) as Json;
    if (sent.result !== true) return null;
    if (typeof sent.message_id !== "string" || typeof sent.event_offset !== "number") {
      throw new DexAgentsError(
        "the server did not name the message it queued: upgrade dex-agents serve",
        200,
        "unsupported_server",
      );
    }
    return { messageId: sent.message_id, eventOffset: sent.event_offset };
  }

  /** Sends a user message and waits for the outcome of the turn it begins: completed, failed,
   *  steered, cancelled, or waiting_for_interrupts (with the pending interrupts; resolve them,
   *  then `waitForTurn` with the result's `eventOffset`). A message sent while a turn runs
   *  waits in the queue, and this waits for its own later turn. Rejects with a
   *  `TurnTimeoutError` when the turn reaches no outcome within `timeoutMs`. */
  async runTurn(
    sessionId: string,
    message: string | AgentUserMessage,
    options: WaitOptions = {},
  ): Promise<TurnResult> {
    const queued = await this.sendUserMessageForTurn(sessionId, message);
    if (queued === null) {
      throw new InvalidInputError(
        "this session's Flow does not enable plan mode",
        400,
        "invalid_input",
        "message",
      );
    }
    return this.awaitTurn(sessionId, options, {
      after: queued.eventOffset,
      isStart: (event) => event.payload.messageId === queued.messageId,
    });
  }

  /** Waits for what turn `turnId` does after the event offset `after` (a `TurnResult`'s
   *  `eventOffset`): ends, or raises new interrupts. Usage counts from `after`. */
  waitForTurn(
    sessionId: string,
    turnId: string,
    options: WaitOptions & { after?: number } = {},
  ): Promise<TurnResult> {
    return this.awaitTurn(sessionId, options, {
      after: options.after ?? 0,
      turnId,
      isStart: () => false,
    });
  }

  /** Redirects the active turn with new text or a queued message (give exactly one). False
   *  when the turn does not accept steering or the queued message is gone; with no active
   *  turn, text is queued. */
  steerUserMessage(sessionId: string, steer: { text: string } | { messageId: string }) {
    const body = "text" in steer ? { text: steer.text } : { message_id: steer.messageId };
    return this.rpc("POST", `${session(sessionId)}/steer`, body);
  }

  /** Deletes a queued message; false when it is no longer queued. */
  deleteQueuedMessage(sessionId: string, messageId: string) {
    const path = `${session(sessionId)}/queued-messages/${encodeURIComponent(messageId)}`;
    return this.rpc("DELETE", path);
  }

  /** Stops the active turn (or `turnId`, when it is the active one). */
  cancelTurn(sessionId: string, turnId?: string) {
    return this.rpc("POST", `${session(sessionId)}/cancel`, { turn_id: turnId ?? null });
  }

  /** Approves or rejects a pending approval (or declines a question with `approved` false). */
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

  /** Replaces the settings the next turn starts with; `{}` clears them. */
  updateSessionSettings(sessionId: string, sessionSettings: Record<string, unknown>) {
    return this.rpc("PUT", `${session(sessionId)}/settings`, { session_settings: sessionSettings });
  }

  /** The snapshot, with the resume token of the last event it reflects. */
  async getAgentSnapshot(sessionId: string): Promise<AgentSnapshot> {
    return snapshotFromJson((await this.call("GET", `${session(sessionId)}/snapshot`)) as Json);
  }

  /** Oldest first; page backwards with `nextBeforeSequence`. `limit` is clamped to 1..200. */
  async listAgentMessages(
    sessionId: string,
    options: { beforeSequence?: number; limit?: number } = {},
  ): Promise<AgentMessagesPage> {
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

  // History and events -------------------------------------------------------------------------

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
      recovery: recoveryFromJson(s.recovery as Json | null | undefined),
    }));
  }

  /** The session's events after `after` (a resume token: an event's offset, or a snapshot's
   *  `resumeToken`), live until `signal` aborts or the loop breaks. A broken stream is
   *  reopened with `Last-Event-ID` set to the last event read, so none is missed or seen
   *  twice. API errors (an unknown session, a bad token) are thrown, not retried. Narrow an
   *  event on `type` to read its typed payload. */
  async *followEvents(
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

  // Waiting for a turn -------------------------------------------------------------------------

  /** Follows the events after `after` until the turn (`turnId`, or the one whose
   *  `turn_started` event `isStart` picks) ends or waits on interrupts still pending. */
  private async awaitTurn(
    sessionId: string,
    options: WaitOptions,
    start: {
      after: number;
      isStart: (event: AgentEventOf<"turn_started">) => boolean;
      turnId?: string;
    },
  ): Promise<TurnResult> {
    const timeoutMs = options.timeoutMs ?? DEFAULT_TURN_TIMEOUT_MS;
    const stop = new AbortController();
    const timer = setTimeout(() => stop.abort(), timeoutMs);
    const cancel = (): void => stop.abort();
    options.signal?.addEventListener("abort", cancel);
    const watch = new TurnWatch(start.turnId ?? null, start.after);
    try {
      let pendingUntil: number | null = null;
      const events = this.followEvents(sessionId, { after: start.after, signal: stop.signal });
      for await (const event of events) {
        const outcome = watch.read(event, start.isStart);
        if (outcome !== null) return await this.turnResult(sessionId, watch, outcome);
        if (event.type === "interrupt_raised" && event.turnId === watch.turnId) {
          // Still pending at the snapshot's resume token: the turn waits on them once the
          // events up to that token are read (none of them can end it).
          const snapshot = await this.getAgentSnapshot(sessionId);
          const waiting =
            snapshot.state?.activeTurnId === watch.turnId && snapshot.pendingInterrupts.length > 0;
          pendingUntil = waiting ? Number(snapshot.resumeToken) : null;
        }
        if (pendingUntil !== null && watch.offset >= pendingUntil) {
          return await this.turnResult(sessionId, watch, { status: "waiting_for_interrupts" });
        }
      }
    } finally {
      clearTimeout(timer);
      options.signal?.removeEventListener("abort", cancel);
      stop.abort();
    }
    options.signal?.throwIfAborted();
    const which = watch.turnId ? `turn ${watch.turnId}` : "the turn of the message sent";
    throw new TurnTimeoutError(
      `${which} of session ${sessionId} did not reach an outcome within ${timeoutMs / 1000} s`,
    );
  }

  private async turnResult(
    sessionId: string,
    watch: TurnWatch,
    outcome: { status: TurnStatus; error?: string | null },
  ): Promise<TurnResult> {
    const turnId = watch.turnId as string;
    const messages = await this.turnMessages(sessionId, turnId, watch.firstSequence);
    let interrupts: AgentInterrupt[] = [];
    if (outcome.status === "waiting_for_interrupts") {
      const snapshot = await this.getAgentSnapshot(sessionId);
      if (snapshot.state?.activeTurnId === turnId) interrupts = snapshot.pendingInterrupts;
    }
    const answer = [...messages].reverse().find((m) => m.role === "assistant" && m.text);
    return {
      sessionId,
      turnId,
      status: outcome.status,
      text: answer?.text ?? null,
      error: outcome.error ?? null,
      messages,
      interrupts,
      usage: watch.usage,
      eventOffset: watch.offset,
    };
  }

  /** The turn's stored messages from `firstSequence` on, paged backwards as needed. */
  private async turnMessages(
    sessionId: string,
    turnId: string,
    firstSequence: number,
  ): Promise<Message[]> {
    const found: Message[] = [];
    let before: number | undefined;
    for (;;) {
      const page = await this.listAgentMessages(sessionId, {
        limit: MESSAGE_PAGE_LIMIT,
        ...(before === undefined ? {} : { beforeSequence: before }),
      });
      found.unshift(...page.messages.filter((m) => m.sequence >= firstSequence));
      const oldest = page.messages[0]?.sequence;
      if (page.nextBeforeSequence === null || oldest === undefined || oldest <= firstSequence) {
        break;
      }
      before = page.nextBeforeSequence;
    }
    return found.filter((m) => m.turnId === turnId);
  }

  // Plumbing -----------------------------------------------------------------------------------

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

/** What `awaitTurn` has read of a turn's events so far. */
class TurnWatch {
  firstSequence = 1;
  usage: AgentUsage = {
    modelCalls: 0,
    inputTokens: 0,
    outputTokens: 0,
    cachedInputTokens: 0,
    reasoningTokens: 0,
  };

  constructor(
    public turnId: string | null,
    public offset: number,
  ) {}

  /** Takes one event; the turn's outcome when the event ends it, else null. */
  read(
    event: AgentEvent,
    isStart: (event: AgentEventOf<"turn_started">) => boolean,
  ): { status: TurnStatus; error: string | null } | null {
    this.offset = event.offset;
    if (this.turnId === null) {
      if (event.type === "turn_started" && isStart(event)) {
        this.turnId = event.turnId;
        this.firstSequence = event.payload.sequence || 1;
      }
      return null;
    }
    if (event.turnId !== this.turnId) return null;
    const status = TURN_END_STATUSES[event.type];
    if (status !== undefined) {
      return { status, error: event.type === "turn_failed" ? event.payload.error : null };
    }
    if (event.type === "usage_recorded") {
      const r = event.payload.recorded;
      this.usage = {
        modelCalls: this.usage.modelCalls + r.modelCalls,
        inputTokens: this.usage.inputTokens + r.inputTokens,
        outputTokens: this.usage.outputTokens + r.outputTokens,
        cachedInputTokens: this.usage.cachedInputTokens + r.cachedInputTokens,
        reasoningTokens: this.usage.reasoningTokens + r.reasoningTokens,
      };
    }
    return null;
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
    status: c.status as AgentToolCallRecordStatus,
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

function recoveryFromJson(r: Json | null | undefined): StepRecovery | null {
  if (r === null || r === undefined) return null;
  return {
    detail: r.detail as string,
    attemptProgress: r.attempt_progress as StepRecovery["attemptProgress"],
    errorType: r.error_type as string,
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
export function snapshotFromJson(s: Json): AgentSnapshot {
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
