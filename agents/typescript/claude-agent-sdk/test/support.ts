/**
 * Test parts: the Python core's scripted Anthropic Messages server as a real process (the real
 * Claude Code CLI is pointed at it with ANTHROPIC_BASE_URL), the runner with two real in-process
 * SDK MCP tools, and the core's turn contexts (`@superdurable/dex-agents/testing`), events in
 * memory.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { tool } from "@anthropic-ai/claude-agent-sdk";
import {
  turnContext as context,
  toolExecution as execution,
  MemoryEvents,
  storedMessage,
  toolCallRecord,
} from "@superdurable/dex-agents/testing";
import { z } from "zod";
import type { AgentMessage, AgentToolCall, AgentTurnContext, AgentTurnOutcome, ToolPolicy } from "../src/dex.js";
import { ClaudeAgentRunner } from "../src/index.js";

export { MemoryEvents } from "@superdurable/dex-agents/testing";

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

type Item = Record<string, unknown>;

export interface TurnOptions {
  messages?: AgentMessage[];
  frameworkRunState?: string | null;
  toolCalls?: AgentToolCall[];
  toolPolicies?: Record<string, ToolPolicy>;
  signal?: AbortSignal;
}

/** A turn context as serveRunners builds it, events in memory (the core's test parts). */
export function turnContext(options: TurnOptions = {}): AgentTurnContext<Item> {
  return context<Item>(new MemoryEvents(), options);
}

/** Stored messages as the engine keeps them: a user text, or what a runner returned. */
export function stored(
  messages: { role: "user" | "assistant" | "tool"; frameworkItem: string; text?: string | null }[],
): AgentMessage[] {
  return messages.map((message, index) =>
    storedMessage(index + 1, message.role, message.frameworkItem, { text: message.text ?? null }),
  );
}

export const userText = (text: string): AgentMessage[] =>
  stored([{ role: "user", frameworkItem: JSON.stringify({ kind: "user_text", text }), text }]);

/** A final record of a deferred call: unclassified and approved unless `outcome` says otherwise. */
export function record(
  toolCallId: string,
  toolName: string,
  args: string,
  outcome: Pick<AgentToolCall, "status"> & Partial<AgentToolCall>,
): AgentToolCall {
  return toolCallRecord(toolCallId, toolName, args, { effect: "unclassified", requiresApproval: true, ...outcome });
}

/** A tool Step's execution of `toolCall`. */
export const toolExecution = execution<Item>;

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
