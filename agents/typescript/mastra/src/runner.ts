/**
 * MastraRunner: a Mastra `Agent` in Step mode, wrapped unchanged.
 *
 * Each `runModelStep` makes exactly one model call (`agent.stream`), with the Agent's own tools
 * given back to it as client tools, which Mastra declares to the model without their `execute`;
 * the call returns the model's tool calls instead of running them. The turn's messages so far
 * (the plain-JSON AI SDK `ModelMessage[]` after the stored history) are the run state; each
 * tool call then runs in its own Step through the Mastra tool's own `execute`, and the next
 * model step sends the recorded results to the model as one tool message. Mastra's memory,
 * threads, approvals and suspend/resume are never used: the session stores the messages and
 * runs the approvals.
 */
import type { Agent, ToolsInput } from "@mastra/core/agent";
import type { RequestContext } from "@mastra/core/request-context";
import type {
  AgentFrameworkRunner,
  AgentTurnContext,
  AgentTurnOutcome,
  DeferredToolCall,
  DeferredToolExecution,
  DeferredToolOutcome,
  FrameworkMessage,
} from "./dex.js";
import { withToolExecution } from "./dex.js";
import {
  argumentsText,
  buildUserMessage,
  loadRunState,
  type ModelMessage,
  openCalls,
  parseItem,
  replayHistory,
  type ToolCallPart,
  toFrameworkMessages,
} from "./messages.js";
import { runModelCall, type StreamOptions } from "./model-step.js";
import { type DeclaringTool, declaredPolicy } from "./policy.js";
import { resultsMessage } from "./results.js";
import { runToolCall } from "./tool-step.js";

export interface MastraRunnerOptions extends StreamOptions {
  /** The Mastra Agent, as it is: its model, instructions and tools serve every call. */
  agent: Agent;
  /**
   * Keep the Agent's own retries of a failed model request (its `maxRetries`, Mastra's default
   * 0), inside one RunModel attempt. Off by default (`modelSettings.maxRetries: 0`, and an Agent
   * that sets retries is refused): RunModel's attempts, recorded in the Step history, are the
   * model call's only retries.
   */
  frameworkRetries?: boolean;
  /** How often a long model or tool call heartbeats, in milliseconds (default 20 s). */
  heartbeatIntervalMs?: number;
}

const DEFAULT_HEARTBEAT_MS = 20_000;

export class MastraRunner implements AgentFrameworkRunner<ModelMessage> {
  readonly #agent: Agent;
  readonly #options: StreamOptions;
  readonly #frameworkRetries: boolean;
  readonly #heartbeatMs: number;

  constructor(options: MastraRunnerOptions) {
    const { agent, frameworkRetries, heartbeatIntervalMs, ...stream } = options;
    this.#agent = agent;
    this.#options = stream;
    this.#frameworkRetries = frameworkRetries === true;
    this.#heartbeatMs = heartbeatIntervalMs ?? DEFAULT_HEARTBEAT_MS;
    if (!this.#frameworkRetries && ownRetries(agent) > 0) {
      throw new Error(
        `the Agent ${JSON.stringify(agent.name)} sets maxRetries (or a fallback model does), which would retry model calls inside one ` +
          "RunModel attempt: remove it (RunModel retries), or pass frameworkRetries: true",
      );
    }
  }

  /** The Agent this runner serves. */
  get agent(): Agent {
    return this.#agent;
  }

  parseItem(frameworkItem: string): ModelMessage {
    return parseItem(frameworkItem);
  }

  buildUserMessage(text: string): ModelMessage {
    return buildUserMessage(text);
  }

  async runModelStep(turn: AgentTurnContext<ModelMessage>): Promise<AgentTurnOutcome> {
    const tools = await this.#tools();
    const turnMessages = this.#withResults(turn, true);
    const call = await withHeartbeat(turn.heartbeat, this.#heartbeatMs, () =>
      runModelCall({
        agent: this.#agent,
        messages: [...replayHistory(turn.messages, turn.items), ...turnMessages],
        tools,
        options: this.#options,
        frameworkRetries: this.#frameworkRetries,
        signal: turn.cancellationSignal,
        events: turn.events,
      }),
    );
    const messages = [...turnMessages, ...call.newMessages];
    const calls = call.newMessages.length > 0 ? openCalls(messages) : [];
    const outcome = { usage: call.usage, modelCallMetadata: call.metadata };
    if (calls.length > 0) {
      return {
        kind: "tool_calls_requested",
        frameworkRunState: JSON.stringify(messages),
        toolCalls: calls.map((part) => this.#deferredCall(turn, tools, part)),
        ...outcome,
      };
    }
    if (call.newMessages.at(-1)?.role === "tool") {
      // Mastra answered every call itself (a provider-run tool): the model reads the results next.
      return { kind: "turn_continued", frameworkRunState: JSON.stringify(messages), ...outcome };
    }
    return { kind: "turn_completed", newMessages: toFrameworkMessages(messages), ...outcome };
  }

  async executeDeferredToolCall(call: DeferredToolExecution<ModelMessage>): Promise<DeferredToolOutcome> {
    const tools = await this.#tools();
    // serveRunners sets the tool execution too; this serves a runner driven on its own.
    return await withToolExecution(call, () =>
      withHeartbeat(call.heartbeat, this.#heartbeatMs, () =>
        runToolCall({ tools, agentId: this.#agent.id, requestContext: this.#requestContext() }, call),
      ),
    );
  }

  /** The turn's messages so far, with a result for every call its last model response made. */
  async buildUnfinishedTurnMessages(turn: AgentTurnContext<ModelMessage>): Promise<FrameworkMessage[]> {
    return toFrameworkMessages(this.#withResults(turn, false));
  }

  /** The run state's messages, plus the tool message answering its last response's calls. */
  #withResults(turn: AgentTurnContext<ModelMessage>, strict: boolean): ModelMessage[] {
    const messages = loadRunState(turn.frameworkRunState);
    const results = resultsMessage(messages, turn.toolCalls, strict);
    return results === null ? messages : [...messages, results];
  }

  /**
   * The Agent's own tools. Sub-agents and workflows configured on the Agent (`agents`,
   * `workflows`) would run inside the model call, where Mastra's own tools for them override any
   * client tool: the runner refuses them, and takes them as tools instead (one tool Step each).
   */
  async #tools(): Promise<ToolsInput> {
    const requestContext = this.#requestContext();
    const scope = requestContext === undefined ? {} : { requestContext };
    const [agents, workflows] = await Promise.all([this.#agent.listAgents(scope), this.#agent.listWorkflows(scope)]);
    const nested = [
      ...Object.keys(agents).map((n) => `agent ${n}`),
      ...Object.keys(workflows).map((n) => `workflow ${n}`),
    ];
    if (nested.length > 0) {
      throw new Error(
        `the Agent ${JSON.stringify(this.#agent.name)} configures ${nested.join(", ")}, which Mastra would run ` +
          "inside the model call: give each as a tool instead (a createTool whose execute calls it)",
      );
    }
    return (await this.#agent.listTools(scope)) as ToolsInput;
  }

  #requestContext(): RequestContext | undefined {
    return this.#options.requestContext;
  }

  #deferredCall(turn: AgentTurnContext<ModelMessage>, tools: ToolsInput, part: ToolCallPart): DeferredToolCall {
    const tool = Object.hasOwn(tools, part.toolName) ? (tools[part.toolName] as DeclaringTool) : undefined;
    const declared = declaredPolicy(tool);
    return {
      toolCallId: part.toolCallId,
      toolName: part.toolName,
      arguments: argumentsText(part.input),
      policy: turn.resolveToolPolicy(part.toolName, declared.effect, declared.requiresApproval),
    };
  }
}

/** The most retries the Agent's own settings give a model call (`maxRetries`, or a fallback's). */
function ownRetries(agent: Agent): number {
  const fallbacks: unknown = agent.model;
  const entries = Array.isArray(fallbacks) ? (fallbacks as { maxRetries?: unknown }[]) : [];
  const counts = entries.map((entry) => (typeof entry.maxRetries === "number" ? entry.maxRetries : 0));
  return Math.max(agent.maxRetries ?? 0, ...counts);
}

/** Runs `work`, calling `heartbeat` every `intervalMs` until it settles. */
async function withHeartbeat<T>(heartbeat: () => void, intervalMs: number, work: () => Promise<T>): Promise<T> {
  const timer = setInterval(heartbeat, intervalMs);
  timer.unref();
  try {
    return await work();
  } finally {
    clearInterval(timer);
  }
}
