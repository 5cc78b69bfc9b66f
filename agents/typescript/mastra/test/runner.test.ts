/**
 * The runner against a real Mastra Agent on the scripted model server: one model call per
 * step, the tool calls deferred with the policy each tool declares, the results fed back with
 * their arguments intact, text streamed, tools run by their own execute in a tool Step.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { Agent } from "@mastra/core/agent";
import { createTool } from "@mastra/core/tools";
import { ToolExecutionError } from "@superdurable/dex-agents";
import { z } from "zod";
import { durableTool, MastraRunner, type ModelMessage } from "../src/index.js";
import { MemoryEvents, type ModelServer, record, startModelServer, toolExecution, turnContext } from "./support.js";

let server: ModelServer;
const runs: string[] = [];

before(async () => {
  server = await startModelServer([
    {
      tool_calls: [
        { id: "c1", name: "get_weather", arguments: { city: "Paris" } },
        { id: "c2", name: "send_email", arguments: { to: "bob" } },
        { id: "c3", name: "update_ticket", arguments: { id: "T-1" } },
      ],
    },
    { text: "Sunny in Paris; mail sent." },
    { text: "never sent", delay_seconds: 30 },
  ]);
});

after(async () => {
  await server.stop();
});

function agent(): Agent {
  const get_weather = createTool({
    id: "get_weather",
    description: "The weather in a city.",
    inputSchema: z.object({ city: z.string() }),
    mcp: { annotations: { readOnlyHint: true } },
    execute: async ({ city }) => {
      runs.push(`get_weather ${city}`);
      return { city, sky: "sunny" };
    },
  });
  const send_email = createTool({
    id: "send_email",
    description: "Send an email.",
    inputSchema: z.object({ to: z.string() }),
    requireApproval: true,
    execute: async ({ to }) => {
      runs.push(`send_email ${to}`);
      return `sent to ${to}`;
    },
  });
  const update_ticket = durableTool(
    createTool({
      id: "update_ticket",
      description: "Update a ticket.",
      inputSchema: z.object({ id: z.string() }),
      execute: async ({ id }) => `updated ${id}`,
    }),
    { effect: "idempotent_write" },
  );
  return new Agent({
    id: "support",
    name: "Support",
    instructions: "You help.",
    model: server.model,
    tools: { get_weather, send_email, update_ticket },
  });
}

test("a turn: tool calls deferred with their policies, results fed back, the answer streamed", async () => {
  const runner = new MastraRunner({ agent: agent() });
  const events = new MemoryEvents();
  const first = await runner.runModelStep(turnContext(events, "Weather in Paris, and mail Bob?"));
  assert.equal(first.kind, "tool_calls_requested");
  assert.ok(first.kind === "tool_calls_requested");
  assert.deepEqual(runs, [], "no tool runs inside the model call");
  assert.deepEqual(
    first.toolCalls.map((call) => [call.toolCallId, call.toolName, call.arguments, call.policy]),
    [
      ["c1", "get_weather", '{"city":"Paris"}', { effect: "read", requiresApproval: false }],
      ["c2", "send_email", '{"to":"bob"}', { effect: "unclassified", requiresApproval: true }],
      ["c3", "update_ticket", '{"id":"T-1"}', { effect: "idempotent_write", requiresApproval: false }],
    ],
  );
  const state = JSON.parse(first.frameworkRunState) as ModelMessage[];
  assert.deepEqual(
    state.map((message) => message.role),
    ["assistant"],
    "the run state holds the response without Mastra's empty tool message",
  );
  assert.equal(first.usage?.modelCalls, 1);
  assert.deepEqual(first.modelCallMetadata?.finishReasons, ["tool-calls"]);

  const weather = await runner.executeDeferredToolCall(
    toolExecution(record("c1", "get_weather", '{"city":"Paris"}', { status: "approved" })),
  );
  assert.deepEqual(weather, { kind: "tool_execution_result", output: '{"city":"Paris","sky":"sunny"}' });
  assert.deepEqual(runs, ["get_weather Paris"]);

  const records = [
    record("c1", "get_weather", '{"city":"Paris"}', {
      status: "succeeded",
      output: weather.kind === "tool_execution_result" ? weather.output : "",
    }),
    record("c2", "send_email", '{"to":"bob"}', { status: "rejected", rejectionMessage: "Not now." }),
    record("c3", "update_ticket", '{"id":"T-1"}', { status: "failed", error: "ticket locked" }),
  ];
  const second = await runner.runModelStep(
    turnContext(events, "Weather in Paris, and mail Bob?", {
      frameworkRunState: first.frameworkRunState,
      toolCalls: records,
    }),
  );
  assert.equal(second.kind, "turn_completed");
  assert.equal(events.texts("text_delta").join(""), "Sunny in Paris; mail sent.");

  const sent = server.requests[1]?.messages as { role: string; content: unknown; tool_calls?: unknown[] }[];
  assert.deepEqual(
    sent.map((message) => message.role),
    ["system", "user", "assistant", "tool", "tool", "tool"],
  );
  assert.deepEqual(
    ((sent[2]?.tool_calls ?? []) as { function: { arguments: string } }[]).map((call) =>
      JSON.parse(call.function.arguments),
    ),
    [{ city: "Paris" }, { to: "bob" }, { id: "T-1" }],
    "the calls go back with their arguments",
  );
  assert.deepEqual(
    sent.slice(3).map((message) => message.content),
    ['{"city":"Paris","sky":"sunny"}', "Not now.", "The tool call failed: ticket locked"],
  );

  assert.ok(second.kind === "turn_completed");
  const stored = second.newMessages ?? [];
  assert.deepEqual(
    stored.map((message) => [message.role, message.toolCallId ?? null, message.text ?? null]),
    [
      ["assistant", "c1", null],
      ["assistant", "c2", null],
      ["assistant", "c3", null],
      ["tool", "c1", null],
      ["tool", "c2", null],
      ["tool", "c3", null],
      ["assistant", null, "Sunny in Paris; mail sent."],
    ],
    "one stored message per call and per result",
  );
});

test("a tool Step refuses arguments that do not fit, and an unknown tool", async () => {
  const runner = new MastraRunner({ agent: agent() });
  await assert.rejects(
    runner.executeDeferredToolCall(toolExecution(record("c9", "get_weather", '{"town":1}', { status: "approved" }))),
    (error: unknown) =>
      error instanceof ToolExecutionError && /invalid arguments for tool "get_weather"/.test(error.message),
  );
  await assert.rejects(
    runner.executeDeferredToolCall(toolExecution(record("c9", "nope", "{}", { status: "approved" }))),
    (error: unknown) => error instanceof ToolExecutionError && /there is no tool named "nope"/.test(error.message),
  );
});

test("the turn's abort signal ends the model call", async () => {
  const runner = new MastraRunner({ agent: agent() });
  const controller = new AbortController();
  const started = Date.now();
  setTimeout(() => controller.abort(new Error("turn cancelled")), 500);
  await assert.rejects(runner.runModelStep(turnContext(new MemoryEvents(), "Hi", { signal: controller.signal })));
  assert.ok(Date.now() - started < 10_000, "the call ended long before the scripted reply's 30 s delay");
});

test("an Agent with sub-agents or retries of its own is refused with what to do", async () => {
  const sub = new Agent({ id: "sub", name: "Sub", instructions: "Sub.", model: server.model });
  const runner = new MastraRunner({
    agent: new Agent({ id: "boss", name: "Boss", instructions: "Boss.", model: server.model, agents: { sub } }),
  });
  await assert.rejects(runner.runModelStep(turnContext(new MemoryEvents(), "Hi")), /give each as a tool instead/);
  assert.throws(
    () =>
      new MastraRunner({
        agent: new Agent({ id: "r", name: "R", instructions: "R.", model: server.model, maxRetries: 2 }),
      }),
    /pass frameworkRetries: true/,
  );
});
