/**
 * McpToolSource: the tools of MCP servers configured in the runner's code, named
 * `<server>__<tool>`, each call in its own tool Step on a new connection with the idempotency
 * key in `_meta` (the TypeScript twin of the Python core's `dex_agents.mcp.McpToolSource`).
 */

import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import {
  CallToolResultSchema,
  CreateTaskResultSchema,
  type Tool as McpSdkTool,
} from "@modelcontextprotocol/sdk/types.js";
import type {
  AgentToolCall,
  AgentToolCallRecord,
  DeferredToolCall,
  DeferredToolExecution,
  DeferredToolOutcome,
  ToolEffect,
  ToolPolicy,
  ToolTaskCancellation,
  ToolTaskPoll,
  ToolTaskPollOutcome,
} from "../runner.js";
import { resolveToolPolicy, ToolExecutionError } from "../runner.js";
import type { FunctionToolDefinition } from "../texts.js";
import type { CallableToolSource, PolicyResolver, SourceTool, ToolSource } from "../tool-source.js";
import {
  DEFAULT_TASK_OUTAGE_MS,
  DEFAULT_TASK_TTL_MS,
  DEFAULT_TASK_WAIT_MS,
  type HttpServer,
  type McpServerConfig,
} from "./config.js";
import {
  type Connection,
  describe,
  HandshakeFailed,
  mcpError,
  NO_RESULT_CODES,
  withConnection,
} from "./connection.js";
import {
  agentToolName,
  annotationEffect,
  IDEMPOTENCY_KEY_META,
  intervalSeconds,
  isUsableToolName,
} from "./names.js";
import { resultOf } from "./results.js";
import {
  dumpCheckpoint,
  dumpContinuation,
  loadCheckpoint,
  loadContinuation,
  McpTaskLostError,
  McpTaskUnreachableError,
  McpToolCallInterruptedError,
  TaskPoller,
  waitOutOutage,
} from "./tasks.js";

/** The event a task poll writes when the task's status changed. */
export const STATUS_EVENT = "mcp.task_status";
// A request's own bound: a tool's run is bounded by its Step, not by the SDK's 60 s default.
const REQUEST_TIMEOUT_MS = 24 * 60 * 60 * 1000;

/** One listed MCP tool as the agent sees it. */
export interface McpTool extends SourceTool {
  readonly server: string;
  readonly mcpName: string;
  /** The tool's `execution.taskSupport` ("forbidden" when absent). */
  readonly taskSupport: "required" | "optional" | "forbidden";
}

export interface McpToolSourceOptions {
  /** Explicit policies by agent tool name; they win over the annotations. */
  policies?: Readonly<Record<string, ToolPolicy>>;
  /** The TTL asked for a task the session polls across Steps (24 hours by default). */
  taskTtlMs?: number;
  /** Where a left-out server or tool, and a task poll that could not reach its server, are
   *  reported (console.warn by default). */
  warn?: (message: string) => void;
}

/**
 * `listTools()` lists every server once and caches the result; a server that cannot be listed,
 * and a name that collides with an earlier one, are left out with a warning.
 */
export class McpToolSource implements ToolSource, CallableToolSource {
  readonly servers: ReadonlyMap<string, McpServerConfig>;
  readonly policies: Readonly<Record<string, ToolPolicy>>;
  readonly taskTtlMs: number;
  private listed: Map<string, McpTool> | null = null;
  private readonly warn: (message: string) => void;

  constructor(servers: readonly McpServerConfig[], options: McpToolSourceOptions = {}) {
    const servers_ = new Map<string, McpServerConfig>();
    for (const server of servers) {
      if (servers_.has(server.name)) {
        throw new RangeError(`two MCP servers are named ${JSON.stringify(server.name)}`);
      }
      servers_.set(server.name, server);
    }
    this.servers = servers_;
    this.policies = { ...(options.policies ?? {}) };
    this.taskTtlMs = options.taskTtlMs ?? DEFAULT_TASK_TTL_MS;
    if (!(this.taskTtlMs > 0)) throw new RangeError("taskTtlMs must be positive");
    this.warn = options.warn ?? ((message) => console.warn(message));
  }

  // Listing ----------------------------------------------------------------------------------

  async listTools(options: { refresh?: boolean } = {}): Promise<readonly McpTool[]> {
    if (this.listed === null || options.refresh === true) {
      const tools = new Map<string, McpTool>();
      for (const server of this.servers.values()) {
        for (const tool of await this.listServer(server)) this.add(tools, tool);
      }
      this.listed = tools;
    }
    return [...this.listed.values()];
  }

  /** The cached tools by agent name; empty before `listTools()`. */
  get tools(): ReadonlyMap<string, McpTool> {
    return new Map(this.listed ?? []);
  }

  private async listServer(server: McpServerConfig): Promise<McpTool[]> {
    try {
      const listed = await withConnection(server, ({ client }) => listAll(client));
      return listed.map((tool) => asAgentTool(server.name, tool));
    } catch (error) {
      this.warn(
        `MCP server ${server.name} left out: its tools could not be listed: ${describe(error)}`,
      );
      return [];
    }
  }

  private add(tools: Map<string, McpTool>, tool: McpTool): void {
    const which = `MCP tool ${JSON.stringify(tool.mcpName)} of server ${tool.server} left out`;
    if (!isUsableToolName(tool.name)) {
      this.warn(
        `${which}: ${JSON.stringify(tool.name)} is not a usable tool name ` +
          "(1 to 64 letters, digits, '_' or '-')",
      );
    } else if (tools.has(tool.name)) {
      this.warn(`${which}: its name ${JSON.stringify(tool.name)} is taken by an earlier tool`);
    } else {
      tools.set(tool.name, tool);
    }
  }

  // Policies ---------------------------------------------------------------------------------

  /** The source's explicit policies under the application's, which win. */
  mergeToolPolicies(
    applicationPolicies: Readonly<Record<string, ToolPolicy>> = {},
  ): Record<string, ToolPolicy> {
    return { ...this.policies, ...applicationPolicies };
  }

  /** The call's policy: an explicit ToolPolicy wins, then the annotation effect. */
  resolvePolicy(
    name: string,
    resolve?: PolicyResolver,
    defaultEffect: ToolEffect = "unclassified",
  ): ToolPolicy {
    const tool = this.cached(name);
    if (resolve !== undefined) {
      const explicit = this.policies[name] ?? {};
      return resolve(name, explicit.effect || tool.effect, explicit.requiresApproval ?? null);
    }
    return resolveToolPolicy(name, this.policies, defaultEffect, tool.effect);
  }

  deferredToolCall(
    toolCallId: string,
    name: string,
    argumentsText: string,
    resolve?: PolicyResolver,
  ): DeferredToolCall {
    const tool = this.cached(name);
    return {
      toolCallId,
      toolName: name,
      arguments: argumentsText,
      policy: this.resolvePolicy(name, resolve),
      toolSourceReference: JSON.stringify({ server: tool.server, tool: tool.mcpName }),
    };
  }

  toolDefinitions(): FunctionToolDefinition[] {
    return [...(this.listed?.values() ?? [])].map((tool) => ({
      type: "function",
      function: { name: tool.name, description: tool.description, parameters: tool.parameters },
    }));
  }

  hasTool(name: string): boolean {
    return this.listed?.has(name) ?? false;
  }

  /** A record whose reference names one of this source's servers, or an unreferenced record
   *  of a listed tool. */
  owns(record: AgentToolCall | AgentToolCallRecord): boolean {
    if (record.toolSourceReference === null || record.toolSourceReference === undefined) {
      return this.hasTool(record.toolName);
    }
    try {
      return this.servers.has(this.reference(record)[0]);
    } catch {
      return false;
    }
  }

  private cached(name: string): McpTool {
    const tool = this.listed?.get(name);
    if (tool === undefined) {
      throw new RangeError(
        `no listed MCP tool is named ${JSON.stringify(name)}; call listTools() first`,
      );
    }
    return tool;
  }

  // Calls ------------------------------------------------------------------------------------

  /** Runs the call in the tool Step, from the record's reference (no listing). A retried
   *  attempt of an HTTP task saved as the attempt's checkpoint returns (or polls) that task
   *  instead of calling again. */
  async executeDeferredToolCall(call: DeferredToolExecution): Promise<DeferredToolOutcome> {
    const record = call.toolCall;
    const [serverName, mcpName] = this.reference(record);
    const server = this.server(serverName);
    const saved = loadCheckpoint(call.heartbeatCheckpoint);
    if (saved !== null && saved.server === serverName && server.transport === "http") {
      if (call.supportsToolTasks) {
        return {
          kind: "tool_task_started",
          taskId: saved.taskId,
          pollIntervalSeconds: saved.pollIntervalSeconds,
        };
      }
      return await this.waitOnNewConnection(
        server,
        mcpName,
        saved.taskId,
        saved.pollIntervalSeconds,
        call,
      );
    }
    const args = parseArguments(record.arguments, record.toolName);
    call.heartbeat();
    return await this.call(serverName, mcpName, args, call.idempotencyKey, call);
  }

  /** One `tools/call` on a new connection with the key in `_meta`, for a framework tool that
   *  runs in the adapter's own tool Step; a task it starts is polled to its end here. */
  async callTool(
    serverName: string,
    mcpName: string,
    args: Record<string, unknown>,
    idempotencyKey: string,
    signal?: AbortSignal,
  ): Promise<string> {
    const outcome = await this.call(serverName, mcpName, args, idempotencyKey, null, signal);
    if (outcome.kind !== "tool_execution_result") {
      throw new TypeError(`MCP tool ${mcpName} returned ${outcome.kind}`);
    }
    return outcome.output;
  }

  /** Calls the listed tool `name` (an agent name) with the key in `_meta`. */
  async callListedTool(
    name: string,
    args: Record<string, unknown>,
    idempotencyKey: string,
    signal?: AbortSignal,
  ): Promise<string> {
    const tool = this.cached(name);
    return await this.callTool(tool.server, tool.mcpName, args, idempotencyKey, signal);
  }

  /** One `tasks/get` of the call's task (a stateless HTTP server's task). A server that cannot
   *  be reached is polled again at the growing interval for its `taskOutageMs` from the
   *  outage's first poll (`waitOutOutage`), so a restart loses nothing; then the poll fails. */
  async pollToolTask(poll: ToolTaskPoll): Promise<ToolTaskPollOutcome> {
    const [serverName, mcpName] = this.reference(poll.toolCall);
    const server = this.server(serverName);
    const taskId = poll.toolCall.taskId;
    if (!taskId)
      throw new McpTaskLostError(`tool call ${poll.toolCall.toolCallId} has no MCP task`);
    try {
      return await withConnection(server, async ({ client }) => {
        const poller = new TaskPoller(client, serverName, mcpName, taskId, REQUEST_TIMEOUT_MS);
        const state = await poller.read();
        poll.heartbeat();
        const previous = loadContinuation(poll.toolCall.inputContinuation);
        if (state.status !== previous.status) {
          poll.events.write(STATUS_EVENT, {
            tool_call_id: poll.toolCall.toolCallId,
            task_id: taskId,
            status: state.status,
            status_message: state.statusMessage ?? null,
          });
        }
        if (TaskPoller.ends(state)) return await poller.finished(state);
        const interval = intervalSeconds(state.pollInterval, poll.toolCall.taskPollIntervalSeconds);
        return {
          kind: "tool_task_pending",
          pollIntervalSeconds: interval,
          continuation: dumpContinuation({ status: state.status, unreachableSince: null }),
        };
      });
    } catch (error) {
      const failure = pollError(serverName, taskId, error);
      if (failure instanceof McpTaskUnreachableError && server.transport === "http") {
        return waitOutOutage(
          poll,
          failure,
          server.taskOutageMs ?? DEFAULT_TASK_OUTAGE_MS,
          this.warn,
        );
      }
      throw failure;
    }
  }

  /** Sends `tasks/cancel` for the call's task; any answer from the server counts as done. */
  async cancelToolTask(cancellation: ToolTaskCancellation): Promise<void> {
    const taskId = cancellation.toolCall.taskId;
    if (!taskId) return;
    const [serverName] = this.reference(cancellation.toolCall);
    const server = this.server(serverName);
    try {
      await withConnection(server, ({ client }) =>
        client.experimental.tasks.cancelTask(taskId, { timeout: REQUEST_TIMEOUT_MS }),
      );
    } catch (error) {
      const found = mcpError(error);
      if (found === null || NO_RESULT_CODES.has(found.code)) {
        throw new McpTaskUnreachableError(
          `MCP server ${serverName} could not be reached to cancel task ${taskId}: ${describe(error)}`,
          { cause: error },
        );
      }
    }
  }

  private server(serverName: string): McpServerConfig {
    const server = this.servers.get(serverName);
    if (server === undefined) {
      throw new ToolExecutionError(
        `MCP server ${JSON.stringify(serverName)} is not configured on this runner`,
      );
    }
    return server;
  }

  private reference(record: AgentToolCall | AgentToolCallRecord): [string, string] {
    const reference = record.toolSourceReference;
    if (reference === null || reference === undefined) {
      const tool = this.listed?.get(record.toolName);
      if (tool === undefined)
        throw new ToolExecutionError(`unknown tool ${JSON.stringify(record.toolName)}`);
      return [tool.server, tool.mcpName];
    }
    try {
      const parsed = JSON.parse(reference) as { server?: unknown; tool?: unknown };
      if (typeof parsed.server === "string" && typeof parsed.tool === "string") {
        return [parsed.server, parsed.tool];
      }
    } catch {
      // falls through
    }
    throw new ToolExecutionError(
      `tool ${record.toolName}: its MCP reference ${JSON.stringify(reference.slice(0, 80))} is not readable`,
    );
  }

  private async call(
    serverName: string,
    mcpName: string,
    args: Record<string, unknown>,
    idempotencyKey: string,
    call: DeferredToolExecution | null,
    signal?: AbortSignal,
  ): Promise<DeferredToolOutcome> {
    const server = this.server(serverName);
    const options = { timeout: REQUEST_TIMEOUT_MS, signal: signal ?? call?.cancellationSignal };
    let sent = false;
    try {
      return await withConnection(server, async (connection) => {
        // Listed on the call's own connection: the SDK checks a tool's output schema and its
        // taskSupport from the listing.
        const listed = await listAll(connection.client);
        const params = {
          name: mcpName,
          arguments: args,
          _meta: { [IDEMPOTENCY_KEY_META]: idempotencyKey },
        };
        const required =
          listed.find((tool) => tool.name === mcpName)?.execution?.taskSupport === "required";
        sent = true;
        if (required) return await this.task(server, connection, params, call, options.signal);
        const result = await connection.client.callTool(params, CallToolResultSchema, options);
        return resultOf(serverName, mcpName, result);
      });
    } catch (error) {
      if (error instanceof HandshakeFailed) {
        throw new ToolExecutionError(
          `MCP server ${serverName} could not be reached, so ${mcpName} was not called: ${error.message}`,
        );
      }
      if (isOwnError(error)) throw error;
      throw callError(serverName, mcpName, error, sent);
    }
  }

  /** A task-required tool: the task is created with a TTL, saved as the attempt's checkpoint
   *  when any connection can poll it, handed to the session when the runner polls tasks, and
   *  polled here otherwise. */
  private async task(
    server: McpServerConfig,
    { client, sessionBound }: Connection,
    params: { name: string; arguments: Record<string, unknown>; _meta: Record<string, string> },
    call: DeferredToolExecution | null,
    signal: AbortSignal | undefined,
  ): Promise<DeferredToolOutcome> {
    const waitMs = server.taskWaitMs ?? DEFAULT_TASK_WAIT_MS;
    const ttl = sessionBound ? 4 * waitMs : this.taskTtlMs;
    const created = await client.request({ method: "tools/call", params }, CreateTaskResultSchema, {
      timeout: REQUEST_TIMEOUT_MS,
      task: { ttl },
      ...(signal ? { signal } : {}),
    });
    const taskId = created.task.taskId;
    const interval = intervalSeconds(created.task.pollInterval);
    if (call !== null && !sessionBound) {
      await call.saveHeartbeatCheckpoint(
        dumpCheckpoint({ server: server.name, taskId, pollIntervalSeconds: interval }),
      );
      if (call.supportsToolTasks) {
        return { kind: "tool_task_started", taskId, pollIntervalSeconds: interval };
      }
    }
    const poller = new TaskPoller(client, server.name, params.name, taskId, REQUEST_TIMEOUT_MS);
    return await poller.wait(interval, waitMs, call?.heartbeat ?? (() => undefined), signal);
  }

  private async waitOnNewConnection(
    server: HttpServer,
    mcpName: string,
    taskId: string,
    interval: number,
    call: DeferredToolExecution,
  ): Promise<DeferredToolOutcome> {
    try {
      return await withConnection(server, ({ client }) =>
        new TaskPoller(client, server.name, mcpName, taskId, REQUEST_TIMEOUT_MS).wait(
          interval,
          server.taskWaitMs ?? DEFAULT_TASK_WAIT_MS,
          call.heartbeat,
          call.cancellationSignal,
        ),
      );
    } catch (error) {
      throw pollError(server.name, taskId, error);
    }
  }
}

async function listAll(client: Client): Promise<McpSdkTool[]> {
  const tools: McpSdkTool[] = [];
  let cursor: string | undefined;
  do {
    const page = await client.listTools(cursor === undefined ? {} : { cursor }, {
      timeout: REQUEST_TIMEOUT_MS,
    });
    tools.push(...page.tools);
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  return tools;
}

function asAgentTool(server: string, tool: McpSdkTool): McpTool {
  return {
    name: agentToolName(server, tool.name),
    server,
    mcpName: tool.name,
    description: tool.description || tool.title || tool.name,
    parameters: tool.inputSchema as Record<string, unknown>,
    effect: annotationEffect(tool.annotations),
    taskSupport: tool.execution?.taskSupport ?? "forbidden",
  };
}

function parseArguments(text: string, toolName: string): Record<string, unknown> {
  let value: unknown = null;
  try {
    value = JSON.parse(text || "{}");
  } catch {
    // not JSON: the same error as any other non-object
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new ToolExecutionError(
      `invalid arguments for tool ${toolName}: arguments must be a JSON object`,
    );
  }
  return value as Record<string, unknown>;
}

function isOwnError(error: unknown): boolean {
  return (
    error instanceof ToolExecutionError ||
    error instanceof McpToolCallInterruptedError ||
    error instanceof McpTaskLostError
  );
}

function callError(server: string, tool: string, error: unknown, sent: boolean): Error {
  const found = mcpError(error);
  if (found !== null && !NO_RESULT_CODES.has(found.code)) {
    return new ToolExecutionError(`MCP tool ${tool} of server ${server} failed: ${found.message}`);
  }
  if (!sent) {
    return new ToolExecutionError(
      `MCP server ${server} could not be reached, so ${tool} was not called: ${describe(error)}`,
    );
  }
  return new McpToolCallInterruptedError(
    `MCP tool ${tool} of server ${server} was called and no result came back: ${describe(error)}`,
  );
}

/** An unknown task fails the attempt as lost; an unreachable server is McpTaskUnreachableError,
 *  which a poll waits out for the server's `taskOutageMs` before it fails the attempt. */
function pollError(server: string, taskId: string, error: unknown): Error {
  if (isOwnError(error)) return error as Error;
  const found = mcpError(error);
  if (found !== null && !NO_RESULT_CODES.has(found.code)) {
    return new McpTaskLostError(
      `MCP server ${server} does not know task ${taskId}: ${found.message}`,
    );
  }
  return new McpTaskUnreachableError(
    `MCP server ${server} could not be reached to read task ${taskId}: ${describe(error)}`,
    { cause: error },
  );
}
