/**
 * Test parts: the Python core's scripted Chat Completions server as a real process, a real
 * Mastra Agent whose OpenAI-compatible model points at it (through a fetch that keeps each
 * request body it sends), and the core's turn contexts (`@superdurable/dex-agents/testing`),
 * events in memory.
 */
import { resolve } from "node:path";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import {
  turnContext as context,
  toolExecution as execution,
  recordingFetch,
  type ScriptedReply,
  startScriptedServer,
  storedMessage,
  toolCallRecord,
  uvCli,
} from "@superdurable/dex-agents/testing";
import type { AgentToolCall, AgentTurnContext, EventWriter, ToolPolicy } from "../src/dex.js";
import type { ModelMessage } from "../src/index.js";

export { MemoryEvents, type ScriptedReply } from "@superdurable/dex-agents/testing";

/** The Python core's CLI, beside this package (tests run from the package directory). */
const CORE_CLI = uvCli(resolve(process.cwd(), "..", "..", "python", "core"));

export interface ModelServer {
  /** The JSON bodies sent to the server, in order. */
  requests: Record<string, unknown>[];
  model: ReturnType<ReturnType<typeof createOpenAICompatible>["chatModel"]>;
  stop(): Promise<void>;
}

/** Starts `dex-agents model-server` answering `replies` once each, in order. */
export async function startModelServer(replies: ScriptedReply[]): Promise<ModelServer> {
  const server = await startScriptedServer(replies, { cli: CORE_CLI });
  const requests: Record<string, unknown>[] = [];
  const provider = createOpenAICompatible({
    name: "scripted",
    baseURL: server.baseUrl,
    apiKey: "scripted",
    includeUsage: true,
    fetch: recordingFetch(requests),
  });
  return { requests, model: provider.chatModel("scripted-model"), stop: () => server.stop() };
}

export interface TurnOptions {
  frameworkRunState?: string | null;
  toolCalls?: AgentToolCall[];
  toolPolicies?: Record<string, ToolPolicy>;
  signal?: AbortSignal;
}

/** A turn context with the user's text as its only history, as serveRunners builds it. */
export function turnContext(
  events: EventWriter,
  userText: string,
  options: TurnOptions = {},
): AgentTurnContext<ModelMessage> {
  const item: ModelMessage = { role: "user", content: userText };
  const message = storedMessage(1, "user", JSON.stringify(item), { text: userText });
  return context<ModelMessage>(events, { ...options, messages: [message], items: [item] });
}

/** A record of a deferred call in `outcome`. */
export const record = toolCallRecord;

/** A tool Step's execution of `toolCall`. */
export const toolExecution = execution<ModelMessage>;
