import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { type ModelMessage, tool } from "ai";
import { z } from "zod";
import { parseItem, VercelAiRunner } from "../src/index.js";
import {
  MemoryEvents,
  type ModelServer,
  record,
  startModelServer,
  storedMessage,
  toolExecution,
  turnContext,
} from "./support.js";

describe("reasoning, through the OpenAI provider's Responses API", () => {
  let server: ModelServer;
  before(async () => {
    server = await startModelServer([
      { reasoning: "The user greets; greet back.", text: "Hello!" },
      { text: "Still here." },
    ]);
  });
  after(async () => await server.stop());

  test("streams as reasoning_delta events and is kept in the stored assistant message", async () => {
    const runner = new VercelAiRunner({ model: server.responsesModel });
    const user = { role: "user", content: "Hi." } as const satisfies ModelMessage;
    const history = [{ message: storedMessage(1, "turn-1", user, user.content), item: user }];
    const events = new MemoryEvents();
    const outcome = await runner.runModelStep(turnContext(events, { history }));

    assert.equal(outcome.kind, "turn_completed");
    assert.equal(
      events
        .ofType("reasoning_delta")
        .map((payload) => payload.text)
        .join(""),
      "The user greets; greet back.",
    );
    assert.equal(
      events
        .ofType("text_delta")
        .map((payload) => payload.text)
        .join(""),
      "Hello!",
    );
    const firstText = events.events.findIndex((event) => event.type === "text_delta");
    const lastReasoning = events.events.findLastIndex((event) => event.type === "reasoning_delta");
    assert.ok(lastReasoning < firstText, "reasoning streamed before the answer");
    assert.equal(outcome.modelCallMetadata?.responseId, "resp_scripted_1");

    const stored = outcome.newMessages ?? [];
    assert.equal(stored.length, 1);
    assert.equal(stored[0]?.text, "Hello!");
    const item = parseItem(stored[0]?.frameworkItem ?? "");
    assert.ok(item.role === "assistant" && Array.isArray(item.content));
    assert.deepEqual(
      item.content.map((part) => part.type),
      ["reasoning", "text"],
    );

    // The stored message replays: the next turn's request carries the earlier response.
    const next = { role: "user", content: "Still there?" } as const satisfies ModelMessage;
    const replay = [
      ...history,
      { message: storedMessage(2, "turn-1", item, "Hello!"), item },
      { message: storedMessage(3, "turn-2", next, next.content), item: next },
    ];
    const second = await runner.runModelStep(turnContext(new MemoryEvents(), { turnId: "turn-2", history: replay }));
    assert.equal(second.kind, "turn_completed");
    // The provider refers to the stored response's items by the IDs the stored message kept.
    assert.deepEqual(server.requests[1]?.input, [
      { role: "user", content: [{ type: "input_text", text: "Hi." }] },
      { type: "item_reference", id: "rs_1" },
      { type: "item_reference", id: "msg_1" },
      { role: "user", content: [{ type: "input_text", text: "Still there?" }] },
    ]);
  });
});

describe("tool calls, through the OpenAI provider's Responses API", () => {
  let server: ModelServer;
  before(async () => {
    server = await startModelServer([
      { reasoning: "Look the order up.", tool_calls: [{ id: "call_1", name: "lookup", arguments: { order: "A1" } }] },
      { text: "A1 has shipped." },
    ]);
  });
  after(async () => await server.stop());

  test("the run state survives JSON, and the result goes back as the call's output", async () => {
    let runs = 0;
    const runner = new VercelAiRunner({
      model: server.responsesModel,
      tools: {
        lookup: tool({
          inputSchema: z.object({ order: z.string() }),
          execute: async ({ order }) => {
            runs += 1;
            return { order, status: "shipped" };
          },
        }),
      },
    });
    const user = { role: "user", content: "Where is A1?" } as const satisfies ModelMessage;
    const history = [{ message: storedMessage(1, "turn-1", user, user.content), item: user }];
    const first = await runner.runModelStep(turnContext(new MemoryEvents(), { history }));
    assert.equal(first.kind, "tool_calls_requested");
    assert.deepEqual(
      first.toolCalls.map((call) => [call.toolCallId, call.toolName, call.arguments]),
      [["call_1", "lookup", '{"order":"A1"}']],
    );
    const approved = record("call_1", "lookup", '{"order":"A1"}', { status: "approved" });
    const outcome = await runner.executeDeferredToolCall(toolExecution(approved));
    assert.equal(runs, 1);
    const output = outcome.kind === "tool_execution_result" ? outcome.output : "";
    const second = await runner.runModelStep(
      turnContext(new MemoryEvents(), {
        history,
        frameworkRunState: first.frameworkRunState,
        toolCalls: [{ ...approved, status: "succeeded", output }],
      }),
    );
    assert.equal(second.kind, "turn_completed");
    const input = (server.requests[1]?.input ?? []) as Record<string, unknown>[];
    assert.deepEqual(input.at(-1), { type: "function_call_output", call_id: "call_1", output });
    assert.deepEqual(
      (second.newMessages ?? []).map((message) => [message.role, message.toolCallId ?? null]),
      [
        ["assistant", null],
        ["assistant", "call_1"],
        ["tool", "call_1"],
        ["assistant", null],
      ],
    );
  });
});
