/**
 * `@superdurable/dex-agents/mcp`: tools from MCP servers, with `@modelcontextprotocol/sdk` as
 * an optional peer dependency (the package's main entry imports no MCP SDK).
 *
 *   import { httpServer, McpToolSource, stdioServer } from "@superdurable/dex-agents/mcp";
 *
 *   const source = new McpToolSource([
 *     stdioServer({ name: "files", command: "npx", args: ["some-mcp-server"] }),
 *     httpServer({ name: "search", url: "http://127.0.0.1:8000/mcp" }),
 *   ]);
 *   const agent: AgentDefinition = { name: "Assistant", instructions, model, tools: [source] };
 *
 * Each server's tools are listed once and offered as `<server>__<tool>`. Every call runs in
 * the call's tool Step, on a new connection (an HTTP session ends with a DELETE), with the
 * idempotency key in `_meta`.
 */

export {
  DEFAULT_HANDSHAKE_TIMEOUT_MS,
  DEFAULT_TASK_OUTAGE_MS,
  DEFAULT_TASK_TTL_MS,
  DEFAULT_TASK_WAIT_MS,
  type HttpServer,
  httpServer,
  type McpServerConfig,
  type StdioServer,
  stdioServer,
} from "./mcp/config.js";
export {
  agentToolName,
  annotationEffect,
  IDEMPOTENCY_KEY_META,
  intervalSeconds,
  type ToolHints,
} from "./mcp/names.js";
export { contentText } from "./mcp/results.js";
export {
  type McpTool,
  McpToolSource,
  type McpToolSourceOptions,
  STATUS_EVENT,
} from "./mcp/source.js";
export {
  McpTaskLostError,
  McpTaskUnreachableError,
  McpToolCallInterruptedError,
} from "./mcp/tasks.js";
