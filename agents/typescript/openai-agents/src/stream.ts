/**
 * The SDK's stream events of one model Step, forwarded to the session's event stream: text and
 * reasoning deltas as they arrive, and a handoff event for each handoff the SDK ran inside
 * the Step. Also keeps what the Step records of its model calls (response IDs and models).
 */
import type { RunStreamEvent } from "@openai/agents";
import type { EventWriter } from "./dex.js";

export const HANDOFF_EVENT = "openai_agents.handoff";

const REASONING_EVENTS: ReadonlySet<string> = new Set([
  "response.reasoning_summary_text.delta",
  "response.reasoning_text.delta",
]);

type Fields = Record<string, unknown>;

export class StreamForwarder {
  readonly #events: EventWriter;
  /** The model the provider named in its last response. */
  responseModel: string | null = null;
  /** The ID of the last response. */
  responseId: string | null = null;

  constructor(events: EventWriter) {
    this.#events = events;
  }

  forward(event: RunStreamEvent): void {
    if (event.type === "raw_model_stream_event") {
      this.#raw(event.data as Fields);
    } else if (event.type === "run_item_stream_event" && event.item.type === "handoff_output_item") {
      this.#events.write(HANDOFF_EVENT, {
        from_agent: event.item.sourceAgent.name,
        to_agent: event.item.targetAgent.name,
        tool_call_id: event.item.rawItem.callId,
      });
    }
  }

  #raw(data: Fields): void {
    if (data.type === "output_text_delta" && typeof data.delta === "string" && data.delta !== "") {
      this.#events.write("text_delta", { text: data.delta });
    } else if (data.type === "response_done") {
      const response = data.response as Fields | undefined;
      if (typeof response?.id === "string") {
        this.responseId = response.id;
      }
    } else if (data.type === "model") {
      this.#providerEvent(data.event as Fields | undefined);
    }
  }

  /** The provider's own event: a Responses event, or a Chat Completions chunk. */
  #providerEvent(event: Fields | undefined): void {
    if (event === undefined || event === null) {
      return;
    }
    if (typeof event.type === "string" && REASONING_EVENTS.has(event.type)) {
      if (typeof event.delta === "string" && event.delta !== "") {
        this.#events.write("reasoning_delta", { text: event.delta });
      }
      return;
    }
    const response = (event.response as Fields | undefined) ?? event;
    if (typeof response.model === "string") {
      this.responseModel = response.model;
    }
  }
}
