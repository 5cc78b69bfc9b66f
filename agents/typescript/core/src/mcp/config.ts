/** Server configurations for McpToolSource. They come from the runner's code only, never from
 *  Flow input, a user message or a browser. */

import { serverNameProblem } from "./names.js";

export const DEFAULT_HANDSHAKE_TIMEOUT_MS = 30_000;
/** How long a tool Step waits for a task it polls itself, per attempt. */
export const DEFAULT_TASK_WAIT_MS = 600_000;
/** The TTL asked for a task the session polls across Steps (and Worker restarts). */
export const DEFAULT_TASK_TTL_MS = 24 * 60 * 60 * 1000;
/** How long the session keeps polling a task whose server cannot be reached (a
 *  `PollToolTask` over Streamable HTTP) before the call goes to its failure route: a server
 *  restart or an outage shorter than this loses nothing. */
export const DEFAULT_TASK_OUTAGE_MS = 60 * 60 * 1000;

interface Common {
  /** Names the server in `<server>__<tool>`: letters, digits, '-' and single '_'. */
  name: string;
  /** Bounds each connection's initialize handshake (30 s by default). */
  handshakeTimeoutMs?: number;
  /** Bounds a tool Step's own wait for a task it polls (10 minutes by default). */
  taskWaitMs?: number;
}

/** An MCP server started as a subprocess for each request (stdio). */
export interface StdioServer extends Common {
  transport: "stdio";
  command: string;
  args?: readonly string[];
  /** Added to the SDK's default environment (PATH, HOME, ...). */
  env?: Readonly<Record<string, string>>;
  cwd?: string;
}

/** An MCP server reached over Streamable HTTP at `url`. */
export interface HttpServer extends Common {
  transport: "http";
  url: string;
  headers?: Readonly<Record<string, string>>;
  /** How long a task the session polls is polled again while this server cannot be reached,
   *  from the outage's first poll, before the poll fails (an hour by default; 0 fails the
   *  first such poll). */
  taskOutageMs?: number;
}

export type McpServerConfig = StdioServer | HttpServer;

/** A checked stdio server configuration. */
export function stdioServer(config: Omit<StdioServer, "transport">): StdioServer {
  return check({ ...config, transport: "stdio" });
}

/** A checked Streamable HTTP server configuration. */
export function httpServer(config: Omit<HttpServer, "transport">): HttpServer {
  const server = check({ ...config, transport: "http" as const });
  if (!/^https?:\/\//.test(server.url)) {
    throw new RangeError(`MCP server ${server.name}: url must start with http:// or https://`);
  }
  const outage = server.taskOutageMs;
  if (outage !== undefined && !(outage >= 0)) {
    throw new RangeError(`MCP server ${server.name}: taskOutageMs must not be negative`);
  }
  return server;
}

export function check<T extends McpServerConfig>(server: T): T {
  const problem = serverNameProblem(server.name);
  if (problem !== null) throw new RangeError(problem);
  for (const field of ["handshakeTimeoutMs", "taskWaitMs"] as const) {
    const value = server[field];
    if (value !== undefined && !(value > 0)) {
      throw new RangeError(`MCP server ${server.name}: ${field} must be positive`);
    }
  }
  const transport: string = server.transport;
  if (transport !== "stdio" && transport !== "http") {
    throw new RangeError(`MCP server ${server.name}: transport must be "stdio" or "http"`);
  }
  return Object.freeze(server);
}
