/**
 * Test parts: the core's scripted model server as a real process, the SDK's real
 * `OpenAIChatCompletionsModel` over a real OpenAI client pointed at it (with a fetch that keeps a
 * copy of each request body it sends), and hand-built turn contexts whose events land in memory.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import {
  type AgentInputItem,
  OpenAIChatCompletionsModel,
  OpenAIResponsesModel,
  setTracingDisabled,
} from "@openai/agents";
import OpenAI from "openai";
import type {
  AgentMessage,
  AgentToolCall,
  AgentTurnContext,
  DeferredToolExecution,
  EventWriter,
  ToolEffect,
  ToolPolicy,
} from "../src/dex.js";

/** The Python core, beside this package (tests run from the package directory). */
const CORE_PROJECT = resolve(process.cwd(), "..", "..", "python", "core");

/** One scripted reply, as `dex-agents model-server --script` reads it. */
export interface ScriptedReply {
  text?: string;
  reasoning?: string;
  tool_calls?: { id: string; name: string; arguments: unknown }[];
  delay_seconds?: number;
  status?: number;
}

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
  const dir = mkdtempSync(join(tmpdir(), "dex-openai-agents-"));
  const script = join(dir, "script.json");
  const log = join(dir, "requests.jsonl");
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
      "--log",
      log,
    ],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  const baseUrl = await waitForLine(child);
  const requests: Record<string, unknown>[] = [];
  const recording: typeof fetch = async (input, init) => {
    if (typeof init?.body === "string") {
      requests.push(JSON.parse(init.body) as Record<string, unknown>);
    }
    return await fetch(input, init);
  };
  const client = new OpenAI({ baseURL: baseUrl, apiKey: "scripted", fetch: recording });
  return {
    baseUrl,
    requests,
    model: new OpenAIChatCompletionsModel(client, "scripted-model"),
    responsesModel: new OpenAIResponsesModel(client, "scripted-model"),
    client,
    received: () => receivedBodies(log),
    stop: () => stopProcess(child),
  };
}

function receivedBodies(log: string): Record<string, unknown>[] {
  if (!existsSync(log)) {
    return [];
  }
  const lines = readFileSync(log, "utf8")
    .split("\n")
    .filter((line) => line.trim() !== "");
  return lines.map((line) => (JSON.parse(line) as { body: Record<string, unknown> }).body);
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
  if (child.exitCode !== null || child.signalCode !== null) {
    return;
  }
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

export interface RecordedEvent {
  type: string;
  payload: Record<string, unknown>;
}

export class MemoryEvents implements EventWriter {
  readonly events: RecordedEvent[] = [];

  write(type: string, payload: Record<string, unknown>): void {
    this.events.push({ type, payload });
  }

  ofType(type: string): Record<string, unknown>[] {
    return this.events.filter((event) => event.type === type).map((event) => event.payload);
  }
}

setTracingDisabled(true);

const DEFAULT_APPROVAL: Record<ToolEffect, boolean> = {
  read: false,
  idempotent_write: false,
  non_idempotent_write: true,
  unclassified: true,
};

export interface TurnOptions {
  turnId?: string;
  history?: { message: AgentMessage; item: AgentInputItem }[];
  frameworkRunState?: string | null;
  toolCalls?: AgentToolCall[];
  toolPolicies?: Record<string, ToolPolicy>;
  signal?: AbortSignal;
}

/** A turn context as serveRunners builds it, with the core's policy resolution rules. */
export function turnContext(events: MemoryEvents, options: TurnOptions = {}): AgentTurnContext<AgentInputItem> {
  const history = options.history ?? [];
  const toolPolicies = options.toolPolicies ?? {};
  const sequences = history.map((entry) => entry.message.sequence);
  return {
    flowType: "Test",
    flowId: "flow-1",
    turnId: options.turnId ?? "turn-1",
    attempt: 1,
    stepExecutionId: "step-1",
    history: { firstSequence: sequences[0] ?? 1, lastSequence: sequences.at(-1) ?? 0 },
    messages: history.map((entry) => entry.message),
    items: history.map((entry) => entry.item),
    frameworkRunState: options.frameworkRunState ?? null,
    toolCalls: options.toolCalls ?? [],
    events,
    heartbeat: () => {},
    cancellationSignal: options.signal ?? new AbortController().signal,
    deadline: null,
    toolPolicies,
    defaultToolEffect: "unclassified",
    enabledBuiltInTools: [],
    sessionSettings: {},
    interactionMode: "chat",
    plan: null,
    contextSummary: null,
    resolveToolPolicy: (name, frameworkEffect, frameworkApproval) => {
      const policy = toolPolicies[name];
      const effect = policy?.effect ?? frameworkEffect ?? "unclassified";
      const requiresApproval = policy?.requiresApproval ?? frameworkApproval ?? DEFAULT_APPROVAL[effect];
      return { effect, requiresApproval };
    },
  };
}

/** A stored message as the engine keeps it. */
export function storedMessage(
  sequence: number,
  turnId: string,
  item: AgentInputItem,
  text: string | null,
): AgentMessage {
  return {
    sequence,
    turnId,
    role: "role" in item && item.role === "assistant" ? "assistant" : "user",
    text,
    toolCallId: null,
    toolName: null,
    toolArguments: null,
    toolOutput: null,
    frameworkItem: JSON.stringify(item),
    createdAt: new Date(0).toISOString(),
  };
}

/** A final record of a deferred call. */
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
export function toolExecution(toolCall: AgentToolCall, signal?: AbortSignal): DeferredToolExecution<AgentInputItem> {
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
    cancellationSignal: signal ?? new AbortController().signal,
    deadline: null,
    saveHeartbeatCheckpoint: async () => {},
    heartbeatCheckpoint: null,
    inputAnswers: [],
    supportsToolTasks: false,
    turn: null,
  };
}
