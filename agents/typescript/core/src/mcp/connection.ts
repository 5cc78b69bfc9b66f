/**
 * One connection per request: a bounded initialize handshake, the request, then the end of
 * the connection. An HTTP server's protocol session ends with a DELETE; a stdio server's
 * process ends with it.
 */

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";
import { DEFAULT_HANDSHAKE_TIMEOUT_MS, type McpServerConfig } from "./config.js";

/** JSON-RPC errors the SDK also uses for an HTTP error status, a connection closed and a
 *  request timed out: a gateway can send them after the server ran the call, so they count
 *  as no result. */
export const NO_RESULT_CODES: ReadonlySet<number> = new Set([
  ErrorCode.InternalError,
  ErrorCode.ParseError,
  ErrorCode.ConnectionClosed,
  ErrorCode.RequestTimeout,
]);

/** The connection or its handshake failed, so no request was sent. */
export class HandshakeFailed extends Error {
  override name = "HandshakeFailed";
}

/** A connected client and whether its server keeps a protocol session (HTTP with an
 *  `Mcp-Session-Id`, or any stdio server, whose process is the session). */
export interface Connection {
  client: Client;
  sessionBound: boolean;
}

function transportOf(server: McpServerConfig): Transport {
  if (server.transport === "http") {
    return new StreamableHTTPClientTransport(new URL(server.url), {
      requestInit: { headers: { ...(server.headers ?? {}) } },
    });
  }
  return new StdioClientTransport({
    command: server.command,
    args: [...(server.args ?? [])],
    ...(server.env === undefined ? {} : { env: { ...server.env } }),
    ...(server.cwd === undefined ? {} : { cwd: server.cwd }),
  });
}

/** Runs `work` on a new connection; the connection is closed (and an HTTP session deleted)
 *  whatever happens. A failed or late handshake raises HandshakeFailed. */
export async function withConnection<T>(
  server: McpServerConfig,
  work: (connection: Connection) => Promise<T>,
): Promise<T> {
  const transport = transportOf(server);
  const client = new Client({ name: "dex-agents", version: "0.1.0" }, { capabilities: {} });
  const timeout = server.handshakeTimeoutMs ?? DEFAULT_HANDSHAKE_TIMEOUT_MS;
  try {
    await client.connect(transport, { timeout });
  } catch (error) {
    await client.close().catch(() => undefined);
    const late = error instanceof McpError && error.code === ErrorCode.RequestTimeout;
    throw new HandshakeFailed(
      late ? `the handshake took longer than ${timeout / 1000} s` : describe(error),
      { cause: error },
    );
  }
  const http = transport instanceof StreamableHTTPClientTransport ? transport : null;
  try {
    return await work({ client, sessionBound: http === null || http.sessionId !== undefined });
  } finally {
    if (http?.sessionId !== undefined) await http.terminateSession().catch(() => undefined);
    await client.close().catch(() => undefined);
  }
}

/** The JSON-RPC error in `error` or its causes. */
export function mcpError(error: unknown): McpError | null {
  let current: unknown = error;
  for (let depth = 0; depth < 8 && current !== undefined && current !== null; depth++) {
    if (current instanceof McpError) return current;
    current = (current as { cause?: unknown }).cause;
  }
  return null;
}

export function describe(error: unknown): string {
  if (error instanceof Error) return error.message ? `${error.name}: ${error.message}` : error.name;
  return String(error);
}
