/**
 * A tool source's tools as OpenAI Agents SDK function tools: the core's `McpToolSource`
 * (`@superdurable/dex-agents/mcp`), or any `CallableToolSource`. Each listed tool becomes a
 * non-strict function tool with the source's description and JSON Schema, its effect declared
 * with `durableTool` (the source's explicit policy, else the tool's own, for MCP its
 * annotations), and an `invoke` that calls the source with the idempotency key of the tool
 * Step it runs in. The tools let their errors through (`errorFunction: null`): a failure the
 * source reports is one the model reads, and a request sent with no result back fails the
 * attempt, so the effect decides.
 *
 *   const source = new McpToolSource([stdioServer({ name: "files", command: "..." })]);
 *   const agent = new Agent({ name, instructions, tools: [...myTools, ...(await sourceTools(source))] });
 */
import { type FunctionTool, tool } from "@openai/agents";
import { type CallableToolSource, callSourceTool, type SourceTool, sourceToolPolicy } from "./dex.js";
import { durableTool } from "./policy.js";

/** The source's listed tools (listed now, once per source) as function tools. */
export async function sourceTools(source: CallableToolSource): Promise<FunctionTool[]> {
  return (await source.listTools()).map((listed) => sourceTool(source, listed));
}

function sourceTool(source: CallableToolSource, listed: SourceTool): FunctionTool {
  const policy = sourceToolPolicy(source, listed);
  const made = tool({
    name: listed.name,
    description: listed.description,
    // The server's JSON Schema as it is (a non-strict tool takes any object schema).
    parameters: listed.parameters as never,
    strict: false,
    needsApproval: policy.effect ? false : policy.requiresApproval === true,
    errorFunction: null,
    execute: async (input, _context, details): Promise<string> => {
      const args = (typeof input === "string" ? JSON.parse(input || "{}") : input) as Record<string, unknown>;
      return await callSourceTool(source, listed.name, args, details?.signal);
    },
  }) as FunctionTool;
  if (!policy.effect) {
    return made;
  }
  const requiresApproval = policy.requiresApproval ?? undefined;
  return durableTool(
    made,
    requiresApproval === undefined ? { effect: policy.effect } : { effect: policy.effect, requiresApproval },
  );
}
