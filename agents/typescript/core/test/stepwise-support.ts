/**
 * Stepwise test parts: the Python core's scripted Chat Completions server as a real process,
 * the AI SDK's real OpenAI-compatible provider pointed at it (keeping a copy of each request
 * body it sends), and turn contexts built as serveRunners builds them, events in memory.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import type { LanguageModel } from "ai";
import {
  type AgentMessage,
  type AgentPlan,
  type AgentToolCall,
  type AgentTurnContext,
  type DeferredToolExecution,
  type EventWriter,
  type InteractionMode,
  resolveToolPolicy,
  type ToolPolicy,
} from "../src/runner.js";
import type { StepwiseItem } from "../src/stepwise/index.js";

/** The Python core, beside this package (tests run from the package directory). */
export const CORE_PROJECT = resolve(process.cwd(), "..", "..", "python", "core");
export const hasUv = spawnSync("uv", ["--version"]).status === 0;

/** One scripted reply, as `dex-agents model-server --script` reads it. */
export interface ScriptedReply {
  text?: string;
  reasoning?: string;
  tool_calls?: { id: string; name: string; arguments: unknown }[];
  delay_seconds?: number;
  status?: number;
}

export interface ModelServer {
  /** The JSON bodies the provider sent, in order. */
  requests: Record<string, unknown>[];
  /** A model of the server through the OpenAI-compatible provider. */
  model(name?: string): LanguageModel;
  stop(): Promise<void>;
}

/** Starts `dex-agents model-server` answering `replies` once each, in order. */
export async function startModelServer(replies: ScriptedReply[]): Promise<ModelServer> {
  const dir = mkdtempSync(join(tmpdir(), "dex-stepwise-"));
  const script = join(dir, "script.json");
  writeFileSync(script, JSON.stringify(replies));
  const port = await freePort();
  const args = ["run", "--project", CORE_PROJECT, "--no-sync", "dex-agents", "model-server"];
  args.push("--script", script, "--port", String(port), "--once");
  const child = spawn("uv", args, { stdio: ["ignore", "pipe", "pipe"] });
  const baseUrl = await waitForLine(child);
  const requests: Record<string, unknown>[] = [];
  const recording: typeof fetch = async (input, init) => {
    if (typeof init?.body === "string") {
      requests.push(JSON.parse(init.body) as Record<string, unknown>);
    }
    return await fetch(input, init);
  };
  const provider = createOpenAICompatible({
    name: "scripted",
    baseURL: baseUrl,
    apiKey: "scripted",
    includeUsage: true,
    fetch: recording,
  });
  return {
    requests,
    model: (name = "scripted-model") => provider.chatModel(name),
    stop: () => stopProcess(child),
  };
}

function waitForLine(child: ChildProcess): Promise<string> {
  return new Promise((resolveUrl, reject) => {
    let output = "";
    const timer = setTimeout(
      () => reject(new Error(`model server did not start: ${output}`)),
      30_000,
    );
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

export class MemoryEvents implements EventWriter {
  readonly events: { type: string; payload: Record<string, unknown> }[] = [];

  write(type: string, payload: Record<string, unknown>): void {
    this.events.push({ type, payload });
  }

  texts(type: string): string[] {
    return this.events.filter((e) => e.type === type).map((e) => String(e.payload.text));
  }
}

export interface TurnOptions {
  turnId?: string;
  messages?: AgentMessage[];
  frameworkRunState?: string | null;
  toolCalls?: AgentToolCall[];
  toolPolicies?: Record<string, ToolPolicy>;
  enabledBuiltInTools?: string[];
  sessionSettings?: Record<string, unknown>;
  interactionMode?: InteractionMode;
  plan?: AgentPlan | null;
  signal?: AbortSignal;
  parse?: (frameworkItem: string) => StepwiseItem;
}

/** A turn context as serveRunners builds it, with the core's policy resolution. */
export function turnContext(
  events: MemoryEvents,
  options: TurnOptions = {},
): AgentTurnContext<StepwiseItem> {
  const messages = options.messages ?? [];
  const policies = options.toolPolicies ?? {};
  const parse = options.parse ?? ((text: string) => JSON.parse(text) as StepwiseItem);
  return {
    flowType: "Test",
    flowId: "flow-1",
    turnId: options.turnId ?? "turn-1",
    attempt: 1,
    stepExecutionId: "step-1",
    history: {
      firstSequence: messages[0]?.sequence ?? 1,
      lastSequence: messages.at(-1)?.sequence ?? 0,
    },
    messages,
    items: messages.map((m) => parse(m.frameworkItem)),
    frameworkRunState: options.frameworkRunState ?? null,
    toolCalls: options.toolCalls ?? [],
    events,
    heartbeat: () => {},
    cancellationSignal: options.signal ?? new AbortController().signal,
    deadline: null,
    toolPolicies: policies,
    defaultToolEffect: "unclassified",
    enabledBuiltInTools: options.enabledBuiltInTools ?? [],
    sessionSettings: options.sessionSettings ?? {},
    interactionMode: options.interactionMode ?? "chat",
    plan: options.plan ?? null,
    contextSummary: null,
    resolveToolPolicy: (name, effect, approval) =>
      resolveToolPolicy(name, policies, "unclassified", effect, approval),
  };
}

/** A stored message of `item` (a Chat Completions message) as the engine keeps it. */
export function stored(
  sequence: number,
  turnId: string,
  item: Record<string, unknown>,
  fields: Partial<AgentMessage> = {},
): AgentMessage {
  return {
    sequence,
    turnId,
    role: item.role === "tool" ? "tool" : item.role === "assistant" ? "assistant" : "user",
    text: typeof item.content === "string" ? item.content : null,
    toolCallId: null,
    toolName: null,
    toolArguments: null,
    toolOutput: null,
    frameworkItem: JSON.stringify(item),
    createdAt: new Date(0).toISOString(),
    ...fields,
  };
}

/** A record of a deferred call, final or not. */
export function record(
  toolCallId: string,
  toolName: string,
  args: string,
  outcome: Pick<AgentToolCall, "status"> & Partial<AgentToolCall>,
): AgentToolCall {
  return {
    toolCallId,
    turnId: "turn-1",
    toolName,
    arguments: args,
    effect: "read",
    requiresApproval: false,
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
    ...outcome,
  };
}

/** A tool Step's execution of `toolCall`. */
export function toolExecution(toolCall: AgentToolCall): DeferredToolExecution<StepwiseItem> {
  return {
    flowType: "Test",
    flowId: "flow-1",
    turnId: toolCall.turnId,
    stepExecutionId: "step-tool",
    toolCall,
    idempotencyKey: `flow-1/${toolCall.turnId}/${toolCall.toolCallId}`,
    attempt: 1,
    events: new MemoryEvents(),
    heartbeat: () => {},
    cancellationSignal: new AbortController().signal,
    deadline: null,
    saveHeartbeatCheckpoint: async () => {},
    heartbeatCheckpoint: null,
    inputAnswers: [],
    supportsToolTasks: false,
    turn: null,
  };
}

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
