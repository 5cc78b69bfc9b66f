/**
 * A tool source's tools as Mastra tools: the core's `McpToolSource`
 * (`@superdurable/dex-agents/mcp`), or any `CallableToolSource`. Each listed tool becomes a
 * `createTool` tool with the source's description and JSON Schema, its effect declared with
 * `durableTool` (the source's explicit policy, else the tool's own, for MCP its annotations),
 * and an `execute` that calls the source with the idempotency key of the tool Step it runs in.
 *
 *   const source = new McpToolSource([stdioServer({ name: "files", command: "..." })]);
 *   const agent = new Agent({ id, name, instructions, model, tools: { ...mine, ...(await sourceTools(source)) } });
 */
import type { ToolsInput } from "@mastra/core/agent";
import { createTool } from "@mastra/core/tools";
import { type CallableToolSource, callSourceTool, type SourceTool, sourceToolPolicy } from "./dex.js";
import { durableTool } from "./policy.js";

/** The source's listed tools (listed now, once per source) as Mastra tools, by name. */
export async function sourceTools(source: CallableToolSource): Promise<ToolsInput> {
  const tools: ToolsInput = {};
  for (const listed of await source.listTools()) {
    tools[listed.name] = sourceTool(source, listed);
  }
  return tools;
}

function sourceTool(source: CallableToolSource, listed: SourceTool): ToolsInput[string] {
  const policy = sourceToolPolicy(source, listed);
  const made = createTool({
    id: listed.name,
    description: listed.description,
    // A JSON Schema is one of the schemas Mastra takes.
    inputSchema: listed.parameters as never,
    requireApproval: !policy.effect && policy.requiresApproval === true,
    execute: async (input, context): Promise<string> => {
      const signal = (context as { abortSignal?: AbortSignal } | undefined)?.abortSignal;
      return await callSourceTool(source, listed.name, (input ?? {}) as Record<string, unknown>, signal);
    },
  });
  if (!policy.effect) {
    return made;
  }
  const requiresApproval = policy.requiresApproval ?? undefined;
  return durableTool(
    made,
    requiresApproval === undefined ? { effect: policy.effect } : { effect: policy.effect, requiresApproval },
  );
}
