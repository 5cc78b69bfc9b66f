/**
 * Stepwise test parts: the Python core's scripted Chat Completions server as a real process,
 * the AI SDK's real OpenAI-compatible provider pointed at it (keeping a copy of each request
 * body it sends), and the core's turn contexts (`src/testing.ts`) with Stepwise items.
 */
import { spawnSync } from "node:child_process";
import { resolve } from "node:path";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import type { LanguageModel } from "ai";
import type { AgentMessage } from "../src/runner.js";
import type { StepwiseItem } from "../src/stepwise/index.js";
import {
  turnContext as context,
  toolExecution as execution,
  recordingFetch,
  type ScriptedReply,
  startScriptedServer,
  storedMessage,
  toolCallRecord,
  uvCli,
} from "../src/testing.js";

export { MemoryEvents, type ScriptedReply } from "../src/testing.js";

/** The Python core, beside this package (tests run from the package directory). */
export const CORE_PROJECT = resolve(process.cwd(), "..", "..", "python", "core");
export const CORE_CLI = uvCli(CORE_PROJECT);
export const hasUv = spawnSync("uv", ["--version"]).status === 0;

export interface ModelServer {
  /** The JSON bodies the provider sent, in order. */
  requests: Record<string, unknown>[];
  /** A model of the server through the OpenAI-compatible provider. */
  model(name?: string): LanguageModel;
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
  return {
    requests,
    model: (name = "scripted-model") => provider.chatModel(name),
    stop: () => server.stop(),
  };
}

/** A turn context with Stepwise items, as serveRunners builds it. */
export const turnContext = context<StepwiseItem>;

/** A stored message of `item` (a Chat Completions message) as the engine keeps it. */
export function stored(
  sequence: number,
  turnId: string,
  item: Record<string, unknown>,
  fields: Partial<AgentMessage> = {},
): AgentMessage {
  const role = item.role === "tool" ? "tool" : item.role === "assistant" ? "assistant" : "user";
  const text = typeof item.content === "string" ? item.content : null;
  return storedMessage(sequence, role, JSON.stringify(item), { turnId, text, ...fields });
}

/** A record of a deferred call, final or not. */
export const record = toolCallRecord;

/** A tool Step's execution of `toolCall`. */
export const toolExecution = execution<StepwiseItem>;

/** The Python core's value of `expression` (a module-qualified name), as JSON. */
export function pythonValue(imports: string, expression: string): unknown {
  const code = `import json\n${imports}\nprint(json.dumps(${expression}))`;
  const result = spawnSync(
    "uv",
    ["run", "--project", CORE_PROJECT, "--no-sync", "python", "-c", code],
    {
      encoding: "utf8",
    },
  );
  if (result.status !== 0) throw new Error(`python failed: ${result.stderr}`);
  return JSON.parse(result.stdout) as unknown;
}
