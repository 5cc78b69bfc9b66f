/**
 * `piModelClient`: a Stepwise ModelClient over a pi-ai `Model`, so Stepwise speaks to every
 * provider pi-ai does (its own model catalogue, or an OpenAI-compatible endpoint).
 *
 * One pi-ai `stream` call per RunModel Step: text and thinking deltas go to the turn's event
 * writer as they come, the turn's AbortSignal goes to pi-ai, and the provider SDK's own
 * retries are off unless asked for (the Step's attempts are the retries). pi-ai does not throw
 * when a call fails (the stream ends with `stopReason: "error"`), so the client throws: the
 * RunModel attempt fails with the failed response's HTTP status and retry headers, judged by
 * the Worker as any model error.
 */

import {
  type Api,
  type AssistantMessage,
  type AssistantMessageEvent,
  type Model,
  type StreamOptions,
  stream,
} from "@mariozechner/pi-ai";
import type { ModelClient, ModelReply, ModelRequest } from "@superdurable/dex-agents";
import { installFetchObserver, modelError, observe, record } from "./http.js";
import { agentUsage, toAssistantItem, toContext } from "./messages.js";

/** pi-ai stream options passed through to every call (temperature, apiKey, headers, a
 *  provider's own options such as `reasoningEffort`); the client sets `signal`, `maxTokens`
 *  and `toolChoice` itself. */
export type PiStreamOptions = Omit<StreamOptions, "signal" | "maxTokens"> & Record<string, unknown>;

export interface PiModelClientOptions {
  /** The provider SDK's own retries of a failed call. Default 0: the Step's attempts are the
   *  retries (a RunModel Step tries a failing call three times). */
  maxRetries?: number;
  /** Whether the model accepts a forced tool choice. Default: true for the APIs whose forced
   *  choice this client knows (openai-completions, mistral-conversations, anthropic-messages,
   *  bedrock-converse-stream), false for the others. */
  forcedToolChoice?: boolean;
  /** Observe the call's HTTP responses for a failure's status and Retry-After (default
   *  true; see http.ts). Off, the status comes from the error message only. */
  observeHttp?: boolean;
  options?: PiStreamOptions;
}

type ForcedChoice = (name: string) => unknown;

const FORCED_CHOICES: Readonly<Record<string, ForcedChoice>> = {
  "openai-completions": (name) => ({ type: "function", function: { name } }),
  "mistral-conversations": (name) => ({ type: "function", function: { name } }),
  "anthropic-messages": (name) => ({ type: "tool", name }),
  "bedrock-converse-stream": (name) => ({ type: "tool", name }),
};

/** pi-ai's stop reasons as Chat Completions finish reasons, as the stored items are. */
const FINISH_REASONS: Readonly<Record<string, string>> = {
  stop: "stop",
  length: "length",
  toolUse: "tool_calls",
};

/** A ModelClient calling `model` through pi-ai's `stream`. */
export function piModelClient(model: Model<Api>, options: PiModelClientOptions = {}): ModelClient {
  if (options.observeHttp ?? true) installFetchObserver();
  const forced = FORCED_CHOICES[model.api];
  return {
    model: model.id,
    supportsForcedToolChoice: () => options.forcedToolChoice ?? forced !== undefined,
    complete: (request) => streamOnce(model, options, request),
  };
}

async function streamOnce(
  model: Model<Api>,
  options: PiModelClientOptions,
  request: ModelRequest,
): Promise<ModelReply> {
  request.cancellationSignal.throwIfAborted();
  const context = toContext(model, request.messages, request.tools);
  const forced = request.toolChoice ? FORCED_CHOICES[model.api] : undefined;
  const { result: events, observation } = observe(() =>
    stream(model, context, {
      ...options.options,
      maxRetries: options.maxRetries ?? 0,
      signal: request.cancellationSignal,
      ...(request.maxOutputTokens ? { maxTokens: request.maxOutputTokens } : {}),
      ...(request.toolChoice ? { toolChoice: forced ? forced(request.toolChoice.function.name) : "required" } : {}),
      onResponse: async (response, calledModel) => {
        record(observation, response.status, response.headers);
        await options.options?.onResponse?.(response, calledModel);
      },
    }),
  );
  let final: AssistantMessage | undefined;
  let lastBeat = Date.now();
  for await (const event of events as AsyncIterable<AssistantMessageEvent>) {
    if (event.type === "text_delta" && event.delta !== "") {
      request.onText(event.delta);
    } else if (event.type === "thinking_delta" && event.delta !== "") {
      request.onReasoning(event.delta);
    } else if (event.type === "done") {
      final = event.message;
    } else if (event.type === "error") {
      if (event.reason === "aborted" || request.cancellationSignal.aborted) {
        throw request.cancellationSignal.reason ?? new DOMException("The model call was aborted.", "AbortError");
      }
      throw modelError(event.error.errorMessage || "the model call failed", observation);
    }
    if (Date.now() - lastBeat > 10_000) {
      lastBeat = Date.now();
      request.heartbeat();
    }
  }
  if (final === undefined) throw modelError("the model's stream ended without a response", observation);
  return {
    item: toAssistantItem(final),
    usage: agentUsage(final.usage),
    metadata: {
      requestModel: model.id,
      responseModel: final.responseModel ?? final.model,
      providerName: model.provider,
      responseId: final.responseId ?? null,
      finishReasons: [FINISH_REASONS[final.stopReason] ?? final.stopReason],
    },
  };
}
