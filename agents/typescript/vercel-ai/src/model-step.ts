/**
 * One model call: `streamText` limited to one step, with tools that have no `execute`, so the
 * SDK returns the model's tool calls instead of running them.
 */
import {
  isStepCount,
  type LanguageModel,
  type LanguageModelUsage,
  type ModelMessage,
  streamText,
  type ToolSet,
} from "ai";
import type { AgentUsage, EventWriter, ModelCallMetadata } from "./dex.js";

/** The `streamText` options a runner passes through to every model call. */
export type GenerateOptions = Pick<
  Parameters<typeof streamText<ToolSet>>[0],
  | "maxOutputTokens"
  | "temperature"
  | "topP"
  | "topK"
  | "presencePenalty"
  | "frequencyPenalty"
  | "stopSequences"
  | "seed"
  | "reasoning"
  | "headers"
  | "providerOptions"
  | "toolChoice"
  | "activeTools"
  | "timeout"
>;

export type Instructions = Parameters<typeof streamText<ToolSet>>[0]["instructions"];

export interface ModelCallRequest {
  model: LanguageModel;
  instructions: Instructions;
  messages: ModelMessage[];
  tools: ToolSet;
  toolsContext: Record<string, unknown> | undefined;
  generate: GenerateOptions;
  maxRetries: number | undefined;
  signal: AbortSignal;
  events: EventWriter;
}

export interface ModelCall {
  /** The assistant message(s) of the response, in the SDK's own shape. */
  responseMessages: ModelMessage[];
  usage: AgentUsage;
  metadata: ModelCallMetadata;
}

/** Runs one model call, writing its text and reasoning deltas as they stream. */
export async function runModelCall(request: ModelCallRequest): Promise<ModelCall> {
  const result = streamText({
    ...request.generate,
    model: request.model,
    instructions: request.instructions,
    messages: request.messages,
    tools: withoutExecute(request.tools),
    // The SDK types `toolsContext` from each tool's context schema, which a plain ToolSet lacks.
    ...((request.toolsContext === undefined ? {} : { toolsContext: request.toolsContext }) as object),
    abortSignal: request.signal,
    stopWhen: isStepCount(1),
    ...(request.maxRetries === undefined ? {} : { maxRetries: request.maxRetries }),
    onError: () => {
      // The error is read from the stream below and thrown from this call.
    },
  });
  for await (const part of result.fullStream) {
    if (part.type === "text-delta" && part.text !== "") {
      request.events.write("text_delta", { text: part.text });
    } else if (part.type === "reasoning-delta" && part.text !== "") {
      request.events.write("reasoning_delta", { text: part.text });
    } else if (part.type === "error") {
      throw part.error;
    } else if (part.type === "abort") {
      throw abortError(request.signal);
    }
  }
  const [response, usage, finishReason] = await Promise.all([result.response, result.usage, result.finishReason]);
  return {
    // Tools have no execute, so a tool message here only answers calls the SDK found invalid;
    // the tool Step answers every call instead, valid or not.
    responseMessages: response.messages.filter((message) => message.role === "assistant"),
    usage: agentUsage(usage),
    metadata: {
      requestModel: modelName(request.model),
      responseModel: response.modelId,
      providerName: typeof request.model === "string" ? null : request.model.provider,
      responseId: response.id,
      finishReasons: [finishReason],
    },
  };
}

/** The tools as the model call gets them: declared, never run (nor approved) by the SDK. */
export function withoutExecute(tools: ToolSet): ToolSet {
  const declared: ToolSet = {};
  for (const [name, tool] of Object.entries(tools)) {
    const { execute: _execute, needsApproval: _needsApproval, ...rest } = tool;
    declared[name] = rest as ToolSet[string];
  }
  return declared;
}

export function agentUsage(usage: LanguageModelUsage): AgentUsage {
  return {
    modelCalls: 1,
    inputTokens: usage.inputTokens ?? 0,
    outputTokens: usage.outputTokens ?? 0,
    cachedInputTokens: usage.inputTokenDetails?.cacheReadTokens ?? 0,
    reasoningTokens: usage.outputTokenDetails?.reasoningTokens ?? 0,
  };
}

function modelName(model: LanguageModel): string {
  return typeof model === "string" ? model : model.modelId;
}

function abortError(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException("The model call was aborted.", "AbortError");
}
