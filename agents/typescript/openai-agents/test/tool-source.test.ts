/** `sourceTools` in an OpenAIAgentsRunner: the core's MCP tool source suite
 *  (`@superdurable/dex-agents/testing/mcp`), the source's tools as function tools of an Agent. */
import { resolve } from "node:path";
import { Agent, type AgentInputItem, invokeFunctionTool, RunContext } from "@openai/agents";
import { mcpSourceSuite } from "@superdurable/dex-agents/testing/mcp";
import { OpenAIAgentsRunner, sourceTools } from "../src/index.js";
import { startModelServer, storedMessage, turnContext } from "./support.js";

mcpSourceSuite({
  runnerName: "an OpenAIAgentsRunner",
  python: resolve(process.cwd(), "..", "..", "python", "core", ".venv", "bin", "python"),
  startModelServer,
  sourceTools,
  toolNames: (tools) => tools.map((tool) => tool.name),
  runner: (tools, model) =>
    new OpenAIAgentsRunner(new Agent({ name: "Support", instructions: "Be brief.", model, tools })),
  turn: (events, text) => {
    const user = { role: "user", content: text } as const satisfies AgentInputItem;
    return turnContext(events, { history: [{ message: storedMessage(1, "turn-1", user, text), item: user }] });
  },
  callOutsideStep: async (tools, name, input) => {
    const tool = tools.find((candidate) => candidate.name === name);
    if (tool === undefined) throw new Error(`no tool ${name}`);
    return await invokeFunctionTool({ tool, runContext: new RunContext({}), input: JSON.stringify(input) });
  },
});
