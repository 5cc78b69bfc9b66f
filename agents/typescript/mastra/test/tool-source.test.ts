/** `sourceTools` in a MastraRunner: the core's MCP tool source suite
 *  (`@superdurable/dex-agents/testing/mcp`), the source's tools as Mastra tools of an Agent. */
import { resolve } from "node:path";
import { Agent } from "@mastra/core/agent";
import { mcpSourceSuite } from "@superdurable/dex-agents/testing/mcp";
import { MastraRunner, sourceTools } from "../src/index.js";
import { startModelServer, turnContext } from "./support.js";

type Executable = { execute: (input: unknown, context: unknown) => Promise<unknown> };

mcpSourceSuite({
  runnerName: "a MastraRunner",
  python: resolve(process.cwd(), "..", "..", "python", "core", ".venv", "bin", "python"),
  startModelServer,
  sourceTools,
  toolNames: (tools) => Object.keys(tools),
  runner: (tools, model) =>
    new MastraRunner({ agent: new Agent({ id: "support", name: "Support", instructions: "Be brief.", model, tools }) }),
  turn: (events, text) => turnContext(events, text),
  callOutsideStep: async (tools, name, input) => await (tools[name] as Executable).execute(input, {}),
});
