/**
 * Tool sources (the core's `CallableToolSource`: `McpToolSource` of
 * `@superdurable/dex-agents/mcp`, or any other) served to the Claude Code CLI as in-process SDK
 * MCP servers, one per source key.
 *
 * The SDK's `tool()` builds a tool's definition from a zod shape, and a source gives JSON
 * Schemas; the CLI connects an in-process server by calling its instance's `connect(transport)`,
 * so each run's server is an MCP SDK `McpServer` whose low-level `tools/list` handler returns the
 * source's tools with their JSON Schemas as they are, and whose `tools/call` handler answers a
 * call with a result a tool Step recorded (handed over by the runner's hook, as for
 * `toolServers`), else calls the source. The model sees a tool as `mcp__<key>__<tool>`.
 *
 * A write call (the effect `sourceToolPolicy` declares, then the session's policies) is deferred
 * by the hook and runs in its tool Step through `callSourceTool`, with the Step's idempotency
 * key. A read runs inside the CLI run: no tool Step gives it a key, so it is called with the key
 * its tool Step would have had, `<flow>/<turn>/<tool_use ID>` (the CLI sends the ID in the call's
 * `_meta`), or, without an ID, the RunModel Step's `<flow>/<turn>/<step execution ID>`.
 */
import type { McpSdkServerConfigWithInstance } from "@anthropic-ai/claude-agent-sdk";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { CallToolRequestSchema, type CallToolResult, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import {
  type AgentTurnContext,
  type CallableToolSource,
  callSourceTool,
  type SourceTool,
  sourceToolPolicy,
  ToolExecutionError,
  type ToolPolicy,
  texts,
} from "./dex.js";
import { notRunnerTool } from "./texts.js";
import { fullName, type RecordedResults } from "./tools.js";

/** The `_meta` key under which the CLI sends a call's tool_use ID. */
export const TOOL_USE_ID_META = "claudecode/toolUseId";

interface Listed {
  key: string;
  source: CallableToolSource;
  tool: SourceTool;
  policy: ToolPolicy;
}

/** The runner's tool sources, by key: each run's `listing()`. */
export class SourceTools {
  readonly #sources: Readonly<Record<string, CallableToolSource>>;

  constructor(sources: Readonly<Record<string, CallableToolSource>>) {
    this.#sources = sources;
  }

  get keys(): string[] {
    return Object.keys(this.#sources);
  }

  /** Every source's tools, for one run (each source lists once and caches its tools); the
   *  runner, shared by the Worker's sessions, keeps none of it. */
  async listing(): Promise<SourceListing> {
    const tools = new Map<string, Listed>();
    for (const [key, source] of Object.entries(this.#sources)) {
      for (const tool of await source.listTools()) {
        tools.set(fullName(key, tool.name), { key, source, tool, policy: sourceToolPolicy(source, tool) });
      }
    }
    return new SourceListing(this.keys, tools);
  }
}

/** The sources' tools as one run sees them, by the names the model sees. */
export class SourceListing {
  readonly #keys: readonly string[];
  readonly #tools: ReadonlyMap<string, Listed>;

  constructor(keys: readonly string[], tools: ReadonlyMap<string, Listed>) {
    this.#keys = keys;
    this.#tools = tools;
  }

  /** What a listed tool declares (the source's explicit policy, else its own effect), by the
   *  name the model sees; undefined for a name that is not a source's tool. */
  declared(toolName: string): ToolPolicy | undefined {
    return this.#tools.get(toolName)?.policy;
  }

  has(toolName: string): boolean {
    return this.#tools.has(toolName);
  }

  /** Calls the tool from inside its tool Step (`withToolExecution`): the Step's key. */
  async call(toolName: string, argumentsText: string, signal?: AbortSignal): Promise<string> {
    const entry = this.#tools.get(toolName);
    if (entry === undefined) throw new ToolExecutionError(notRunnerTool(toolName));
    return await callSourceTool(entry.source, entry.tool.name, parseArguments(toolName, argumentsText), signal);
  }

  /** The servers of one CLI run, one per source key. */
  serving(recorded: RecordedResults, turn: AgentTurnContext): Record<string, McpSdkServerConfigWithInstance> {
    const servers: Record<string, McpSdkServerConfigWithInstance> = {};
    for (const key of this.#keys) {
      const tools = [...this.#tools.entries()].filter(([, entry]) => entry.key === key);
      servers[key] = { type: "sdk", name: key, instance: sourceServer(key, tools, recorded, turn) };
    }
    return servers;
  }
}

/** One run's MCP server of a source's tools. */
function sourceServer(
  key: string,
  tools: [string, Listed][],
  recorded: RecordedResults,
  turn: AgentTurnContext,
): McpServer {
  const server = new McpServer({ name: key, version: "1.0.0" }, { capabilities: { tools: {} } });
  const byName = new Map(tools.map(([name, entry]) => [entry.tool.name, { name, entry }]));
  server.server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: tools.map(([, { tool }]) => ({
      name: tool.name,
      description: tool.description,
      inputSchema: { type: "object" as const, ...tool.parameters },
      // As the SDK's createSdkMcpServer({ alwaysLoad: true }): offered from the first request.
      _meta: { "anthropic/alwaysLoad": true },
    })),
  }));
  server.server.setRequestHandler(CallToolRequestSchema, async (request, extra): Promise<CallToolResult> => {
    const found = byName.get(request.params.name);
    if (found === undefined) return errorResult(notRunnerTool(fullName(key, request.params.name)));
    const args = request.params.arguments ?? {};
    const handed = recorded.take(found.name, args);
    if (handed !== undefined) return { content: [{ type: "text", text: handed.text }], isError: handed.isError };
    const toolUseId = request.params._meta?.[TOOL_USE_ID_META];
    const id = typeof toolUseId === "string" && toolUseId !== "" ? toolUseId : turn.stepExecutionId;
    try {
      const text = await found.entry.source.callListedTool(
        found.entry.tool.name,
        args,
        `${turn.flowId}/${turn.turnId}/${id}`,
        extra.signal,
      );
      return { content: [{ type: "text", text }] };
    } catch (error) {
      return errorResult(error instanceof Error ? error.message : String(error));
    }
  });
  return server;
}

function errorResult(text: string): CallToolResult {
  return { content: [{ type: "text", text }], isError: true };
}

function parseArguments(toolName: string, argumentsText: string): Record<string, unknown> {
  let args: unknown;
  try {
    args = JSON.parse(argumentsText || "{}");
  } catch {
    throw new ToolExecutionError(texts.argumentsNotJsonText(toolName));
  }
  if (typeof args !== "object" || args === null || Array.isArray(args)) {
    throw new ToolExecutionError(texts.argumentsNotJsonText(toolName));
  }
  return args as Record<string, unknown>;
}
