/**
 * Test parts: the core's scripted Chat Completions server as a real process, pi-ai's real
 * OpenAI-compatible provider pointed at it (each request body it sends kept, through pi-ai's
 * own `onPayload` hook), model requests built by hand and the core's tool Step executions
 * (`@superdurable/dex-agents/testing`).
 */
import { resolve } from "node:path";
import type { Model } from "@mariozechner/pi-ai";
import type { AgentToolCall, ChatItem, ModelRequest } from "@superdurable/dex-agents";
import { type ScriptedReply, startScriptedServer, toolCallRecord, uvCli } from "@superdurable/dex-agents/testing";

export { type ScriptedReply, toolExecution } from "@superdurable/dex-agents/testing";

/** The Python core's CLI, beside this package (tests run from the package directory). */
const CORE_CLI = uvCli(resolve(process.cwd(), "..", "..", "python", "core"));

export interface ModelServer {
  baseUrl: string;
  /** The JSON bodies pi-ai sent, in order. */
  requests: Record<string, unknown>[];
  model(id?: string): Model<"openai-completions">;
  /** Records a request body: pass as `options.onPayload`. */
  onPayload(payload: unknown): undefined;
  stop(): Promise<void>;
}

/** Starts `dex-agents model-server` answering `replies` once each, in order. */
export async function startModelServer(replies: ScriptedReply[]): Promise<ModelServer> {
  const { baseUrl, stop } = await startScriptedServer(replies, { cli: CORE_CLI });
  const requests: Record<string, unknown>[] = [];
  return {
    baseUrl,
    requests,
    model: (id = "scripted-model") => ({
      id,
      name: id,
      api: "openai-completions",
      provider: "scripted",
      baseUrl,
      reasoning: false,
      input: ["text"],
      cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
      contextWindow: 128_000,
      maxTokens: 4_096,
      compat: { supportsStore: false, supportsDeveloperRole: false },
    }),
    onPayload: (payload) => {
      requests.push(payload as Record<string, unknown>);
      return undefined;
    },
    stop,
  };
}

/** A model request with its streamed text and reasoning kept. */
export interface RecordedRequest extends ModelRequest {
  texts: string[];
  reasonings: string[];
}

export function modelRequest(
  messages: ChatItem[],
  options: Partial<Pick<ModelRequest, "tools" | "toolChoice" | "cancellationSignal" | "maxOutputTokens">> = {},
): RecordedRequest {
  const texts: string[] = [];
  const reasonings: string[] = [];
  return {
    messages,
    tools: options.tools ?? [],
    toolChoice: options.toolChoice ?? null,
    maxOutputTokens: options.maxOutputTokens ?? null,
    cancellationSignal: options.cancellationSignal ?? new AbortController().signal,
    deadline: null,
    onText: (text) => texts.push(text),
    onReasoning: (text) => reasonings.push(text),
    heartbeat: () => {},
    texts,
    reasonings,
  };
}

/** A requested call of `toolName`, as the engine gives it to a tool Step. */
export function toolCall(toolCallId: string, toolName: string, args: unknown): AgentToolCall {
  const text = typeof args === "string" ? args : JSON.stringify(args);
  return toolCallRecord(toolCallId, toolName, text, { status: "approved" });
}
