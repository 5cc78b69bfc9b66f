/** `sourceTools` in a VercelAiRunner: the core's MCP tool source suite
 *  (`@superdurable/dex-agents/testing/mcp`), the source's tools as AI SDK tools. */
import { resolve } from "node:path";
import { mcpSourceSuite } from "@superdurable/dex-agents/testing/mcp";
import { sourceTools, VercelAiRunner } from "../src/index.js";
import { startModelServer, storedMessage, turnContext } from "./support.js";

mcpSourceSuite({
  runnerName: "a VercelAiRunner",
  python: resolve(process.cwd(), "..", "..", "python", "core", ".venv", "bin", "python"),
  startModelServer,
  sourceTools,
  toolNames: (tools) => Object.keys(tools),
  runner: (tools, model) => new VercelAiRunner({ model, tools }),
  turn: (events, text) => {
    const user = { role: "user" as const, content: text };
    return turnContext(events, { history: [{ message: storedMessage(1, "turn-1", user, text), item: user }] });
  },
  callOutsideStep: async (tools, name, input) => {
    const execute = tools[name]?.execute;
    if (execute === undefined) throw new Error(`no tool ${name}`);
    return await execute(input, { toolCallId: "x", messages: [], context: undefined });
  },
});
