/**
 * The runner's in-process tools: SDK MCP tool definitions (`tool(...)`) by server key. The
 * runner makes the servers of each CLI run from them (`createSdkMcpServer`), with handlers that
 * answer a call with a recorded result when the runner's hook handed one over; a tool Step calls
 * the definition's own handler. A write call (effect not `read`) never runs inside the CLI: the
 * hook defers it, dex-agents runs it in a tool Step, and the resumed run gets the recorded
 * result from the run's server instead of running the tool again.
 */
import {
  createSdkMcpServer,
  type McpSdkServerConfigWithInstance,
  type SdkMcpToolDefinition,
} from "@anthropic-ai/claude-agent-sdk";
import { z } from "zod";
import { type ToolEffect, ToolExecutionError, texts } from "./dex.js";
import { notRunnerTool } from "./texts.js";

/** One in-process MCP server's tools; the model sees them as `mcp__<key>__<tool name>`. */
export interface ToolServer {
  /** The MCP server's name (the key by default). */
  name?: string;
  version?: string;
  // biome-ignore lint/suspicious/noExplicitAny: the SDK's own type for a tool of any schema
  tools: SdkMcpToolDefinition<any>[];
}

/** The result an SDK MCP tool's handler returns (MCP `CallToolResult`). */
export interface ToolResult {
  content: { type: string; text?: string; [key: string]: unknown }[];
  isError?: boolean;
}

/** What a tool Step recorded for a call, as the model sees it. */
export interface RecordedResult {
  text: string;
  isError: boolean;
}

/** Recorded results the hook let through, waiting for the CLI's MCP call of the same tool and
 *  arguments (the MCP call does not carry the tool_use ID). */
export class RecordedResults {
  readonly #waiting = new Map<string, RecordedResult[]>();

  #handed = 0;

  handOver(toolName: string, args: unknown, result: RecordedResult): void {
    this.#handed += 1;
    const key = `${toolName}\u0000${canonical(args)}`;
    this.#waiting.set(key, [...(this.#waiting.get(key) ?? []), result]);
  }

  /** Whether every result handed over was taken by a call of the CLI (and at least one was). */
  allTaken(): boolean {
    return this.#handed > 0 && [...this.#waiting.values()].every((waiting) => waiting.length === 0);
  }

  take(toolName: string, args: unknown): RecordedResult | undefined {
    return this.#waiting.get(`${toolName}\u0000${canonical(args)}`)?.shift();
  }
}

/** The name the model and the PreToolUse hook see for a tool. */
export const fullName = (serverKey: string, toolName: string): string => `mcp__${serverKey}__${toolName}`;

/** A tool's effect from its MCP annotations (null: left to policies and the default). */
// biome-ignore lint/suspicious/noExplicitAny: as ToolServer.tools
export function annotationEffect(definition: SdkMcpToolDefinition<any>): ToolEffect | null {
  if (definition.annotations?.readOnlyHint) return "read";
  if (definition.annotations?.idempotentHint) return "idempotent_write";
  return null;
}

interface Entry {
  key: string;
  // biome-ignore lint/suspicious/noExplicitAny: as ToolServer.tools
  definition: SdkMcpToolDefinition<any>;
}

/** The runner's tool servers, by the names the model sees. */
export class SdkTools {
  readonly #servers: Readonly<Record<string, ToolServer>>;
  readonly #tools = new Map<string, Entry>();

  constructor(servers: Readonly<Record<string, ToolServer>>) {
    this.#servers = servers;
    for (const [key, server] of Object.entries(servers)) {
      for (const definition of server.tools) this.#tools.set(fullName(key, definition.name), { key, definition });
    }
  }

  /** The tool servers, by key. */
  get servers(): Readonly<Record<string, ToolServer>> {
    return this.#servers;
  }

  /** Each tool's effect from its annotations, by the name the model sees. */
  effect(toolName: string): ToolEffect | null | undefined {
    const entry = this.#tools.get(toolName);
    return entry === undefined ? undefined : annotationEffect(entry.definition);
  }

  get names(): string[] {
    return [...this.#tools.keys()];
  }

  /** Runs the tool's own handler with the model's arguments (a tool Step). */
  async call(toolName: string, argumentsText: string): Promise<ToolResult> {
    const entry = this.#tools.get(toolName);
    if (entry === undefined) throw new ToolExecutionError(notRunnerTool(toolName));
    let args: unknown;
    try {
      args = JSON.parse(argumentsText || "{}");
    } catch {
      throw new ToolExecutionError(texts.argumentsNotJsonText(toolName));
    }
    const parsed = z.object(entry.definition.inputSchema).safeParse(args);
    if (!parsed.success) {
      throw new ToolExecutionError(texts.invalidArgumentsText(toolName, parsed.error.message));
    }
    return (await entry.definition.handler(parsed.data, {})) as ToolResult;
  }

  /** The servers of one CLI run: each call answered with a recorded result when one waits, by
   *  the tool's own handler otherwise (a read, or a call the hook let the CLI run). */
  serving(recorded: RecordedResults): Record<string, McpSdkServerConfigWithInstance> {
    const servers: Record<string, McpSdkServerConfigWithInstance> = {};
    for (const [key, server] of Object.entries(this.#servers)) {
      const tools = server.tools.map((definition) => ({
        ...definition,
        handler: async (args: Record<string, unknown>, extra: unknown) => {
          const found = recorded.take(fullName(key, definition.name), args);
          if (found === undefined) return await definition.handler(args, extra);
          return { content: [{ type: "text" as const, text: found.text }], isError: found.isError };
        },
      }));
      servers[key] = createSdkMcpServer({
        name: server.name ?? key,
        version: server.version ?? "1.0.0",
        tools,
        alwaysLoad: true,
      });
    }
    return servers;
  }
}

/** The text parts of a tool result (other parts as JSON). */
export function resultText(result: ToolResult): string {
  return result.content.map((block) => (block.type === "text" ? (block.text ?? "") : JSON.stringify(block))).join("");
}

function canonical(value: unknown): string {
  return JSON.stringify(sorted(value));
}

function sorted(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sorted);
  if (typeof value === "object" && value !== null) {
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((k) => [k, sorted((value as Record<string, unknown>)[k])]),
    );
  }
  return value;
}
