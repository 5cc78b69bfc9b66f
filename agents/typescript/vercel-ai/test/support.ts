/**
 * Test parts: the core's scripted Chat Completions server as a real process, the AI SDK's real
 * OpenAI-compatible provider pointed at it (with a fetch that keeps a copy of each request body
 * it sends), and the core's hand-built turn contexts (`@superdurable/dex-agents/testing`) whose
 * events land in memory.
 */
import { resolve } from "node:path";
import { createOpenAI } from "@ai-sdk/openai";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
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
import type { LanguageModel, ModelMessage } from "ai";
import type { AgentMessage } from "../src/dex.js";

export { MemoryEvents, type ScriptedReply } from "@superdurable/dex-agents/testing";

/** The Python core's CLI, beside this package (tests run from the package directory). */
const CORE_CLI = uvCli(resolve(process.cwd(), "..", "..", "python", "core"));

export interface ModelServer {
  baseUrl: string;
  /** The JSON bodies the provider sent, in order. */
  requests: Record<string, unknown>[];
  /** The server's Chat Completions endpoint through the OpenAI-compatible provider. */
  model: LanguageModel;
  /** The server's Responses endpoint through the OpenAI provider (reasoning streams here). */
  responsesModel: LanguageModel;
  stop(): Promise<void>;
}

/** Starts `dex-agents model-server` answering `replies` once each, in order. */
export async function startModelServer(replies: ScriptedReply[]): Promise<ModelServer> {
  const server = await startScriptedServer(replies, { cli: CORE_CLI });
  const requests: Record<string, unknown>[] = [];
  const recording = recordingFetch(requests);
  const provider = createOpenAICompatible({
    name: "scripted",
    baseURL: server.baseUrl,
    apiKey: "scripted",
    includeUsage: true,
    fetch: recording,
  });
  const openai = createOpenAI({ baseURL: server.baseUrl, apiKey: "scripted", fetch: recording });
  return {
    baseUrl: server.baseUrl,
    requests,
    model: provider.chatModel("scripted-model"),
    responsesModel: openai.responses("scripted-model"),
    stop: () => server.stop(),
  };
}

/** A turn context as serveRunners builds it, with the core's policy resolution rules. */
export const turnContext = context<ModelMessage>;

/** A stored message as the engine keeps it. */
export function storedMessage(sequence: number, turnId: string, item: ModelMessage, text: string | null): AgentMessage {
  return stored(sequence, item.role === "system" ? "user" : item.role, JSON.stringify(item), { turnId, text });
}

/** A final record of a deferred call. */
export const record = toolCallRecord;

/** A tool Step's execution of `toolCall`. */
export const toolExecution = execution<ModelMessage>;
