/**
 * Test parts: the core's scripted model server as a real process, the SDK's real
 * `OpenAIChatCompletionsModel` over a real OpenAI client pointed at it (with a fetch that keeps a
 * copy of each request body it sends), and the core's hand-built turn contexts
 * (`@superdurable/dex-agents/testing`) whose events land in memory.
 */
import { resolve } from "node:path";
import {
  type AgentInputItem,
  OpenAIChatCompletionsModel,
  OpenAIResponsesModel,
  setTracingDisabled,
} from "@openai/agents";
import {
  turnContext as context,
  toolExecution as execution,
  recordingFetch,
  type ScriptedReply,
  startScriptedServer,
  storedMessage as stored,
  toolCallRecord,
  uvCli,
} from "@superdurable/dex-agents/testing";
import OpenAI from "openai";
import type { AgentMessage } from "../src/dex.js";

export { MemoryEvents, type ScriptedReply } from "@superdurable/dex-agents/testing";

/** The Python core's CLI, beside this package (tests run from the package directory). */
const CORE_CLI = uvCli(resolve(process.cwd(), "..", "..", "python", "core"));

export interface ModelServer {
  baseUrl: string;
  /** The JSON bodies the provider sent, in order. */
  requests: Record<string, unknown>[];
  /** The JSON bodies the server received, in order, from every process (its request log). */
  received(): Record<string, unknown>[];
  /** The server's Chat Completions endpoint through the SDK's model (the client keeps its retries). */
  model: OpenAIChatCompletionsModel;
  /** The server's Responses endpoint through the SDK's Responses model. */
  responsesModel: OpenAIResponsesModel;
  /** A client of the server, recording its requests like the model's. */
  client: OpenAI;
  stop(): Promise<void>;
}

/** Starts `dex-agents model-server` answering `replies` once each, in order. */
export async function startModelServer(replies: ScriptedReply[]): Promise<ModelServer> {
  const server = await startScriptedServer(replies, { cli: CORE_CLI, log: true });
  const requests: Record<string, unknown>[] = [];
  const client = new OpenAI({ baseURL: server.baseUrl, apiKey: "scripted", fetch: recordingFetch(requests) });
  return {
    baseUrl: server.baseUrl,
    requests,
    model: new OpenAIChatCompletionsModel(client, "scripted-model"),
    responsesModel: new OpenAIResponsesModel(client, "scripted-model"),
    client,
    received: () => server.received(),
    stop: () => server.stop(),
  };
}

setTracingDisabled(true);

/** A turn context as serveRunners builds it, with the core's policy resolution rules. */
export const turnContext = context<AgentInputItem>;

/** A stored message as the engine keeps it. */
export function storedMessage(
  sequence: number,
  turnId: string,
  item: AgentInputItem,
  text: string | null,
): AgentMessage {
  const role = "role" in item && item.role === "assistant" ? "assistant" : "user";
  return stored(sequence, role, JSON.stringify(item), { turnId, text });
}

/** A final record of a deferred call. */
export const record = toolCallRecord;

/** A tool Step's execution of `toolCall`. */
export const toolExecution = execution<AgentInputItem>;
