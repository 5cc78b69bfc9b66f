/**
 * What the MCP source decides without the SDK: server names, the `<server>__<tool>` names the
 * model sees, the effect of a tool's annotations, and the `_meta` key of the idempotency key
 * (the same as the Python core's `dex_agents.mcp`).
 */

import type { ToolEffect } from "../runner.js";

/** The `_meta` entry of every `tools/call` that carries the call's idempotency key. */
export const IDEMPOTENCY_KEY_META = "io.superdurable.dex/idempotencyKey";

const SERVER_NAME = /^[A-Za-z0-9-]+(?:_[A-Za-z0-9-]+)*$/;
const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/** Why `name` cannot name an MCP server, or null. */
export function serverNameProblem(name: string): string | null {
  if (SERVER_NAME.test(name)) return null;
  return (
    `MCP server name ${JSON.stringify(name)} must be letters, digits, '-' and single '_' ` +
    "between them, so that '<server>__<tool>' names one server"
  );
}

/** The agent's name of tool `tool` of server `server`. */
export function agentToolName(server: string, tool: string): string {
  return `${server}__${tool}`;
}

/** Whether the model can be offered `name` (1 to 64 letters, digits, '_' or '-'). */
export function isUsableToolName(name: string): boolean {
  return TOOL_NAME.test(name);
}

/** MCP tool annotations, as far as the effect goes. */
export interface ToolHints {
  readOnlyHint?: boolean | undefined;
  idempotentHint?: boolean | undefined;
  destructiveHint?: boolean | undefined;
}

/**
 * The effect of a tool's annotations: readOnlyHint is read, idempotentHint is idempotent_write
 * whatever destructiveHint says; anything else (no annotations, only destructiveHint) is null,
 * so the session's policies and default decide. Only a hint that is `true` counts.
 */
export function annotationEffect(annotations: ToolHints | null | undefined): ToolEffect | null {
  if (annotations === null || annotations === undefined) return null;
  if (annotations.readOnlyHint === true) return "read";
  if (annotations.idempotentHint === true) return "idempotent_write";
  return null;
}

/** The next poll interval in seconds: the server's (ms), rounded up to whole seconds, or, when
 *  that is shorter, double the previous interval, up to a minute. */
export function intervalSeconds(serverMs: number | null | undefined, previous?: number | null) {
  const server = serverMs ? Math.max(1, Math.ceil(serverMs / 1000)) : 1;
  if (previous === null || previous === undefined) return server;
  return Math.max(server, Math.min(2 * Math.ceil(previous), 60));
}
