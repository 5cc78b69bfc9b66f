/**
 * Test parts: the core's scripted Chat Completions server as a real process, pi-ai's real
 * OpenAI-compatible provider pointed at it (each request body it sends kept, through pi-ai's
 * own `onPayload` hook), model requests and tool Step executions built by hand.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { Model } from "@mariozechner/pi-ai";
import type { AgentToolCall, ChatItem, DeferredToolExecution, ModelRequest } from "@superdurable/dex-agents";

/** The Python core, beside this package (tests run from the package directory). */
const CORE_PROJECT = resolve(process.cwd(), "..", "..", "python", "core");

/** One scripted reply, as `dex-agents model-server --script` reads it. */
export interface ScriptedReply {
  text?: string;
  tool_calls?: { id: string; name: string; arguments: unknown }[];
  delay_seconds?: number;
  status?: number;
  retry_after?: number;
}

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
  const dir = mkdtempSync(join(tmpdir(), "dex-pi-"));
  const script = join(dir, "script.json");
  writeFileSync(script, JSON.stringify(replies));
  const port = await freePort();
  const child = spawn(
    "uv",
    [
      "run",
      "--project",
      CORE_PROJECT,
      "--no-sync",
      "dex-agents",
      "model-server",
      "--script",
      script,
      "--port",
      String(port),
      "--once",
    ],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  const baseUrl = await waitForLine(child);
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
    stop: () => stopProcess(child),
  };
}

function waitForLine(child: ChildProcess): Promise<string> {
  return new Promise((resolveUrl, reject) => {
    let output = "";
    const timer = setTimeout(() => reject(new Error(`model server did not start: ${output}`)), 30_000);
    const onData = (chunk: Buffer): void => {
      output += chunk.toString();
      const match = /scripted model at (\S+)/.exec(output);
      if (match?.[1] !== undefined) {
        clearTimeout(timer);
        resolveUrl(match[1]);
      }
    };
    child.stdout?.on("data", onData);
    child.stderr?.on("data", (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`model server exited (${code}): ${output}`));
    });
  });
}

async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((done) => child.once("exit", () => done()));
  child.kill("SIGINT");
  const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
  await exited;
  clearTimeout(timer);
}

function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address !== null ? address.port : 0;
      server.close(() => resolvePort(port));
    });
  });
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
  return {
    toolCallId,
    turnId: "turn-1",
    toolName,
    arguments: typeof args === "string" ? args : JSON.stringify(args),
    effect: "read",
    requiresApproval: false,
    status: "approved",
    output: null,
    error: null,
    rejectionMessage: null,
    deferralOrder: 0,
    toolSourceReference: null,
    traceContext: null,
    waitUntil: null,
    inputContinuation: null,
    inputAnswers: [],
    inputQuestion: null,
    inputChoices: [],
    inputAllowsFreeText: true,
    cancellationReason: null,
    taskId: null,
    taskPollIntervalSeconds: null,
    taskAnswerPending: false,
    frameworkData: null,
  };
}

/** A tool Step's execution of `call`. */
export function toolExecution(call: AgentToolCall, signal?: AbortSignal): DeferredToolExecution {
  return {
    flowType: "Test",
    flowId: "flow-1",
    turnId: call.turnId,
    stepExecutionId: "step-tool",
    toolCall: call,
    idempotencyKey: `flow-1/${call.turnId}/${call.toolCallId}`,
    attempt: 1,
    events: { write: () => {} },
    heartbeat: () => {},
    cancellationSignal: signal ?? new AbortController().signal,
    deadline: null,
    saveHeartbeatCheckpoint: async () => {},
    heartbeatCheckpoint: null,
    inputAnswers: [],
    supportsToolTasks: false,
    turn: null,
  };
}
