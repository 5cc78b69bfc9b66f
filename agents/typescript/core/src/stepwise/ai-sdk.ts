/**
 * `aiSdkModelClientApi`: a Stepwise ModelClient over any AI SDK `LanguageModel`, so Stepwise
 * speaks to every provider the AI SDK does.
 *
 * One `streamText` call limited to one step, with tools that have no `execute`: the SDK
 * returns the model's tool calls and runs none. The AI SDK (`ai`) is an optional peer
 * dependency, imported on the first call, so the rest of this package loads without it.
 */

import type { LanguageModel, LanguageModelUsage, ModelMessage, streamText, ToolSet } from "ai";
import type { AgentUsage } from "../runner.js";
import type { FunctionToolDefinition } from "../texts.js";
import { type ChatItem, type ChatToolCall, contentText, toolCallsOf } from "./items.js";
import type { ModelClient, ModelReply, ModelRequest } from "./model.js";

/** The `streamText` settings passed through to every call. */
export type AiSdkCallSettings = Pick<
  Parameters<typeof streamText<ToolSet>>[0],
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
  | "timeout"
>;

export interface AiSdkModelClientOptions {
  /** The SDK's own retries of a failed call. Default 0: the Step's attempts are the retries
   *  (a RunModel Step tries a failing call three times). */
  maxRetries?: number;
  /** Whether the model accepts a forced tool choice (default true: the AI SDK's providers
   *  send `toolChoice: {type: "tool"}` as their API's forced choice). */
  forcedToolChoice?: boolean;
  settings?: AiSdkCallSettings;
}

type AiModule = typeof import("ai");
let aiModule: Promise<AiModule> | undefined;

/** The `ai` module, imported on first use, with an error saying how to install it. */
function loadAi(): Promise<AiModule> {
  aiModule ??= import("ai").catch((error: unknown) => {
    aiModule = undefined;
    throw new Error(
      `aiSdkModelClientApi needs the AI SDK: npm install ai@7.0.173 and a provider package (${String(error)})`,
    );
  });
  return aiModule;
}

/** A ModelClient calling `model` through the AI SDK. */
export function aiSdkModelClientApi(
  model: LanguageModel,
  options: AiSdkModelClientOptions = {},
): ModelClient {
  const name = typeof model === "string" ? model : model.modelId;
  return {
    model: name,
    supportsForcedToolChoice: () => options.forcedToolChoice ?? true,
    complete: (request) => streamOnce(model, options, request),
  };
}

async function streamOnce(
  model: LanguageModel,
  options: AiSdkModelClientOptions,
  request: ModelRequest,
): Promise<ModelReply> {
  const ai = await loadAi();
  const tools: ToolSet = {};
  for (const definition of request.tools) {
    tools[definition.function.name] = declaredTool(ai, definition);
  }
  const result = ai.streamText({
    ...options.settings,
    model,
    messages: toModelMessages(request.messages),
    allowSystemInMessages: true,
    ...(request.tools.length > 0 ? { tools } : {}),
    ...(request.toolChoice
      ? { toolChoice: { type: "tool", toolName: request.toolChoice.function.name } }
      : {}),
    ...(request.maxOutputTokens ? { maxOutputTokens: request.maxOutputTokens } : {}),
    maxRetries: options.maxRetries ?? 0,
    abortSignal: request.cancellationSignal,
    stopWhen: ai.stepCountIs(1),
    onError: () => {
      // The error is read from the stream below and thrown from this call.
    },
  });
  let text = "";
  const calls: ChatToolCall[] = [];
  let lastBeat = Date.now();
  for await (const part of result.fullStream) {
    if (part.type === "text-delta" && part.text !== "") {
      text += part.text;
      request.onText(part.text);
    } else if (part.type === "reasoning-delta" && part.text !== "") {
      request.onReasoning(part.text);
    } else if (part.type === "tool-call") {
      calls.push({
        id: part.toolCallId,
        type: "function",
        function: { name: part.toolName, arguments: argumentsText(part.input) },
      });
    } else if (part.type === "error") {
      throw part.error;
    } else if (part.type === "abort") {
      throw (
        request.cancellationSignal.reason ??
        new DOMException("The model call was aborted.", "AbortError")
      );
    }
    if (Date.now() - lastBeat > 10_000) {
      lastBeat = Date.now();
      request.heartbeat();
    }
  }
  const [response, usage, finishReason] = await Promise.all([
    result.response,
    result.usage,
    result.finishReason,
  ]);
  // Content may be null only beside tool calls.
  const item: ModelReply["item"] = {
    role: "assistant",
    content: text || (calls.length > 0 ? null : ""),
  };
  if (calls.length > 0) item.tool_calls = calls;
  return {
    item,
    usage: agentUsage(usage),
    metadata: {
      requestModel: typeof model === "string" ? model : model.modelId,
      responseModel: response.modelId,
      providerName: typeof model === "string" ? null : model.provider,
      responseId: response.id,
      finishReasons: [finishReason],
    },
  };
}

function declaredTool(ai: AiModule, definition: FunctionToolDefinition): ToolSet[string] {
  return ai.tool({
    description: definition.function.description,
    inputSchema: ai.jsonSchema(
      definition.function.parameters as Parameters<AiModule["jsonSchema"]>[0],
    ),
  }) as ToolSet[string];
}

/** The model's arguments as text: what it sent, or the JSON of what the SDK parsed. */
function argumentsText(input: unknown): string {
  return typeof input === "string" ? input : JSON.stringify(input ?? {});
}

function agentUsage(usage: LanguageModelUsage): AgentUsage {
  return {
    modelCalls: 1,
    inputTokens: usage.inputTokens ?? 0,
    outputTokens: usage.outputTokens ?? 0,
    cachedInputTokens: usage.inputTokenDetails?.cacheReadTokens ?? 0,
    reasoningTokens: usage.outputTokenDetails?.reasoningTokens ?? 0,
  };
}

// Chat Completions items as the AI SDK's messages ------------------------------------------------

/** The items as AI SDK messages; a tool result's name comes from its call when not stored. */
export function toModelMessages(items: readonly ChatItem[]): ModelMessage[] {
  const names = new Map<string, string>();
  const messages: ModelMessage[] = [];
  for (const item of items) {
    for (const call of toolCallsOf(item)) names.set(call.id, call.function.name);
    messages.push(toModelMessage(item, names));
  }
  return messages;
}

function toModelMessage(item: ChatItem, names: Map<string, string>): ModelMessage {
  const text = contentText(item.content) ?? "";
  switch (item.role) {
    case "system":
      return { role: "system", content: text };
    case "user":
      return { role: "user", content: text };
    case "tool": {
      const id = item.tool_call_id ?? "";
      return {
        role: "tool",
        content: [
          {
            type: "tool-result",
            toolCallId: id,
            toolName: item.name ?? names.get(id) ?? "",
            output: { type: "text", value: text },
          },
        ],
      };
    }
    default: {
      const calls = toolCallsOf(item);
      if (calls.length === 0) return { role: "assistant", content: text };
      return {
        role: "assistant",
        content: [
          ...(text ? [{ type: "text" as const, text }] : []),
          ...calls.map((call) => ({
            type: "tool-call" as const,
            toolCallId: call.id,
            toolName: call.function.name,
            input: parsedArguments(call.function.arguments),
          })),
        ],
      };
    }
  }
}

function parsedArguments(text: string): unknown {
  try {
    return JSON.parse(text || "{}") as unknown;
  } catch {
    return text;
  }
}
