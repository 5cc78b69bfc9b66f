/**
 * Parts for a runner's own tests, the TypeScript side of the Python core's `dex_agents.testing`:
 * the Python core's scripted model server as a real process (`dex-agents model-server`), a
 * fetch that keeps each JSON body it sends, and turn contexts and tool executions built as
 * `serveRunners` builds them (the core's policy resolution), their events in memory.
 *
 * Every runner package of this repository tests with these, so a change to the runner contract
 * is made to its test parts once. The e2e apps that a Python Worker calls share the matrix's
 * tools and their tool log (`matrixTools`, `recordToolRun`) and how they listen (`serveForWorker`).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { appendFileSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { createServer as createHttpServer, type RequestListener, type Server } from "node:http";
import { type AddressInfo, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import {
  type AgentMessage,
  type AgentPlan,
  type AgentToolCall,
  type AgentTurnContext,
  currentToolExecution,
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

/** Each line of a JSON-lines file, parsed (none when the file does not exist yet). */
function readJsonLines(path: string): Record<string, unknown>[] {
  if (!existsSync(path)) return [];
  return readFileSync(path, "utf8")
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

function receivedBodies(log: string): Record<string, unknown>[] {
  return readJsonLines(log).map((entry) => entry.body as Record<string, unknown>);
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

// -- the matrix apps ----------------------------------------------------------------------------

/** The environment variable `name`, which an e2e app needs set. */
export function requiredEnv(name: string): string {
  const value = process.env[name];
  if (value === undefined || value === "") throw new Error(`$${name} is not set`);
  return value;
}

/** Appends one line of a tool's run to the JSON-lines tool log at $TOOL_LOG, as the Python
 *  core's `dex_agents.testing.tool_log.ToolRunLog` writes it (the matrix counts runs there). */
export function recordToolRun(toolName: string, fields: Record<string, unknown>): void {
  const line = JSON.stringify({ tool: toolName, pid: process.pid, ...fields });
  appendFileSync(requiredEnv("TOOL_LOG"), `${line}\n`);
}

/** The runs a tool log holds (`recordToolRun`'s, or the Python core's test MCP server's), in
 *  order. */
export function readToolLog(path: string): Record<string, unknown>[] {
  return readJsonLines(path);
}

/** What a matrix tool's run gets from the framework's own tool call. */
export interface MatrixToolCall {
  /** The call's idempotency key, where the framework hands it to the tool (default: the running
   *  tool Step's, `currentToolExecution`, which must exist). */
  idempotencyKey?: string | null;
  /** Ends charge_card's wait (a cancelled turn). */
  signal?: AbortSignal | undefined;
}

function keyOf(call: MatrixToolCall): string | null {
  if (call.idempotencyKey !== undefined) return call.idempotencyKey;
  const execution = currentToolExecution();
  if (execution === undefined) throw new Error("a tool ran outside a tool Step");
  return execution.idempotencyKey;
}

/**
 * The contract's four matrix tools as plain functions, the TypeScript side of the Python core's
 * `dex_agents.testing.matrix_app`: an adapter's matrix app gives each to its framework in the
 * framework's tool type, with the input schema in the framework's terms. Each records its runs
 * (`recordToolRun`) and returns exactly the text the matrix expects; the effects come from the
 * session's tool policies, as in every app.
 */
export const matrixTools = {
  get_weather: {
    description: "The weather in a city.",
    run: async ({ city }: { city: string }, _call: MatrixToolCall = {}): Promise<string> => {
      recordToolRun("get_weather", { city, phase: "started" });
      await sleep(300);
      recordToolRun("get_weather", { city, phase: "finished" });
      return `Sunny in ${city}`;
    },
  },
  send_email: {
    description: "Send an email.",
    run: async (
      { to }: { to: string; body: string },
      call: MatrixToolCall = {},
    ): Promise<string> => {
      recordToolRun("send_email", { to, key: keyOf(call) });
      return `email sent to ${to}`;
    },
  },
  update_ticket: {
    description: "Set a ticket's status.",
    run: async (
      { ticket_id, status }: { ticket_id: string; status: string },
      call: MatrixToolCall = {},
    ): Promise<string> => {
      recordToolRun("update_ticket", { ticket_id, key: keyOf(call) });
      return `ticket ${ticket_id} is ${status}`;
    },
  },
  charge_card: {
    description: "Charge the customer's card.",
    run: async (
      { amount, seconds }: { amount: number; seconds: number },
      call: MatrixToolCall = {},
    ): Promise<string> => {
      recordToolRun("charge_card", { phase: "started", key: keyOf(call) });
      await sleep(
        seconds * 1000,
        undefined,
        call.signal === undefined ? {} : { signal: call.signal },
      );
      recordToolRun("charge_card", { phase: "finished" });
      return `charged ${amount}`;
    },
  },
} as const;

/** Serves an e2e app's `serveRunners` handler on loopback ($PORT, else a free port) and prints
 *  the line the Python side waits for: "runners at <url>". */
export function serveForWorker(handler: RequestListener): Server {
  const server = createHttpServer(handler);
  server.listen(Number(process.env.PORT ?? 0), "127.0.0.1", () => {
    const { port } = server.address() as AddressInfo;
    process.stdout.write(`runners at http://127.0.0.1:${port}/dex\n`);
  });
  return server;
}
