/**
 * OpenAIAgentsRunner: the OpenAI Agents SDK for JavaScript in Step mode.
 *
 * Each `runModelStep` runs the gated copy of the agent graph (gating.ts), streamed: the SDK
 * makes one model call and stops with an interruption per function tool call, before any tool
 * runs (a handoff continues with the next agent's model call inside the same Step). The SDK's
 * `RunState` is the framework run state (run-state.ts). Each call then runs in its own tool
 * Step through the application's tool; the next model Step restores the state, approves every
 * call with a final record (the gated tool answers with the recorded result) and rejects the
 * rejected ones, and the SDK sends the results with its next model call.
 */
import {
  type AgentInputItem,
  InputGuardrailTripwireTriggered,
  MaxTurnsExceededError,
  OutputGuardrailTripwireTriggered,
  type RunConfig,
  RunContext,
  Runner,
  RunState,
  type RunToolApprovalItem,
  type StreamedRunResult,
} from "@openai/agents";
import type {
  AgentFrameworkRunner,
  AgentToolCall,
  AgentTurnContext,
  AgentTurnOutcome,
  AgentUsage,
  DeferredToolCall,
  DeferredToolExecution,
  DeferredToolOutcome,
  FrameworkMessage,
  ModelCallMetadata,
} from "./dex.js";
import { isFinal, modelVisibleResult, withToolExecution } from "./dex.js";
import { AgentGraph, type AnyAgent, withRecordedResults } from "./gating.js";
import { buildUserMessage, parseItem, toFrameworkMessages, unansweredCalls, unfinishedResult } from "./items.js";
import { declaredPolicy } from "./policy.js";
import { dumpRunState, inputLength, loadRunState } from "./run-state.js";
import { StreamForwarder } from "./stream.js";
import { noFinalRecordText, unsupportedInterruptionText } from "./texts.js";
import { runToolCall } from "./tool-step.js";
import { markOf, NO_USAGE, type UsageMark, usageSince } from "./usage.js";

/** What a Step tells the context factory about itself. */
export interface RunContextRequest {
  flowType: string;
  flowId: string;
  turnId: string;
  /** The session's settings (a model Step's); empty in a tool Step. */
  sessionSettings: Readonly<Record<string, unknown>>;
}

export interface OpenAIAgentsRunnerOptions<TContext = unknown> {
  /**
   * The run context (`RunContext.context`) of each Step, model and tool Steps alike; built
   * again in every Step and never stored.
   */
  context?: (request: RunContextRequest) => TContext | Promise<TContext>;
  /** The SDK's run config of every model Step (its `model` replaces every agent's own). */
  runConfig?: Partial<RunConfig>;
  /** The most model calls one session turn may make (default: one million, in effect none). */
  maxTurns?: number;
  /**
   * Let the SDK and its OpenAI client retry a failed model request inside one RunModel
   * attempt. Off by default: each attempt sends one request, and RunModel's attempts,
   * recorded in the Step history, are the only retries.
   */
  frameworkRetries?: boolean;
  /** How often a long model or tool call heartbeats, in milliseconds (default 20 s). */
  heartbeatIntervalMs?: number;
}

const DEFAULT_MAX_TURNS = 1_000_000;
const DEFAULT_HEARTBEAT_MS = 20_000;

// biome-ignore lint/suspicious/noExplicitAny: a run of any context and agent.
type AnyStreamedResult = StreamedRunResult<any, AnyAgent>;

/** A restored run, ready to resume: the recorded answers of its gated tools and its usage so far. */
interface Resumed {
  input: AgentInputItem[] | RunState<unknown, AnyAgent>;
  answers: Map<string, string>;
  mark: UsageMark;
}

export class OpenAIAgentsRunner<TContext = unknown> implements AgentFrameworkRunner<AgentInputItem> {
  readonly #graph: AgentGraph;
  readonly #runner: Runner;
  readonly #options: OpenAIAgentsRunnerOptions<TContext>;

  /** Create the runner once the agents are complete: it copies the graph now. */
  constructor(agent: AnyAgent, options: OpenAIAgentsRunnerOptions<TContext> = {}) {
    const { model, modelProvider, ...config } = options.runConfig ?? {};
    const singleRequest = options.frameworkRetries !== true;
    this.#graph = new AgentGraph(agent, { singleRequest, model, modelProvider });
    // With single requests each gated agent holds its (wrapped) model, which the run config's
    // model would replace.
    const runConfig = singleRequest ? config : (options.runConfig ?? {});
    this.#runner = new Runner({ ...runConfig, ...(modelProvider === undefined ? {} : { modelProvider }) });
    this.#options = options;
  }

  /** The application's agent the runner was made with. */
  get agent(): AnyAgent {
    return this.#graph.root;
  }

  parseItem(frameworkItem: string): AgentInputItem {
    return parseItem(frameworkItem);
  }

  buildUserMessage(text: string): AgentInputItem {
    return buildUserMessage(text);
  }

  async runModelStep(turn: AgentTurnContext<AgentInputItem>): Promise<AgentTurnOutcome> {
    const history = replayHistory(turn.items);
    const context = await this.#context(turn, turn.sessionSettings);
    const resumed = await this.#resume(turn, history, context);
    const forwarder = new StreamForwarder(turn.events);
    let result: AnyStreamedResult;
    try {
      result = await withHeartbeat(turn.heartbeat, this.#options.heartbeatIntervalMs, () =>
        withRecordedResults(resumed.answers, () =>
          this.#stream(resumed.input, context, turn.cancellationSignal, forwarder),
        ),
      );
    } catch (error) {
      const turnError = turnErrorOf(error);
      if (turnError === null) {
        throw error;
      }
      return { kind: "turn_completed", turnError, usage: { ...NO_USAGE_REPORT } };
    }
    const usage = usageSince(result.state.usage, resumed.mark);
    const metadata = this.#metadata(result, forwarder);
    if (result.interruptions.length > 0) {
      const unsupported = result.interruptions.find((item) => item.rawItem.type !== "function_call");
      if (unsupported !== undefined) {
        const turnError = unsupportedInterruptionText(unsupported.agent.name, unsupported.rawItem.type ?? "unknown");
        return { kind: "turn_completed", turnError, usage, modelCallMetadata: metadata };
      }
      return {
        kind: "tool_calls_requested",
        frameworkRunState: dumpRunState(result.state, history),
        toolCalls: await Promise.all(result.interruptions.map((item) => this.#deferredCall(turn, item, context))),
        usage,
        modelCallMetadata: metadata,
      };
    }
    return {
      kind: "turn_completed",
      newMessages: toFrameworkMessages(result.history.slice(inputLength(result.state))),
      usage,
      modelCallMetadata: metadata,
    };
  }

  async executeDeferredToolCall(call: DeferredToolExecution<AgentInputItem>): Promise<DeferredToolOutcome> {
    const context = await this.#context(call, {});
    // serveRunners sets the tool execution too; this serves a runner driven on its own.
    return await withToolExecution(call, () =>
      withHeartbeat(call.heartbeat, this.#options.heartbeatIntervalMs, () => runToolCall(this.#graph, context, call)),
    );
  }

  /** The turn's items so far, with a result for every function call of its last model response. */
  async buildUnfinishedTurnMessages(turn: AgentTurnContext<AgentInputItem>): Promise<FrameworkMessage[]> {
    if (turn.frameworkRunState === null || turn.frameworkRunState === "") {
      return [];
    }
    const history = replayHistory(turn.items);
    const context = await this.#context(turn, turn.sessionSettings);
    const state = await this.#restore(turn.frameworkRunState, history, context);
    // The SDK's history leaves out the calls that wait for approval: they follow it.
    const items = state.history.slice(inputLength(state));
    const listed = new Set(items.map((item) => (item as { callId?: unknown }).callId));
    for (const pending of state.getInterruptions()) {
      const call = pending.rawItem as AgentInputItem & { callId?: unknown };
      if (!listed.has(call.callId)) {
        items.push(call);
      }
    }
    const results = unansweredCalls(items).map((call) => unfinishedResult(call, turn.toolCalls));
    return toFrameworkMessages([...items, ...results]);
  }

  /** The run's input: the history (a new turn), or the restored state with every call decided. */
  async #resume(
    turn: AgentTurnContext<AgentInputItem>,
    history: AgentInputItem[],
    context: TContext | undefined,
  ): Promise<Resumed> {
    if (turn.frameworkRunState === null || turn.frameworkRunState === "") {
      return { input: history, answers: new Map(), mark: NO_USAGE };
    }
    const state = await this.#restore(turn.frameworkRunState, history, context);
    const answers = decide(state, turn.toolCalls);
    return { input: state, answers, mark: markOf(state.usage) };
  }

  async #restore(
    frameworkRunState: string,
    history: AgentInputItem[],
    context: TContext | undefined,
  ): Promise<RunState<unknown, AnyAgent>> {
    const text = loadRunState(frameworkRunState, history);
    return (await RunState.fromStringWithContext(this.#graph.gatedRoot, text, new RunContext(context))) as RunState<
      unknown,
      AnyAgent
    >;
  }

  async #stream(
    input: AgentInputItem[] | RunState<unknown, AnyAgent>,
    context: TContext | undefined,
    signal: AbortSignal,
    forwarder: StreamForwarder,
  ): Promise<AnyStreamedResult> {
    try {
      const result = await this.#runner.run(this.#graph.gatedRoot, input as AgentInputItem[], {
        stream: true,
        signal,
        context,
        maxTurns: this.#options.maxTurns ?? DEFAULT_MAX_TURNS,
      });
      for await (const event of result) {
        forwarder.forward(event);
      }
      await result.completed;
      if (result.error !== null && result.error !== undefined) {
        throw result.error;
      }
      throwIfAborted(signal);
      return result as AnyStreamedResult;
    } catch (error) {
      // The client's abort error says less than the reason the turn was cancelled for.
      throwIfAborted(signal);
      throw error;
    }
  }

  async #deferredCall(
    turn: AgentTurnContext<AgentInputItem>,
    item: RunToolApprovalItem,
    context: TContext | undefined,
  ): Promise<DeferredToolCall> {
    const raw = item.rawItem as { callId: string; name: string; arguments: string };
    const tool = this.#graph.functionTool(raw.name, item.agent.name);
    const declared = await declaredPolicy(tool, raw.arguments, raw.callId, context);
    return {
      toolCallId: raw.callId,
      toolName: raw.name,
      arguments: raw.arguments,
      toolSourceReference: item.agent.name,
      policy: turn.resolveToolPolicy(raw.name, declared.effect, declared.requiresApproval),
    };
  }

  #metadata(result: AnyStreamedResult, forwarder: StreamForwarder): ModelCallMetadata {
    const configured = this.#options.runConfig?.model ?? result.lastAgent?.model ?? this.#graph.root.model;
    const requestModel = typeof configured === "string" && configured !== "" ? configured : forwarder.responseModel;
    const last = result.rawResponses[result.rawResponses.length - 1];
    return {
      requestModel,
      responseModel: forwarder.responseModel,
      providerName: null,
      responseId: forwarder.responseId ?? last?.responseId ?? null,
    };
  }

  async #context(
    step: { flowType: string; flowId: string; turnId: string },
    sessionSettings: Readonly<Record<string, unknown>>,
  ): Promise<TContext | undefined> {
    const factory = this.#options.context;
    if (factory === undefined) {
      return undefined;
    }
    return await factory({ flowType: step.flowType, flowId: step.flowId, turnId: step.turnId, sessionSettings });
  }
}

const NO_USAGE_REPORT: AgentUsage = {
  modelCalls: 0,
  inputTokens: 0,
  outputTokens: 0,
  cachedInputTokens: 0,
  reasoningTokens: 0,
};

/** The stored history as the run's input: copies, so the SDK never changes the shared items. */
function replayHistory(items: readonly AgentInputItem[]): AgentInputItem[] {
  return items.map((item) => structuredClone(item));
}

/**
 * Approves every pending call with a final record (its recorded text is the gated tool's
 * answer) and rejects the rejected ones with their message. Every call must have one: the
 * engine calls a model Step only once all of them are final.
 */
function decide(state: RunState<unknown, AnyAgent>, records: readonly AgentToolCall[]): Map<string, string> {
  const byId = new Map(records.map((record) => [record.toolCallId, record]));
  const answers = new Map<string, string>();
  for (const item of state.getInterruptions()) {
    const callId = (item.rawItem as { callId?: string }).callId ?? "";
    const record = byId.get(callId);
    if (record === undefined || !isFinal(record)) {
      throw new Error(noFinalRecordText(callId));
    }
    const text = modelVisibleResult(record);
    if (record.status === "rejected") {
      state.reject(item, { message: text });
    } else {
      answers.set(callId, text);
      state.approve(item);
    }
  }
  return answers;
}

/** The turn error of a run that ended without an answer the session can store, else null. */
function turnErrorOf(error: unknown): string | null {
  if (error instanceof InputGuardrailTripwireTriggered) {
    return `input guardrail ${JSON.stringify(error.result.guardrail.name)} tripped`;
  }
  if (error instanceof OutputGuardrailTripwireTriggered) {
    return `output guardrail ${JSON.stringify(error.result.guardrail.name)} tripped`;
  }
  if (error instanceof MaxTurnsExceededError) {
    return error.message;
  }
  return null;
}

function throwIfAborted(signal: AbortSignal): void {
  if (signal.aborted) {
    throw signal.reason ?? new DOMException("The model call was aborted.", "AbortError");
  }
}

/** Runs `work`, calling `heartbeat` every `intervalMs` until it settles. */
async function withHeartbeat<T>(
  heartbeat: () => void,
  intervalMs: number | undefined,
  work: () => Promise<T>,
): Promise<T> {
  const timer = setInterval(heartbeat, intervalMs ?? DEFAULT_HEARTBEAT_MS);
  timer.unref();
  try {
    return await work();
  } finally {
    clearInterval(timer);
  }
}
