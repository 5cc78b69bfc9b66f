/**
 * One model call: `agent.stream` with the Agent's tools given back to it as client tools, which
 * Mastra declares to the model without their `execute`. A client tool overrides the Agent's own
 * tool of the same name, so the call ends after one model response with the model's tool calls
 * (`finishReason: 'tool-calls'`) and runs none of them. `maxSteps: 1` only keeps a tool Mastra
 * does run itself (a provider's) from starting a second model call inside the Step.
 */
import type { Agent, AgentExecutionOptionsBase, ToolsInput } from "@mastra/core/agent";
import type { AgentUsage, EventWriter, ModelCallMetadata } from "./dex.js";
import type { ModelMessage } from "./messages.js";

/** The `agent.stream` options a runner passes through to every model call. */
export type StreamOptions = Pick<
  AgentExecutionOptionsBase<unknown>,
  "instructions" | "modelSettings" | "providerOptions" | "toolChoice" | "activeTools" | "requestContext"
>;

export interface ModelCallRequest {
  agent: Agent;
  messages: ModelMessage[];
  tools: ToolsInput;
  options: StreamOptions;
  frameworkRetries: boolean;
  signal: AbortSignal;
  events: EventWriter;
}

export interface ModelCall {
  /** The messages this call added: its assistant message, and any results Mastra sent itself. */
  newMessages: ModelMessage[];
  usage: AgentUsage;
  metadata: ModelCallMetadata;
}

interface Usage {
  inputTokens?: number | undefined;
  outputTokens?: number | undefined;
  reasoningTokens?: number | undefined;
  cachedInputTokens?: number | undefined;
}

/** Runs one model call, writing its text and reasoning deltas as they stream. */
export async function runModelCall(request: ModelCallRequest): Promise<ModelCall> {
  const { options } = request;
  const modelSettings = request.frameworkRetries ? options.modelSettings : { ...options.modelSettings, maxRetries: 0 };
  const result = await request.agent.stream(request.messages as unknown as Parameters<Agent["stream"]>[0], {
    ...options,
    ...(modelSettings === undefined ? {} : { modelSettings }),
    clientTools: clientTools(request.tools),
    maxSteps: 1,
    abortSignal: request.signal,
  });
  for await (const chunk of result.fullStream) {
    const payload = (chunk as { payload?: Record<string, unknown> }).payload ?? {};
    if (chunk.type === "text-delta" && typeof payload.text === "string" && payload.text !== "") {
      request.events.write("text_delta", { text: payload.text });
    } else if (chunk.type === "reasoning-delta" && typeof payload.text === "string" && payload.text !== "") {
      request.events.write("reasoning_delta", { text: payload.text });
    } else if (chunk.type === "error") {
      throw payload.error ?? new Error("the Mastra model call failed");
    } else if (chunk.type === "abort") {
      throw request.signal.aborted ? abortError(request.signal) : new Error("the Mastra model call was aborted");
    } else if (chunk.type === "tripwire") {
      // One of the Agent's processors stopped the call (a guardrail): the attempt fails with its reason.
      throw new Error(`a Mastra processor stopped the model call: ${String(payload.reason ?? "no reason given")}`);
    }
  }
  if (request.signal.aborted) {
    throw abortError(request.signal);
  }
  const [response, usage, finishReason, steps] = await Promise.all([
    result.response,
    result.usage,
    result.finishReason,
    result.steps,
  ]);
  const produced = (steps.at(-1)?.content.length ?? 0) > 0;
  const model = (response as { modelMetadata?: { modelId?: string; modelProvider?: string } }).modelMetadata;
  return {
    newMessages: produced ? fresh(response.messages as unknown as ModelMessage[]) : [],
    usage: agentUsage(usage as Usage),
    metadata: {
      requestModel: model?.modelId ?? null,
      responseModel: response.modelId ?? null,
      providerName: model?.modelProvider ?? null,
      responseId: response.id ?? null,
      finishReasons: finishReason === undefined ? [] : [finishReason],
    },
  };
}

/**
 * The Agent's tools as client tools: declared to the model, never run nor approved by Mastra
 * (Mastra drops a client tool's `execute` itself; approval is the session's, not Mastra's).
 */
export function clientTools(tools: ToolsInput): ToolsInput {
  const declared: ToolsInput = {};
  for (const [name, tool] of Object.entries(tools)) {
    const {
      execute: _execute,
      requireApproval: _requireApproval,
      needsApprovalFn: _fn,
      ...rest
    } = tool as Record<string, unknown>;
    declared[name] = rest as ToolsInput[string];
  }
  return declared;
}

/**
 * The messages the call added. Mastra's `response.messages` also repeats the input's last
 * assistant and tool messages (it folds results into their calls, and the next answer joins
 * that message), so the new ones start at the last assistant message; Mastra's empty tool
 * message (no tool ran) is dropped.
 */
function fresh(messages: readonly ModelMessage[]): ModelMessage[] {
  const start = messages.findLastIndex((message) => message.role === "assistant");
  return messages
    .slice(Math.max(start, 0))
    .filter((message) => !(message.role === "tool" && Array.isArray(message.content) && message.content.length === 0));
}

function agentUsage(usage: Usage): AgentUsage {
  return {
    modelCalls: 1,
    inputTokens: usage.inputTokens ?? 0,
    outputTokens: usage.outputTokens ?? 0,
    cachedInputTokens: usage.cachedInputTokens ?? 0,
    reasoningTokens: usage.reasoningTokens ?? 0,
  };
}

function abortError(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException("The model call was aborted.", "AbortError");
}
