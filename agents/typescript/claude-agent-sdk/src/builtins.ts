/**
 * The session's built-in tools (`ask_user`, `durable_wait`, `write_todos`) as an in-process SDK
 * MCP server the runner adds to a CLI run.
 *
 * The CLI offers SDK MCP tools to the model as `mcp__<server key>__<tool>`, so the model calls
 * `mcp__dex__ask_user`; the runner's hook defers every such call and reports it under the
 * built-in's own name (`ask_user`), which the core routes to the contract's built-in Steps. The
 * resumed run's call gets the recorded result from this server; the server never runs a
 * built-in itself. The tools' descriptions are the core's (`texts.BUILT_IN_TOOL_DEFINITIONS`);
 * their input schemas are the same schemas written with zod, which the SDK's `tool()` takes
 * (`test/builtins.test.ts` compares them).
 */
import { createSdkMcpServer, type McpSdkServerConfigWithInstance, tool } from "@anthropic-ai/claude-agent-sdk";
import { z } from "zod";
import { type ResolvedToolPolicy, texts } from "./dex.js";
import { BUILT_IN_NOT_DEFERRED } from "./texts.js";
import { fullName, type RecordedResults } from "./tools.js";

/** The `mcpServers` key of the built-in tools' server (reserved: the options may not use it). */
export const SERVER_KEY = "dex";

/** The policy a deferred built-in call carries (the core applies the built-in policy). */
export const POLICY: ResolvedToolPolicy = { effect: "read", requiresApproval: false };

const PREFIX = `mcp__${SERVER_KEY}__`;

type Name = texts.BuiltInToolName;

/** The built-ins a run offers, in the contract's order: only `write_todos` when planning. */
export function offered(enabled: readonly string[], planning: boolean): Name[] {
  return texts.BUILT_IN_TOOL_NAMES.filter((name) => enabled.includes(name) && (name === "write_todos" || !planning));
}

/** The name the model sees for a built-in: `mcp__dex__<name>`. */
export const modelName = (builtIn: string): string => fullName(SERVER_KEY, builtIn);

/** The built-in a model-side tool name calls, if it is one of `offered`. */
export function builtInOf(toolName: string, offered: readonly string[]): string | null {
  if (!toolName.startsWith(PREFIX)) return null;
  const name = toolName.slice(PREFIX.length);
  return offered.includes(name) ? name : null;
}

/** The description the core gives a built-in's parameter. */
function described(name: Name, parameter: string): string {
  const properties = texts.BUILT_IN_TOOL_DEFINITIONS[name].function.parameters.properties as Record<
    string,
    { description?: string }
  >;
  return properties[parameter]?.description ?? "";
}

function todoItem(): z.ZodObject {
  const item = texts.BUILT_IN_TOOL_DEFINITIONS.write_todos.function.parameters.properties as {
    todos: { items: { properties: Record<string, { description?: string }> } };
  };
  return z.strictObject({
    content: z.string().describe(item.todos.items.properties.content?.description ?? ""),
    status: z.enum(texts.TODO_STATUSES),
  });
}

/** Each built-in's input schema, as the core's JSON schema says. */
export function inputShape(name: Name): z.ZodRawShape {
  switch (name) {
    case "ask_user":
      return {
        question: z.string().describe(described(name, "question")),
        choices: z.array(z.string()).optional().describe(described(name, "choices")),
        allows_free_text: z.boolean().optional().describe(described(name, "allows_free_text")),
      };
    case "durable_wait":
      return {
        seconds: z.number().describe(described(name, "seconds")),
        reason: z.string().describe(described(name, "reason")),
      };
    case "write_todos":
      return { todos: z.array(todoItem()) };
  }
}

/** The built-ins' server for one run: it lists `offered` and answers a call with the result a
 *  Step recorded for it (handed over by the runner's hook). */
export function server(offered: readonly Name[], recorded: RecordedResults): McpSdkServerConfigWithInstance {
  const tools = offered.map((name) =>
    tool(name, texts.BUILT_IN_TOOL_DEFINITIONS[name].function.description, inputShape(name), async (args) => {
      const found = recorded.take(modelName(name), args);
      const [text, isError] = found === undefined ? [BUILT_IN_NOT_DEFERRED, true] : [found.text, found.isError];
      return { content: [{ type: "text" as const, text }], isError };
    }),
  );
  return createSdkMcpServer({ name: SERVER_KEY, version: "1.0.0", tools, alwaysLoad: true });
}
