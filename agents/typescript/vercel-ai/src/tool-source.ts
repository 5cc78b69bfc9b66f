/**
 * A tool source's tools as AI SDK tools: the core's `McpToolSource`
 * (`@superdurable/dex-agents/mcp`), or any `CallableToolSource`. Each listed tool becomes a
 * `tool()` with the source's description and JSON Schema, its effect in `metadata` (the
 * source's explicit policy, else the tool's own, for MCP its annotations), and an `execute`
 * that calls the source with the idempotency key of the tool Step it runs in.
 *
 *   const source = new McpToolSource([stdioServer({ name: "files", command: "..." })]);
 *   const runner = new VercelAiRunner({ model, tools: { ...myTools, ...(await sourceTools(source)) } });
 */
import { jsonSchema, type Tool, type ToolSet, tool } from "ai";
import { type CallableToolSource, callSourceTool, type SourceTool, sourceToolPolicy } from "./dex.js";

/** The source's listed tools (listed now, once per source) as AI SDK tools, by name. */
export async function sourceTools(source: CallableToolSource): Promise<ToolSet> {
  const tools: ToolSet = {};
  for (const listed of await source.listTools()) {
    tools[listed.name] = sourceTool(source, listed);
  }
  return tools;
}

function sourceTool(source: CallableToolSource, listed: SourceTool): Tool {
  const policy = sourceToolPolicy(source, listed);
  const metadata: Record<string, string | boolean> = {};
  if (policy.effect) {
    metadata.effect = policy.effect;
  }
  if (typeof policy.requiresApproval === "boolean") {
    metadata.requiresApproval = policy.requiresApproval;
  }
  const base = tool({
    description: listed.description,
    inputSchema: jsonSchema<Record<string, unknown>>(listed.parameters),
    execute: async (input, { abortSignal }): Promise<string> =>
      await callSourceTool(source, listed.name, input, abortSignal),
  });
  return { ...base, metadata: { ...base.metadata, ...metadata } };
}
