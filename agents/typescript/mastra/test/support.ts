/**
 * Test parts: the Python core's scripted Chat Completions server as a real process, a real
 * Mastra Agent whose OpenAI-compatible model points at it (through a fetch that keeps each
 * request body it sends), and turn contexts as serveRunners builds them, events in memory.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { resolveToolPolicy } from "@superdurable/dex-agents";
import type { AgentToolCall, AgentTurnContext, DeferredToolExecution, EventWriter, ToolPolicy } from "../src/dex.js";
import type { ModelMessage } from "../src/index.js";

const CORE_PROJECT = resolve(process.cwd(), "..", "..", "python", "core");

/** One scripted reply, as `dex-agents model-server --script` reads it. */
export interface ScriptedReply {
  text?: string;
  tool_calls?: { id: string; name: string; arguments: unknown }[];
  delay_seconds?: number;
  status?: number;
}

export interface ModelServer {
  /** The JSON bodies sent to the server, in order. */
  requests: Record<string, unknown>[];
  model: ReturnType<ReturnType<typeof createOpenAICompatible>["chatModel"]>;
  stop(): Promise<void>;
}

/** Starts `dex-agents model-server` answering `replies` once each, in order. */
export async function startModelServer(replies: ScriptedReply[]): Promise<ModelServer> {
  const script = join(mkdtempSync(join(tmpdir(), "dex-mastra-")), "script.json");
  writeFileSync(script, JSON.stringify(replies));
  const args = ["run", "--project", CORE_PROJECT, "--no-sync", "dex-agents", "model-server"];
  const child = spawn("uv", [...args, "--script", script, "--port", String(await freePort()), "--once"], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  const baseURL = await firstUrl(child);
  const requests: Record<string, unknown>[] = [];
  const provider = createOpenAICompatible({
    name: "scripted",
    baseURL,
    apiKey: "scripted",
    includeUsage: true,
    fetch: async (input, init) => {
      if (typeof init?.body === "string") {
        requests.push(JSON.parse(init.body) as Record<string, unknown>);
      }
      return await fetch(input, init);
    },
  });
  return { requests, model: provider.chatModel("scripted-model"), stop: () => stop(child) };
}

function firstUrl(child: ChildProcess): Promise<string> {
  return new Promise((done, fail) => {
    let output = "";
    const onData = (chunk: Buffer): void => {
      output += chunk.toString();
      const match = /scripted model at (\S+)/.exec(output);
      if (match?.[1] !== undefined) {
        done(match[1]);
      }
    };
    child.stdout?.on("data", onData);
    child.stderr?.on("data", onData);
    child.once("exit", (code) => fail(new Error(`model server exited (${code}): ${output}`)));
  });
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode === null && child.signalCode === null) {
    const exited = new Promise((done) => child.once("exit", done));
    child.kill("SIGINT");
    await exited;
  }
}

async function freePort(): Promise<number> {
  const { createServer } = await import("node:net");
  return await new Promise((done) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => done(typeof address === "object" && address !== null ? address.port : 0));
    });
  });
}

export class MemoryEvents implements EventWriter {
  readonly events: { type: string; payload: Record<string, unknown> }[] = [];

  write(type: string, payload: Record<string, unknown>): void {
    this.events.push({ type, payload });
  }

  texts(type: string): string[] {
    return this.events.filter((event) => event.type === type).map((event) => String(event.payload.text));
  }
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
  const policies = options.toolPolicies ?? {};
  return {
    flowType: "Test",
    flowId: "flow-1",
    turnId: "turn-1",
    attempt: 1,
    stepExecutionId: "step-1",
    history: { firstSequence: 1, lastSequence: 1 },
    messages: [
      {
        sequence: 1,
        turnId: "turn-1",
        role: "user",
        text: userText,
        toolCallId: null,
        toolName: null,
        toolArguments: null,
        toolOutput: null,
        frameworkItem: JSON.stringify(item),
        createdAt: new Date(0).toISOString(),
      },
    ],
    items: [item],
    frameworkRunState: options.frameworkRunState ?? null,
    toolCalls: options.toolCalls ?? [],
    events,
    heartbeat: () => {},
    cancellationSignal: options.signal ?? new AbortController().signal,
    deadline: null,
    toolPolicies: policies,
    defaultToolEffect: "unclassified",
    enabledBuiltInTools: [],
    sessionSettings: {},
    interactionMode: "chat",
    plan: null,
    contextSummary: null,
    resolveToolPolicy: (name, effect, approval) => resolveToolPolicy(name, policies, "unclassified", effect, approval),
  };
}

/** A record of a deferred call in `outcome`. */
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
export function toolExecution(toolCall: AgentToolCall, signal?: AbortSignal): DeferredToolExecution<ModelMessage> {
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
