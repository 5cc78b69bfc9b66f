/**
 * One HTTP request per model call: the model of every gated agent, wrapped.
 *
 * A RunModel Step owns a model call's retries (its attempts are recorded in the Step history),
 * so a call must not be retried inside an attempt. The SDK's own runner-managed retries are off
 * unless a `ModelSettings.retry` policy asks for them, but the OpenAI client's retries (2 by
 * default, for a 429 or a 5xx) are on for the first request. The SDK turns those off itself
 * for the requests its runner retries, by marking the request (`runnerManagedRetry`); the
 * wrapper marks every request the same way, so the client sends exactly one. The mark is the
 * SDK's own (0.20.0, read by `OpenAIChatCompletionsModel` and `OpenAIResponsesModel`); a test
 * counts the requests of a failing call.
 */
import type { Model, ModelProvider, ModelRequest, ModelResponse, StreamEvent } from "@openai/agents";

type MarkedRequest = ModelRequest & { _internal?: Record<string, unknown> };

/** A request the provider sends once, without its client's own retries. */
function singleRequest(request: ModelRequest): ModelRequest {
  const marked = request as MarkedRequest;
  return { ...request, _internal: { ...marked._internal, runnerManagedRetry: true } } as ModelRequest;
}

/** `inner` (a model, or a name its provider resolves at the first call) sending one request per call. */
export class SingleRequestModel implements Model {
  readonly #resolve: () => Promise<Model>;
  #model: Promise<Model> | undefined;

  constructor(inner: Model | string, provider: () => ModelProvider) {
    this.#resolve = typeof inner === "string" ? async () => await provider().getModel(inner) : async () => inner;
  }

  async getResponse(request: ModelRequest): Promise<ModelResponse> {
    return await (await this.#inner()).getResponse(singleRequest(request));
  }

  async *getStreamedResponse(request: ModelRequest): AsyncIterable<StreamEvent> {
    yield* (await this.#inner()).getStreamedResponse(singleRequest(request));
  }

  #inner(): Promise<Model> {
    this.#model ??= this.#resolve();
    return this.#model;
  }
}
