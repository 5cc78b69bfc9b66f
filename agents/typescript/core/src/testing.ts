/**
 * Parts for a runner's own tests, the TypeScript side of the Python core's `dex_agents.testing`:
 * the Python core's scripted model server as a real process (`dex-agents model-server`), a
 * fetch that keeps each JSON body it sends, and turn contexts and tool executions built as
 * `serveRunners` builds them (the core's policy resolution), their events in memory.
 *
 * Every runner package of this repository tests with these, so a change to the runner contract
 * is made to its test parts once.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type AgentMessage,
  type AgentPlan,
  type AgentToolCall,
  type AgentTurnContext,
  type DeferredToolExecution,
  type EventWriter,
  type InteractionMode,
  type MessageRole,
  resolveToolPolicy,
  type ToolPolicy,
} from "./runner.js";

/** One scripted reply, as `dex-agents model-server --script` reads it. */
export interface ScriptedReply {
  text?: string;
  reasoning?: string;
  tool_calls?: { id: string; name: string; arguments: unknown }[];
  delay_seconds?: number;
  status?: number;
  retry_after?: number;
}

export interface ScriptedServerOptions {
  /** The command that runs the Python core's CLI (default: `dex-agents` on the PATH). */
  cli?: readonly string[];
  /** Keep a log of the bodies the server receives, for `received()`. */
  log?: boolean;
}

export interface ScriptedServer {
  /** The server's OpenAI-compatible base URL (Chat Completions and Responses). */
  baseUrl: string;
  /** The JSON bodies the server received, in order, from every process (with `log`). */
  received(): Record<string, unknown>[];
  stop(): Promise<void>;
}

/** The command that runs the `dex-agents` CLI of a Python core's uv project (its environment
 *  already synced), as this repository's packages run the one beside them. */
export function uvCli(project: string): string[] {
  return ["uv", "run", "--project", project, "--no-sync", "dex-agents"];
}

/** Starts `dex-agents model-server` answering `replies` once each, in order. */
export async function startScriptedServer(
  replies: readonly ScriptedReply[],
  options: ScriptedServerOptions = {},
): Promise<ScriptedServer> {
  const dir = mkdtempSync(join(tmpdir(), "dex-scripted-"));
  const script = join(dir, "script.json");
  const log = join(dir, "requests.jsonl");
  writeFileSync(script, JSON.stringify(replies));
  const [command = "dex-agents", ...cli] = options.cli ?? ["dex-agents"];
  const args = [...cli, "model-server", "--script", script, "--port", String(await freePort())];
  args.push("--once", ...(options.log ? ["--log", log] : []));
  const child = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"] });
  const baseUrl = await servedUrl(child);
  return { baseUrl, received: () => receivedBodies(log), stop: () => stopProcess(child) };
}

/** A fetch that keeps each JSON body it sends in `requests`, in order. */
export function recordingFetch(requests: Record<string, unknown>[]): typeof fetch {
  return async (input, init) => {
    if (typeof init?.body === "string") {
      requests.push(JSON.parse(init.body) as Record<string, unknown>);
    }
    return await fetch(input, init);
  };
}

function receivedBodies(log: string): Record<string, unknown>[] {
  if (!existsSync(log)) return [];
  const lines = readFileSync(log, "utf8")
    .split("\n")
    .filter((line) => line.trim() !== "");
  return lines.map((line) => (JSON.parse(line) as { body: Record<string, unknown> }).body);
}

function servedUrl(child: ChildProcess): Promise<string> {
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
    child.stderr?.on("data", onData);
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

export interface RecordedEvent {
  type: string;
  payload: Record<string, unknown>;
}

/** An EventWriter that keeps each event in memory, in order. */
export class MemoryEvents implements EventWriter {
  readonly events: RecordedEvent[] = [];

  write(type: string, payload: Record<string, unknown>): void {
    this.events.push({ type, payload });
  }

  /** The payloads of the events of `type`, in order. */
  ofType(type: string): Record<string, unknown>[] {
    return this.events.filter((event) => event.type === type).map((event) => event.payload);
  }

  /** The `text` of each event of `type`, in order (deltas, for one). */
  texts(type: string): string[] {
    return this.ofType(type).map((payload) => String(payload.text));
  }
}

export interface TurnOptions<Item> {
  turnId?: string;
  /** The stored history (default: none). */
  messages?: readonly AgentMessage[];
  /** The history's framework items (default: each message's `frameworkItem` parsed as JSON). */
  items?: readonly Item[];
  /** The stored history as pairs of a message and its framework item, in place of `messages`
   *  and `items`. */
  history?: readonly { message: AgentMessage; item: Item }[];
  frameworkRunState?: string | null;
  toolCalls?: readonly AgentToolCall[];
  toolPolicies?: Record<string, ToolPolicy>;
  enabledBuiltInTools?: readonly string[];
  sessionSettings?: Record<string, unknown>;
  interactionMode?: InteractionMode;
  plan?: AgentPlan | null;
  signal?: AbortSignal;
}

/** A turn context as `serveRunners` builds it, with the core's policy resolution. */
export function turnContext<Item>(
  events: EventWriter,
  options: TurnOptions<Item> = {},
): AgentTurnContext<Item> {
  const messages = options.history?.map((entry) => entry.message) ?? options.messages ?? [];
  const items =
    options.history?.map((entry) => entry.item) ??
    options.items ??
    messages.map((message) => JSON.parse(message.frameworkItem) as Item);
  const policies = options.toolPolicies ?? {};
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
    items,
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

/** A stored message as the engine keeps it: `frameworkItem` and its role, `fields` over it. */
export function storedMessage(
  sequence: number,
  role: MessageRole,
  frameworkItem: string,
  fields: Partial<AgentMessage> = {},
): AgentMessage {
  return {
    sequence,
    turnId: "turn-1",
    role,
    text: null,
    toolCallId: null,
    toolName: null,
    toolArguments: null,
    toolOutput: null,
    frameworkItem,
    createdAt: new Date(0).toISOString(),
    ...fields,
  };
}

/** A record of a deferred call of turn-1, a read by default, with `outcome` over it. */
export function toolCallRecord(
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

/** A tool Step's execution of `toolCall`, its events in memory. */
export function toolExecution<Item>(
  toolCall: AgentToolCall,
  signal?: AbortSignal,
): DeferredToolExecution<Item> {
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
