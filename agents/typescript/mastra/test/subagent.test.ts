/**
 * Sub-agents and workflows given as tools: each call is deferred like any tool call and runs
 * whole in its own tool Step (the sub-agent's model call included), never inside the model call.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { Agent } from "@mastra/core/agent";
import { createTool } from "@mastra/core/tools";
import { createStep, createWorkflow } from "@mastra/core/workflows";
import { z } from "zod";
import { MastraRunner } from "../src/index.js";
import { MemoryEvents, type ModelServer, record, startModelServer, toolExecution, turnContext } from "./support.js";

let server: ModelServer;

before(async () => {
  server = await startModelServer([
    {
      tool_calls: [
        { id: "c1", name: "ask_expert", arguments: { question: "What is six times seven?" } },
        { id: "c2", name: "double", arguments: { value: 21 } },
      ],
    },
    { text: "42" },
  ]);
});

after(async () => {
  await server.stop();
});

test("a sub-agent and a workflow given as tools each run in their tool Step", async () => {
  const expert = new Agent({ id: "expert", name: "Expert", instructions: "You are the expert.", model: server.model });
  const doubling = createWorkflow({
    id: "doubling",
    inputSchema: z.object({ value: z.number() }),
    outputSchema: z.object({ value: z.number() }),
  })
    .then(
      createStep({
        id: "double",
        inputSchema: z.object({ value: z.number() }),
        outputSchema: z.object({ value: z.number() }),
        execute: async ({ inputData }) => ({ value: inputData.value * 2 }),
      }),
    )
    .commit();
  const ask_expert = createTool({
    id: "ask_expert",
    description: "Ask the expert.",
    inputSchema: z.object({ question: z.string() }),
    execute: async ({ question }) => (await expert.generate(question)).text,
  });
  const double = createTool({
    id: "double",
    description: "Double a number.",
    inputSchema: z.object({ value: z.number() }),
    execute: async (inputData) => {
      const run = await doubling.createRun();
      const result = await run.start({ inputData });
      return result.status === "success" ? result.result : { error: result.status };
    },
  });
  const runner = new MastraRunner({
    agent: new Agent({
      id: "boss",
      name: "Boss",
      instructions: "Delegate.",
      model: server.model,
      tools: { ask_expert, double },
    }),
  });

  const step = await runner.runModelStep(turnContext(new MemoryEvents(), "Six times seven, and double 21?"));
  assert.ok(step.kind === "tool_calls_requested");
  assert.deepEqual(
    step.toolCalls.map((call) => call.toolName),
    ["ask_expert", "double"],
  );
  assert.equal(server.requests.length, 1, "the sub-agent did not run inside the model call");

  const asked = await runner.executeDeferredToolCall(
    toolExecution(record("c1", "ask_expert", '{"question":"What is six times seven?"}', { status: "approved" })),
  );
  assert.deepEqual(asked, { kind: "tool_execution_result", output: "42" });
  assert.equal(server.requests.length, 2, "the sub-agent made its model call in the tool Step");
  const sent = server.requests[1]?.messages as { role: string; content: string }[];
  assert.deepEqual(sent[0], { role: "system", content: "You are the expert." });

  const doubled = await runner.executeDeferredToolCall(
    toolExecution(record("c2", "double", '{"value":21}', { status: "approved" })),
  );
  assert.deepEqual(doubled, { kind: "tool_execution_result", output: '{"value":42}' });
});
