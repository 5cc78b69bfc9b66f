/** A `tools/call` result (or a completed task's) as the call's outcome, as the Python core
 *  maps it: the text blocks joined by lines, other blocks as their JSON, the structured content
 *  when there is no block; isError raises ToolExecutionError with that text. */

import type { ToolExecutionResult } from "../runner.js";
import { ToolExecutionError } from "../runner.js";
import { mcpToolFailed } from "../texts.js";

/** A call result as the SDK's schemas read it (a legacy `toolResult` one included). */
export interface McpCallResult {
  content?: readonly unknown[];
  structuredContent?: Record<string, unknown> | undefined;
  isError?: boolean | undefined;
  toolResult?: unknown;
  [key: string]: unknown;
}

export function resultOf(server: string, tool: string, result: McpCallResult): ToolExecutionResult {
  const text = contentText(result);
  if (result.isError === true) {
    throw new ToolExecutionError(text || mcpToolFailed(tool, server));
  }
  return { kind: "tool_execution_result", output: text };
}

export function contentText(result: McpCallResult): string {
  const parts: string[] = [];
  for (const block of result.content ?? []) {
    const text = (block as { text?: unknown }).text;
    parts.push(typeof text === "string" ? text : JSON.stringify(block));
  }
  if (parts.length === 0 && result.structuredContent !== undefined) {
    return JSON.stringify(result.structuredContent);
  }
  if (parts.length === 0 && result.content === undefined && result.toolResult !== undefined) {
    return JSON.stringify(result.toolResult);
  }
  return parts.join("\n");
}
