/**
 * `serveRunners`: TypeScript runners served to the Python engine over HTTP.
 *
 * One POST per runner method (`<mount>/<method>`), answered with newline-delimited JSON as
 * the call runs: `accepted` first (or `need_history` instead, when the history cache lacks
 * what the body leaves out), then events, heartbeats and checkpoints, then `result` or
 * `error` last. A Node `(req, res)` handler and a web-standard `fetch` handler share it all.
 * With the optional peer `@opentelemetry/api` installed, each accepted call runs in its own span
 * under the Worker's Step span its `traceparent` header names (src/tracing.ts).
 */

import { createHash, timingSafeEqual } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import {
  type CachedMessage,
  completeHistory,
  HistoryCache,
  HistoryError,
  type HistoryPlan,
  planHistory,
} from "./history.js";
import { parsedBodyText } from "./node-body.js";
import {
  type AgentFrameworkRunner,
  type AgentTurnContext,
  type DeferredToolExecution,
  type EventWriter,
  resolveToolPolicy,
  ToolExecutionError,
  withToolExecution,
} from "./runner.js";
import * as texts from "./texts.js";
import {
  type CallSpan,
  loadTracing,
  type RunnerTracing,
  type TracedCall,
  type TraceHeaders,
} from "./tracing.js";
import {
  contextSummaryFromWire,
  contextSummaryResultToWire,
  deadlineFromWire,
  frameworkMessageToWire,
  PROTOCOL_VERSION,
  planFromWire,
  questionAnswerFromWire,
  runnerToolCallFromWire,
  toolCallFromWire,
  toolOutcomeToWire,
  toolPoliciesFromWire,
  turnOutcomeToWire,
  type WireCapabilities,
  type WireContextSummaryRequest,
  type WireDescribe,
  type WireLine,
  type WireSessionOptions,
  type WireToolExecution,
  type WireToolTaskCancellation,
  type WireToolTaskPoll,
  type WireTurn,
} from "./wire.js";

export interface ServeRunnersOptions {
  /** The runner token (`DEX_AGENTS_RUNNER_TOKEN` on the engine's side): every request must
   *  send `Authorization: Bearer <token>`. Without it, requests are not authenticated. */
  token?: string;
  /** How many sessions' parsed histories are kept (least recently used go first). */
  historyCacheSessions?: number;
  /** How long a call may send nothing before a heartbeat line is sent (the engine treats
   *  60 s of silence as a runner gone). */
  heartbeatIntervalMs?: number;
  /** Session options per flow type, sent to the Worker in `describe`: they apply where the
   *  Worker's own options (`remote_flow`'s, `--remote-config`) leave them unset. */
  sessionOptions?: Record<string, SessionOptions>;
  /** Whether calls are traced when `@opentelemetry/api` is installed (each in a
   *  `dex.runner <method>` span under the Worker's Step span); false never imports it. */
  tracing?: boolean;
}

/** The session options a TypeScript app sets for a flow it serves (Python's
 *  `AgentSessionOptions.interrupt_deadline` and `max_durable_wait`, in milliseconds). */
export interface SessionOptions {
  /** How long an approval or question waits before it is answered for the user (rejected,
   *  or the question's deadline passed); none waits without a deadline. */
  interruptDeadlineMs?: number;
  /** The longest a `durable_wait` call may wait. */
  maxDurableWaitMs?: number;
}

/** A Node request handler, with a web-standard `fetch` handler beside it. */
export interface RunnersHandler {
  (req: IncomingMessage, res: ServerResponse): void;
  fetch(request: Request): Promise<Response>;
}

export const DEFAULT_HISTORY_CACHE_SESSIONS = 1000;
export const DEFAULT_HEARTBEAT_INTERVAL_MS = 10_000;
const NDJSON = "application/x-ndjson";
// biome-ignore lint/suspicious/noExplicitAny: runners of any item type are served together.
type AnyRunner = AgentFrameworkRunner<any>;

/** Serves `runners` by flow type. Mount the handler at any path: the method is the last
 *  path segment of the request. */
export function serveRunners(
  runners: Record<string, AnyRunner>,
  options: ServeRunnersOptions = {},
): RunnersHandler {
  const server = new RunnerServer(runners, options);
  const handler = ((req: IncomingMessage, res: ServerResponse) => {
    handleNode(server, req, res).catch((error: unknown) => {
      if (!res.headersSent) res.writeHead(500, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { kind: "runner_error", message: String(error) } }));
    });
  }) as RunnersHandler;
  handler.fetch = (request: Request) => handleFetch(server, request);
  return handler;
}

// What a request is answered with, whichever server carries it -------------------------------

/** A line writer: resolves once the line is handed to the connection. */
type LineSink = (line: WireLine) => Promise<void>;

type Answer =
  | { kind: "json"; status: number; body: unknown; headers?: Record<string, string> }
  | {
      kind: "stream";
      /** Whether the runner's code runs (an accepted call, traced), not `need_history`. */
      accepted?: boolean;
      run(write: LineSink, signal: AbortSignal, span?: CallSpan): Promise<void>;
    };

interface RequestHead {
  method: string;
  path: string;
  authorization: string | undefined;
  trace: TraceHeaders;
}

function errorAnswer(status: number, kind: string, message: string): Answer {
  const headers: Record<string, string> =
    status === 401 ? { "www-authenticate": 'Bearer realm="dex-agents runners"' } : {};
  return { kind: "json", status, body: { error: { kind, message } }, headers };
}

class RunnerServer {
  readonly cache: HistoryCache;
  readonly heartbeatIntervalMs: number;
  private readonly tokenDigest: Buffer | null;
  private readonly sessionOptions: Record<string, WireSessionOptions>;
  /** Loaded once, as the handler is made; null when `@opentelemetry/api` does not resolve. */
  private readonly tracing: Promise<RunnerTracing | null>;
  /** What `tracing` resolved to, once it has: a call then starts without waiting a tick. */
  private loadedTracing: RunnerTracing | null | undefined;

  constructor(
    readonly runners: Record<string, AnyRunner>,
    options: ServeRunnersOptions,
  ) {
    this.cache = new HistoryCache(options.historyCacheSessions ?? DEFAULT_HISTORY_CACHE_SESSIONS);
    this.heartbeatIntervalMs = options.heartbeatIntervalMs ?? DEFAULT_HEARTBEAT_INTERVAL_MS;
    if (options.token === "") throw new RangeError("the runner token must not be empty");
    this.tokenDigest = options.token === undefined ? null : digest(options.token);
    this.sessionOptions = sessionOptionsToWire(runners, options.sessionOptions ?? {});
    this.tracing = options.tracing === false ? Promise.resolve(null) : loadTracing();
    void this.tracing.then((loaded) => {
      this.loadedTracing = loaded;
    });
  }

  /** The refusal of a request the head alone settles, or null to read its body. */
  check(head: RequestHead): Answer | null {
    if (!this.authorized(head.authorization)) {
      return errorAnswer(401, "unauthorized", texts.UNAUTHORIZED);
    }
    const method = lastSegment(head.path);
    if (method === "describe") {
      return head.method === "GET"
        ? { kind: "json", status: 200, body: this.describe() }
        : errorAnswer(405, "method_not_allowed", texts.wrongHttpMethod(head.method, "GET"));
    }
    if (!Object.hasOwn(METHODS, method)) {
      return errorAnswer(404, "unknown_method", texts.unknownMethod(method));
    }
    if (head.method !== "POST") {
      return errorAnswer(405, "method_not_allowed", texts.wrongHttpMethod(head.method, "POST"));
    }
    return null;
  }

  /** The answer to a POST whose head passed `check`. */
  answer(head: RequestHead, bodyText: string): Answer {
    const method = lastSegment(head.path);
    let body: { flow_type?: unknown };
    try {
      body = JSON.parse(bodyText) as { flow_type?: unknown };
    } catch (error) {
      return errorAnswer(400, "bad_request", texts.badBody(String(error)));
    }
    if (typeof body !== "object" || body === null || typeof body.flow_type !== "string") {
      return errorAnswer(400, "bad_request", texts.badBody("flow_type must be a string"));
    }
    const runner = Object.hasOwn(this.runners, body.flow_type)
      ? this.runners[body.flow_type]
      : undefined;
    if (runner === undefined) {
      const served = Object.keys(this.runners);
      return errorAnswer(404, "unknown_flow_type", texts.unknownFlowType(body.flow_type, served));
    }
    const spec = METHODS[method as MethodName];
    if (spec.implemented && !spec.implemented(runner)) {
      return errorAnswer(
        404,
        "unsupported_method",
        texts.unsupportedMethod(method, body.flow_type),
      );
    }
    try {
      // Before a call is accepted only the body is read: whatever fails here is the body's.
      const answer = spec.answer(this, runner, body);
      return answer.kind === "stream" && answer.accepted
        ? this.traced(answer, { method, headers: head.trace, body })
        : answer;
    } catch (error) {
      const problem = error instanceof HistoryError ? error.message : String(error);
      return errorAnswer(400, "bad_request", texts.badBody(problem));
    }
  }

  /** The answer run inside its call's span once tracing has loaded (as is without it). */
  private traced(answer: Answer & { kind: "stream" }, call: TracedCall): Answer {
    return {
      ...answer,
      run: (write, signal) => {
        const run = (tracing: RunnerTracing | null): Promise<void> =>
          tracing === null
            ? answer.run(write, signal)
            : tracing.inCall(call, (span) => answer.run(write, signal, span));
        const loaded = this.loadedTracing;
        return loaded === undefined ? this.tracing.then(run) : run(loaded);
      },
    };
  }

  describe(): WireDescribe {
    const flows: WireDescribe["flows"] = {};
    for (const [flowType, runner] of Object.entries(this.runners)) {
      const sessionOptions = this.sessionOptions[flowType];
      flows[flowType] = {
        capabilities: capabilities(runner),
        ...(sessionOptions === undefined ? {} : { session_options: sessionOptions }),
      };
    }
    return { protocol_version: PROTOCOL_VERSION, flows };
  }

  private authorized(authorization: string | undefined): boolean {
    if (this.tokenDigest === null) return true;
    const match = /^Bearer (.+)$/i.exec(authorization ?? "");
    return match?.[1] !== undefined && timingSafeEqual(digest(match[1]), this.tokenDigest);
  }
}

function digest(text: string): Buffer {
  return createHash("sha256").update(text).digest();
}

function lastSegment(path: string): string {
  const pathname = path.split("?", 1)[0] ?? "";
  const segments = pathname.split("/").filter((s) => s !== "");
  return decodeURIComponent(segments[segments.length - 1] ?? "");
}

/** The session options as `describe` sends them; a RangeError for a flow type not served or
 *  a duration that is not a positive number of milliseconds. */
function sessionOptionsToWire(
  runners: Record<string, AnyRunner>,
  options: Record<string, SessionOptions>,
): Record<string, WireSessionOptions> {
  const wire: Record<string, WireSessionOptions> = {};
  for (const [flowType, set] of Object.entries(options)) {
    if (!Object.hasOwn(runners, flowType)) {
      throw new RangeError(`sessionOptions names ${JSON.stringify(flowType)}, a flow not served`);
    }
    const seconds = (name: keyof SessionOptions): number | undefined => {
      const ms = set[name];
      if (ms === undefined) return undefined;
      if (typeof ms !== "number" || !Number.isFinite(ms) || ms <= 0) {
        throw new RangeError(`sessionOptions.${flowType}.${name} must be a positive number of ms`);
      }
      return ms / 1000;
    };
    const deadline = seconds("interruptDeadlineMs");
    const maxWait = seconds("maxDurableWaitMs");
    wire[flowType] = {
      ...(deadline === undefined ? {} : { interrupt_deadline_seconds: deadline }),
      ...(maxWait === undefined ? {} : { max_durable_wait_seconds: maxWait }),
    };
  }
  return wire;
}

function capabilities(runner: AnyRunner): WireCapabilities {
  return {
    unfinished_turn_messages: typeof runner.buildUnfinishedTurnMessages === "function",
    tool_tasks: typeof runner.pollToolTask === "function",
    tool_task_cancellation: typeof runner.cancelToolTask === "function",
    context_compaction: typeof runner.summarizeContext === "function",
    plan_mode: runner.supportsPlanMode === true,
    tool_steps_read_turn: runner.toolStepsReadTurn === true,
  };
}

// The methods ----------------------------------------------------------------------------------

type MethodName =
  | "run_model_step"
  | "execute_deferred_tool_call"
  | "build_unfinished_turn_messages"
  | "poll_tool_task"
  | "cancel_tool_task"
  | "summarize_context";

interface MethodSpec {
  implemented?: (runner: AnyRunner) => boolean;
  answer(server: RunnerServer, runner: AnyRunner, body: unknown): Answer;
}

/** What a call does once accepted: its result (the `result` line's value). */
type Invoke = (lines: CallLines, signal: AbortSignal) => Promise<unknown>;

const METHODS: Record<MethodName, MethodSpec> = {
  run_model_step: {
    answer: (server, runner, body) => {
      const wire = body as WireTurn;
      return withTurn(server, runner, wire, async (turn) =>
        turnOutcomeToWire(await runner.runModelStep(turn)),
      );
    },
  },
  build_unfinished_turn_messages: {
    implemented: (runner) => typeof runner.buildUnfinishedTurnMessages === "function",
    answer: (server, runner, body) =>
      withTurn(server, runner, body as WireTurn, async (turn) => {
        const messages = (await runner.buildUnfinishedTurnMessages?.(turn)) ?? [];
        return { messages: messages.map(frameworkMessageToWire) };
      }),
  },
  execute_deferred_tool_call: {
    answer: (server, runner, body) => answerToolCall(server, runner, body as WireToolExecution),
  },
  poll_tool_task: {
    implemented: (runner) => typeof runner.pollToolTask === "function",
    answer: (_server, runner, body) => {
      const wire = body as WireToolTaskPoll;
      return accepted(async (lines, signal) => {
        const outcome = await runner.pollToolTask?.({
          flowType: wire.flow_type,
          flowId: wire.flow_id,
          toolCall: toolCallFromWire(wire.tool_call),
          idempotencyKey: wire.idempotency_key,
          attempt: wire.attempt,
          inputAnswers: (wire.input_answers ?? []).map(questionAnswerFromWire),
          events: lines.events,
          heartbeat: lines.heartbeat,
          cancellationSignal: signal,
          deadline: deadlineFromWire(wire.deadline),
          pendingAnswer: wire.pending_answer ? questionAnswerFromWire(wire.pending_answer) : null,
        });
        if (outcome === undefined) throw new TypeError("pollToolTask returned nothing");
        return toolOutcomeToWire(outcome);
      });
    },
  },
  cancel_tool_task: {
    implemented: (runner) => typeof runner.cancelToolTask === "function",
    answer: (_server, runner, body) => {
      const wire = body as WireToolTaskCancellation;
      return accepted(async (lines, signal) => {
        await runner.cancelToolTask?.({
          flowType: wire.flow_type,
          flowId: wire.flow_id,
          toolCall: toolCallFromWire(wire.tool_call),
          idempotencyKey: wire.idempotency_key,
          attempt: wire.attempt,
          heartbeat: lines.heartbeat,
          cancellationSignal: signal,
          deadline: deadlineFromWire(wire.deadline),
        });
        return {};
      });
    },
  },
  summarize_context: {
    implemented: (runner) => typeof runner.summarizeContext === "function",
    answer: (server, runner, body) =>
      answerSummary(server, runner, body as WireContextSummaryRequest),
  },
};

function sessionKey(flowType: string, flowId: string): string {
  return `${flowType}\u0000${flowId}`;
}

/** A call that needs a turn's history: `need_history`, or accepted with the turn built. */
function withTurn(
  server: RunnerServer,
  runner: AnyRunner,
  wire: WireTurn,
  use: (turn: AgentTurnContext<unknown>) => Promise<unknown>,
): Answer {
  const plan = planHistory(
    server.cache.get(sessionKey(wire.flow_type, wire.flow_id)),
    wire.history,
    wire.messages,
  );
  if (plan.kind === "need_history") return needHistory(plan);
  return accepted(async (lines, signal) => {
    const history = completeHistory(
      server.cache,
      sessionKey(wire.flow_type, wire.flow_id),
      plan,
      runner,
    );
    return use(turnFromWire(wire, history, lines, signal));
  });
}

function answerToolCall(server: RunnerServer, runner: AnyRunner, wire: WireToolExecution): Answer {
  const turnWire = wire.turn ?? null;
  const key = sessionKey(wire.flow_type, wire.flow_id);
  const plan: HistoryPlan | null =
    turnWire === null
      ? null
      : planHistory(server.cache.get(key), turnWire.history, turnWire.messages);
  if (plan?.kind === "need_history") return needHistory(plan);
  return accepted(async (lines, signal) => {
    const turn =
      turnWire !== null && plan !== null
        ? turnFromWire(
            { ...turnWire, deadline: wire.deadline ?? null },
            completeHistory(server.cache, key, plan, runner),
            lines,
            signal,
          )
        : null;
    const execution: DeferredToolExecution<unknown> = {
      flowType: wire.flow_type,
      flowId: wire.flow_id,
      turnId: wire.turn_id,
      stepExecutionId: wire.step_execution_id,
      toolCall: runnerToolCallFromWire(wire.tool_call),
      idempotencyKey: wire.idempotency_key,
      attempt: wire.attempt,
      events: lines.events,
      heartbeat: lines.heartbeat,
      cancellationSignal: signal,
      deadline: deadlineFromWire(wire.deadline),
      saveHeartbeatCheckpoint: lines.checkpoint,
      heartbeatCheckpoint: wire.heartbeat_checkpoint ?? null,
      inputAnswers: (wire.input_answers ?? []).map(questionAnswerFromWire),
      supportsToolTasks: wire.supports_tool_tasks ?? false,
      turn,
    };
    const outcome = await withToolExecution(execution, () =>
      runner.executeDeferredToolCall(execution),
    );
    return toolOutcomeToWire(outcome);
  });
}

function answerSummary(
  server: RunnerServer,
  runner: AnyRunner,
  wire: WireContextSummaryRequest,
): Answer {
  const key = sessionKey(wire.flow_type, wire.flow_id);
  const plan = planHistory(server.cache.get(key), wire.history, wire.messages);
  if (plan.kind === "need_history") return needHistory(plan);
  return accepted(async (lines, signal) => {
    const history = completeHistory(server.cache, key, plan, runner);
    const result = await runner.summarizeContext?.({
      flowType: wire.flow_type,
      flowId: wire.flow_id,
      turnId: wire.turn_id,
      attempt: wire.attempt,
      stepExecutionId: wire.step_execution_id ?? "",
      previousSummary: wire.previous_summary ? contextSummaryFromWire(wire.previous_summary) : null,
      history: { firstSequence: wire.history.first_sequence, lastSequence: plan.last },
      messages: history.map((h) => h.message),
      items: history.map((h) => h.item),
      throughSequence: wire.through_sequence,
      events: lines.events,
      heartbeat: lines.heartbeat,
      cancellationSignal: signal,
      deadline: deadlineFromWire(wire.deadline),
      inputTokenBudget: wire.input_token_budget,
      sessionSettings: wire.session_settings ?? {},
    });
    if (result === undefined) throw new TypeError("summarizeContext returned nothing");
    return contextSummaryResultToWire(result);
  });
}

function turnFromWire(
  wire: WireTurn,
  history: readonly CachedMessage[],
  lines: CallLines,
  signal: AbortSignal,
): AgentTurnContext<unknown> {
  const toolPolicies = toolPoliciesFromWire(wire.tool_policies ?? {});
  const defaultToolEffect = wire.default_tool_effect;
  return {
    flowType: wire.flow_type,
    flowId: wire.flow_id,
    turnId: wire.turn_id,
    attempt: wire.attempt,
    stepExecutionId: wire.step_execution_id,
    history: {
      firstSequence: wire.history.first_sequence,
      lastSequence: wire.history.last_sequence,
    },
    messages: history.map((h) => h.message),
    items: history.map((h) => h.item),
    frameworkRunState: wire.framework_run_state ?? null,
    toolCalls: (wire.tool_calls ?? []).map(runnerToolCallFromWire),
    events: lines.events,
    heartbeat: lines.heartbeat,
    cancellationSignal: signal,
    deadline: deadlineFromWire(wire.deadline),
    toolPolicies,
    defaultToolEffect,
    enabledBuiltInTools: [...(wire.enabled_built_in_tools ?? [])],
    sessionSettings: wire.session_settings ?? {},
    interactionMode: wire.interaction_mode ?? "chat",
    plan: wire.plan ? planFromWire(wire.plan) : null,
    contextSummary: wire.context_summary ? contextSummaryFromWire(wire.context_summary) : null,
    resolveToolPolicy: (name, effect, requiresApproval) =>
      resolveToolPolicy(name, toolPolicies, defaultToolEffect, effect, requiresApproval),
  };
}

function needHistory(plan: { afterSequence: number }): Answer {
  return {
    kind: "stream",
    run: (write) => write({ need_history: { after_sequence: plan.afterSequence } }),
  };
}

// A call's lines -------------------------------------------------------------------------------

/** What a running call writes besides its result. */
interface CallLines {
  events: EventWriter;
  heartbeat(): void;
  checkpoint(checkpoint: string): Promise<void>;
}

/** An accepted call: `accepted`, the runner's lines with a heartbeat whenever it is silent
 *  for the interval, then `result` or `error`. */
function accepted(invoke: Invoke): Answer {
  return {
    kind: "stream",
    accepted: true,
    run: async (write, signal, span) => {
      await write({ accepted: true });
      const lines: CallLines = {
        events: { write: (type, payload) => void write({ event: { type, payload } }) },
        heartbeat: () => void write({ heartbeat: true }),
        checkpoint: (checkpoint) => write({ checkpoint }),
      };
      try {
        await write({ result: await invoke(lines, signal) });
      } catch (error) {
        span?.failed(error);
        await write(errorLine(error));
      }
    },
  };
}

/** A ToolExecutionError, also from another copy of this package (two installed versions). */
function isToolExecutionError(error: unknown): error is Error {
  return (
    error instanceof ToolExecutionError ||
    (error instanceof Error &&
      (error.name === "ToolExecutionError" || error.constructor.name === "ToolExecutionError"))
  );
}

function errorLine(error: unknown): WireLine {
  if (isToolExecutionError(error)) {
    return { error: { kind: "tool_execution_error", message: error.message } };
  }
  const message = error instanceof Error ? error.message : String(error);
  const stack = error instanceof Error ? (error.stack ?? "") : "";
  return { error: { kind: "runner_error", message, stack, ...httpFailure(error) } };
}

const RETRY_HEADERS = ["retry-after", "retry-after-ms"];

/** The HTTP status and retry headers of a provider's error (the AI SDK's `APICallError` and
 *  the providers' SDKs carry `statusCode` or `status`, and `responseHeaders` or `headers`),
 *  looked for in the error, its causes and a retry wrapper's last error. */
function httpFailure(error: unknown): {
  status_code?: number;
  response_headers?: Record<string, string>;
} {
  const seen = new Set<unknown>();
  let current: unknown = error;
  while (typeof current === "object" && current !== null && !seen.has(current)) {
    seen.add(current);
    const candidate = current as Record<string, unknown>;
    const status = candidate.statusCode ?? candidate.status;
    if (typeof status === "number" && Number.isInteger(status) && status >= 100 && status < 600) {
      return {
        status_code: status,
        response_headers: retryHeaders(candidate.responseHeaders ?? candidate.headers),
      };
    }
    current = candidate.lastError ?? candidate.cause;
  }
  return {};
}

function retryHeaders(headers: unknown): Record<string, string> {
  const entries =
    headers instanceof Headers
      ? [...headers]
      : typeof headers === "object" && headers !== null
        ? Object.entries(headers)
        : [];
  const found: Record<string, string> = {};
  for (const [key, value] of entries) {
    const name = key.toLowerCase();
    if (RETRY_HEADERS.includes(name)) {
      found[name] = String(value);
    }
  }
  return found;
}

/** Wraps a raw line writer: one line at a time, in order, nothing after close, and a
 *  heartbeat line after each silence of `intervalMs`. */
function lineWriter(
  raw: (text: string) => Promise<void>,
  intervalMs: number,
): { write: LineSink; stop(): void } {
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const arm = (): void => {
    if (timer !== undefined) clearTimeout(timer);
    if (!stopped) timer = setTimeout(() => void write({ heartbeat: true }), intervalMs);
  };
  const write: LineSink = async (line) => {
    if (stopped) return;
    arm();
    await raw(`${JSON.stringify(line)}\n`);
  };
  return {
    write,
    stop: () => {
      stopped = true;
      if (timer !== undefined) clearTimeout(timer);
    },
  };
}

// Node's http ----------------------------------------------------------------------------------

async function handleNode(
  server: RunnerServer,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const head: RequestHead = {
    method: req.method ?? "GET",
    path: req.url ?? "/",
    authorization: req.headers.authorization,
    trace: traceHeaders((name) => req.headers[name]),
  };
  const controller = new AbortController();
  res.on("close", () => {
    if (!res.writableFinished) controller.abort(new Error("the engine closed the connection"));
  });
  const answer = server.check(head) ?? server.answer(head, await bodyOf(req));
  if (answer.kind === "json") {
    res.writeHead(answer.status, { "content-type": "application/json", ...answer.headers });
    res.end(JSON.stringify(answer.body));
    return;
  }
  res.writeHead(200, { "content-type": NDJSON, "cache-control": "no-cache" });
  res.flushHeaders();
  const raw = (text: string): Promise<void> =>
    new Promise((resolve) => {
      if (res.destroyed || res.writableEnded) resolve();
      else res.write(text, () => resolve());
    });
  const lines = lineWriter(raw, server.heartbeatIntervalMs);
  controller.signal.addEventListener("abort", lines.stop);
  try {
    await answer.run(lines.write, controller.signal);
  } finally {
    lines.stop();
    if (!res.destroyed) res.end();
  }
}

/** The request's body: read from the stream, or, when a framework's body parser read it first
 *  (Express's `express.json()`, Fastify's JSON parser), what that parser left on `req.body`. */
function bodyOf(req: IncomingMessage & { body?: unknown }): Promise<string> | string {
  const parsed = req.body;
  if (!req.readableEnded) {
    return readBody(req);
  }
  if (parsed === undefined || parsed === null) {
    throw new Error(
      "the request's body was read before serveRunners got it: mount serveRunners before body " +
        "parsers, or leave the parsed body on req.body",
    );
  }
  return parsedBodyText(parsed);
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
    req.on("close", () => {
      if (!req.complete) reject(new Error("the connection closed before the body was read"));
    });
  });
}

/** The W3C trace context headers a request carries (the first of a repeated one). */
function traceHeaders(get: (name: string) => string | string[] | undefined): TraceHeaders {
  const found: TraceHeaders = {};
  for (const name of ["traceparent", "tracestate"] as const) {
    const value = get(name);
    const first = Array.isArray(value) ? value[0] : value;
    if (first !== undefined) found[name] = first;
  }
  return found;
}

// The web-standard fetch handler ---------------------------------------------------------------

async function handleFetch(server: RunnerServer, request: Request): Promise<Response> {
  const url = new URL(request.url);
  const head: RequestHead = {
    method: request.method,
    path: url.pathname,
    authorization: request.headers.get("authorization") ?? undefined,
    trace: traceHeaders((name) => request.headers.get(name) ?? undefined),
  };
  const answer = server.check(head) ?? server.answer(head, await request.text());
  if (answer.kind === "json") {
    return new Response(JSON.stringify(answer.body), {
      status: answer.status,
      headers: { "content-type": "application/json", ...answer.headers },
    });
  }
  const controller = new AbortController();
  const abort = (): void => controller.abort(new Error("the engine closed the connection"));
  request.signal.addEventListener("abort", abort);
  const encoder = new TextEncoder();
  let lines: ReturnType<typeof lineWriter> | undefined;
  const body = new ReadableStream<Uint8Array>({
    start(stream) {
      lines = lineWriter(
        async (text) => stream.enqueue(encoder.encode(text)),
        server.heartbeatIntervalMs,
      );
      const current = lines;
      controller.signal.addEventListener("abort", current.stop);
      answer
        .run(current.write, controller.signal)
        .catch(() => undefined)
        .finally(() => {
          current.stop();
          request.signal.removeEventListener("abort", abort);
          try {
            stream.close();
          } catch {
            // Already cancelled by the reader.
          }
        });
    },
    cancel() {
      abort();
    },
  });
  return new Response(body, {
    status: 200,
    headers: { "content-type": NDJSON, "cache-control": "no-cache" },
  });
}
