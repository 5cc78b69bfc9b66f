/**
 * VercelAiRunner: the AI SDK's `streamText` in Step mode.
 *
 * Each `runModelStep` makes exactly one model call, with the tools given to the model without
 * their `execute`, so the SDK returns the model's tool calls instead of running them. The turn's
 * messages so far (the plain-JSON `ModelMessage[]` after the stored history) are the run state;
 * each tool call then runs in its own Step through the tool's own `execute`, and the next model
 * step sends the recorded results to the model as one tool message.
 */
import type { LanguageModel, ModelMessage, ToolSet } from "ai";
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
  deferrableCalls,
  dumpRunState,
  loadRunState,
  parseItem,
  replayHistory,
  toFrameworkMessages,
} from "./messages.js";
import { type GenerateOptions, type Instructions, runModelCall } from "./model-step.js";
import { declaredPolicy } from "./policy.js";
import { resultsMessage } from "./results.js";
import { runToolCall } from "./tool-step.js";

export interface VercelAiRunnerOptions extends GenerateOptions {
  /** The model of every call, e.g. `openai("gpt-5")` or a gateway model ID. */
  model: LanguageModel;
  /** The system instructions of every call (the AI SDK's `instructions`). */
  instructions?: Instructions;
  /** The same as `instructions`, by the SDK's older name; `instructions` wins. */
  system?: Instructions;
  /** The tools, as for `streamText`. Each call runs its tool's `execute` in a tool Step. */
  tools?: ToolSet;
  /** Per-tool context, as `streamText`'s `toolsContext`: handed to each tool's `execute`. */
  toolsContext?: Record<string, unknown>;
  /**
   * Let the SDK retry a failed model request by itself inside one RunModel attempt. Off by
   * default (`maxRetries: 0`): RunModel's attempts, recorded in the Step history, are the
   * model call's only retries.
   */
  frameworkRetries?: boolean;
  /** How often a long model or tool call heartbeats, in milliseconds (default 20 s). */
  heartbeatIntervalMs?: number;
}

const DEFAULT_HEARTBEAT_MS = 20_000;

export class VercelAiRunner implements AgentFrameworkRunner<ModelMessage> {
  readonly #options: VercelAiRunnerOptions;
  readonly #tools: ToolSet;
  /** The options passed through to every `streamText` call as they are. */
  readonly #generate: GenerateOptions;

  constructor(options: VercelAiRunnerOptions) {
    const { model, instructions, system, tools, toolsContext, frameworkRetries, heartbeatIntervalMs, ...generate } =
      options;
    this.#options = options;
    this.#tools = tools ?? {};
    this.#generate = generate;
  }

  /** The tools this runner offers the model, by name. */
  get tools(): Readonly<ToolSet> {
    return this.#tools;
  }

  parseItem(frameworkItem: string): ModelMessage {
    return parseItem(frameworkItem);
  }

  buildUserMessage(text: string): ModelMessage {
    return buildUserMessage(text);
  }

  async runModelStep(turn: AgentTurnContext<ModelMessage>): Promise<AgentTurnOutcome> {
    const turnMessages = await this.#withResults(turn, true);
    const options = this.#options;
    const call = await withHeartbeat(turn.heartbeat, options.heartbeatIntervalMs, () =>
      runModelCall({
        model: options.model,
        instructions: options.instructions ?? options.system,
        messages: [...replayHistory(turn.messages, turn.items), ...turnMessages],
        tools: this.#tools,
        toolsContext: options.toolsContext,
        generate: this.#generate,
        maxRetries: options.frameworkRetries === true ? undefined : 0,
        signal: turn.cancellationSignal,
        events: turn.events,
      }),
    );
    const messages = [...turnMessages, ...call.responseMessages];
    const calls = deferrableCalls(messages[messages.length - 1]);
    if (calls.length > 0) {
      return {
        kind: "tool_calls_requested",
        frameworkRunState: dumpRunState(messages),
        toolCalls: calls.map((part) => this.#deferredCall(turn, part)),
        usage: call.usage,
        modelCallMetadata: call.metadata,
      };
    }
    return {
      kind: "turn_completed",
      newMessages: toFrameworkMessages(messages),
      usage: call.usage,
      modelCallMetadata: call.metadata,
    };
  }

  async executeDeferredToolCall(call: DeferredToolExecution<ModelMessage>): Promise<DeferredToolOutcome> {
    // serveRunners sets the tool execution too; this serves a runner driven on its own.
    return await withToolExecution(call, () =>
      withHeartbeat(call.heartbeat, this.#options.heartbeatIntervalMs, () =>
        runToolCall({ tools: this.#tools, toolsContext: this.#options.toolsContext }, call),
      ),
    );
  }

  /** The turn's messages so far, with a result for every call its last model response made. */
  async buildUnfinishedTurnMessages(turn: AgentTurnContext<ModelMessage>): Promise<FrameworkMessage[]> {
    return toFrameworkMessages(await this.#withResults(turn, false));
  }

  /** The run state's messages, plus the tool message answering its last response's calls. */
  async #withResults(turn: AgentTurnContext<ModelMessage>, strict: boolean): Promise<ModelMessage[]> {
    const messages = loadRunState(turn.frameworkRunState);
    const results = await resultsMessage(messages, turn.toolCalls, this.#tools, strict);
    return results === null ? messages : [...messages, results];
  }

  #deferredCall(
    turn: AgentTurnContext<ModelMessage>,
    part: ReturnType<typeof deferrableCalls>[number],
  ): DeferredToolCall {
    const tool = Object.hasOwn(this.#tools, part.toolName) ? this.#tools[part.toolName] : undefined;
    const declared = declaredPolicy(tool);
    return {
      toolCallId: part.toolCallId,
      toolName: part.toolName,
      arguments: argumentsText(part.input),
      policy: turn.resolveToolPolicy(part.toolName, declared.effect, declared.requiresApproval),
    };
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
