/**
 * ModelClient: what Stepwise needs of a model, one streamed call per model Step.
 *
 * The request is Chat Completions messages and function tool definitions, the shapes the
 * items are stored in; a client turns them into its provider's request and the response back
 * into one assistant item. `aiSdkModelClientApi` (ai-sdk.ts) is the one this package brings.
 */

import type { AgentUsage, ModelCallMetadata } from "../runner.js";
import type { FunctionToolDefinition } from "../texts.js";
import type { ChatItem } from "./items.js";

/** A forced choice of one function tool. */
export interface ModelToolChoice {
  type: "function";
  function: { name: string };
}

export interface ModelRequest {
  messages: ChatItem[];
  tools: FunctionToolDefinition[];
  /** Set only when the call must call this tool (plan mode's `planningToolChoice: "required"`). */
  toolChoice: ModelToolChoice | null;
  maxOutputTokens: number | null;
  cancellationSignal: AbortSignal;
  /** When the RunModel Step's attempt times out (null: no timeout): a client may end its
   *  call by then. */
  deadline: Date | null;
  onText(text: string): void;
  onReasoning(text: string): void;
  heartbeat(): void;
}

/** One model response: the assistant item to store, its usage and metadata. */
export interface ModelReply {
  item: ChatItem & { role: "assistant" };
  usage: AgentUsage;
  metadata: ModelCallMetadata;
}

export interface ModelClient {
  /** The model's name, as metadata and estimates report it. */
  readonly model: string;
  /** Exactly one model call; the Step's attempts are its retries, so the client makes none of
   *  its own unless asked to. Aborting `request.cancellationSignal` stops the call. */
  complete(request: ModelRequest): Promise<ModelReply>;
  /** Whether the model accepts a forced tool choice (plan mode's "required"). */
  supportsForcedToolChoice(): boolean;
}

export function replyText(reply: ModelReply): string {
  return typeof reply.item.content === "string" ? reply.item.content : "";
}

export function replyToolCalls(reply: ModelReply): NonNullable<ChatItem["tool_calls"]> {
  return Array.isArray(reply.item.tool_calls) ? reply.item.tool_calls : [];
}

/** About four characters a token: the estimate the Worker makes for a remote runner too. */
export const CHARS_PER_TOKEN = 4;

export function countTokens(
  messages: readonly ChatItem[],
  tools: readonly FunctionToolDefinition[] = [],
): number {
  return (
    Math.floor((JSON.stringify(messages).length + JSON.stringify(tools).length) / CHARS_PER_TOKEN) +
    1
  );
}

export function countTextTokens(text: string): number {
  return Math.floor(text.length / CHARS_PER_TOKEN) + 1;
}
