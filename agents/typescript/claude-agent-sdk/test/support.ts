/**
 * Test parts: the Python core's scripted Anthropic Messages server as a real process (the real
 * Claude Code CLI is pointed at it with ANTHROPIC_BASE_URL), the runner with two real in-process
 * SDK MCP tools, and hand-built turn contexts whose events land in memory.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { tool } from "@anthropic-ai/claude-agent-sdk";
import { z } from "zod";
import type {
  AgentMessage,
  AgentToolCall,
  AgentTurnContext,
  AgentTurnOutcome,
  DeferredToolExecution,
  EventWriter,
  ToolEffect,
  ToolPolicy,
} from "../src/dex.js";
import { ClaudeAgentRunner } from "../src/index.js";

/** The Python core, beside this package (tests run from the package directory). */
const CORE_PROJECT = resolve(process.cwd(), "..", "..", "python", "core");
const SERVER_SCRIPT = resolve(process.cwd(), "test", "anthropic_server.py");

/** One scripted reply: `AnthropicReply`'s fields, tool uses as `[id, name, input]`. */
export interface AnthropicReply {
  text?: string;
  tool_uses?: [string, string, Record<string, unknown>][];
  status?: number;
  hang?: boolean;
}

export interface AnthropicBody {
  messages: { role: string; content: string | Record<string, unknown>[] }[];
  [key: string]: unknown;
}

export interface AnthropicServer {
  baseUrl: string;
  /** The bodies of the scripted requests so far (the CLI's side requests left out). */
  requests(): Promise<AnthropicBody[]>;
  stop(): Promise<void>;
}

export async function startAnthropicServer(replies: AnthropicReply[]): Promise<AnthropicServer> {
  const dir = mkdtempSync(join(tmpdir(), "dex-claude-test-"));
  const script = join(dir, "script.json");
  writeFileSync(script, JSON.stringify(replies));
  const child = spawn("uv", ["run", "--project", CORE_PROJECT, "--no-sync", "python", SERVER_SCRIPT, script], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream })[Symbol.asyncIterator]();
  const first = await lines.next();
  const match = /^serving (\S+)/.exec(String(first.value ?? ""));
  if (match?.[1] === undefined) throw new Error(`the scripted Anthropic server did not start: ${first.value}`);
  return {
    baseUrl: match[1],
    requests: async () => {
      child.stdin?.write("requests\n");
      return JSON.parse(String((await lines.next()).value)) as AnthropicBody[];
    },
    stop: () => stop(child),
  };
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise<void>((done) => child.once("exit", () => done()));
  child.stdin?.end();
  await exited;
}

/** Each run of a test tool, in order. */
export const toolRuns: { name: string; args: Record<string, unknown> }[] = [];

export const lookup = tool(
  "lookup",
  "Look something up.",
  { q: z.string() },
  async (args) => {
    toolRuns.push({ name: "lookup", args });
    return { content: [{ type: "text", text: `found ${args.q}` }] };
  },
  { annotations: { readOnlyHint: true } },
);

export const send = tool("send", "Send a message.", { text: z.string() }, async (args) => {
  toolRuns.push({ name: "send", args });
  if (args.text === "fail") return { content: [{ type: "text", text: "mailbox full" }], isError: true };
  return { content: [{ type: "text", text: `sent ${args.text}` }] };
});

/** The runner on the scripted server: only the `lookup` and `send` tools, no CLI tools. */
export function testRunner(baseUrl: string): ClaudeAgentRunner {
  return new ClaudeAgentRunner({
    options: {
      model: "claude-sonnet-4-5",
      cwd: tmpdir(),
      tools: [],
      allowedTools: ["mcp__t__lookup", "mcp__t__send"],
      maxTurns: 5,
      env: { ANTHROPIC_BASE_URL: baseUrl, ANTHROPIC_AUTH_TOKEN: "scripted", ANTHROPIC_API_KEY: "" },
    },
    toolServers: { t: { tools: [lookup, send] } },
  });
}

export class MemoryEvents implements EventWriter {
  readonly events: { type: string; payload: Record<string, unknown> }[] = [];

  write(type: string, payload: Record<string, unknown>): void {
    this.events.push({ type, payload });
  }
}

const DEFAULT_APPROVAL: Record<ToolEffect, boolean> = {
  read: false,
  idempotent_write: false,
  non_idempotent_write: true,
  unclassified: true,
};

type Item = Record<string, unknown>;

export interface TurnOptions {
  messages?: AgentMessage[];
  frameworkRunState?: string | null;
  toolCalls?: AgentToolCall[];
  toolPolicies?: Record<string, ToolPolicy>;
  signal?: AbortSignal;
}

/** A turn context as serveRunners builds it, with the core's policy resolution rules. */
export function turnContext(options: TurnOptions = {}): AgentTurnContext<Item> {
  const messages = options.messages ?? [];
  const toolPolicies = options.toolPolicies ?? {};
  return {
    flowType: "Test",
    flowId: "flow-1",
    turnId: "turn-1",
    attempt: 1,
    stepExecutionId: "step-1",
    history: { firstSequence: 1, lastSequence: messages.length },
    messages,
    items: messages.map((message) => JSON.parse(message.frameworkItem) as Item),
    frameworkRunState: options.frameworkRunState ?? null,
    toolCalls: options.toolCalls ?? [],
    events: new MemoryEvents(),
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

/** Stored messages as the engine keeps them: a user text, or what a runner returned. */
export function stored(
  messages: { role: "user" | "assistant" | "tool"; frameworkItem: string; text?: string | null }[],
): AgentMessage[] {
  return messages.map((message, index) => ({
    sequence: index + 1,
    turnId: "turn-1",
    role: message.role,
    text: message.text ?? null,
    toolCallId: null,
    toolName: null,
    toolArguments: null,
    toolOutput: null,
    frameworkItem: message.frameworkItem,
    createdAt: new Date(0).toISOString(),
  }));
}

export const userText = (text: string): AgentMessage[] =>
  stored([{ role: "user", frameworkItem: JSON.stringify({ kind: "user_text", text }), text }]);

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
    effect: "unclassified",
    requiresApproval: true,
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
export function toolExecution(toolCall: AgentToolCall): DeferredToolExecution<Item> {
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

/** Narrows an outcome to its kind, failing the test otherwise. */
export function expectKind<K extends AgentTurnOutcome["kind"]>(
  outcome: AgentTurnOutcome,
  kind: K,
): Extract<AgentTurnOutcome, { kind: K }> {
  if (outcome.kind !== kind) throw new Error(`expected ${kind}, got ${JSON.stringify(outcome)}`);
  return outcome as Extract<AgentTurnOutcome, { kind: K }>;
}

/** The texts and tool results of a request's messages, in order. */
export function textsOf(body: AnthropicBody): string[] {
  const found: string[] = [];
  for (const message of body.messages) {
    const blocks = typeof message.content === "string" ? [{ type: "text", text: message.content }] : message.content;
    for (const block of blocks) {
      if (block.type === "text") found.push(String(block.text));
      if (block.type === "tool_result") {
        const content = block.content;
        found.push(
          typeof content === "string"
            ? content
            : (content as { text?: string }[]).map((part) => part.text ?? "").join(""),
        );
      }
    }
  }
  return found;
}
