import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { type ModelMessage, tool } from "ai";
import { z } from "zod";
import { ToolExecutionError } from "../src/dex.js";
import { durableTool, parseItem, VercelAiRunner } from "../src/index.js";
import { DEFAULT_REJECTION_TEXT, OUTCOME_UNKNOWN_TEXT, TOOL_CALL_FAILED_PREFIX } from "../src/texts.js";
import {
  MemoryEvents,
  type ModelServer,
  record,
  startModelServer,
  storedMessage,
  toolExecution,
  turnContext,
} from "./support.js";

const USER = { role: "user", content: "Where is order A1?" } as const satisfies ModelMessage;
const userHistory = [{ message: storedMessage(1, "turn-1", USER, USER.content), item: USER }];

/** Tools whose executions are counted here, outside anything the runner keeps. */
function countedTools() {
  const runs = { lookup: 0, refund: 0 };
  const tools = {
    lookup: durableTool(
      tool({
        description: "Looks an order up.",
        inputSchema: z.object({ order: z.string() }),
        execute: async ({ order }: { order: string }) => {
          runs.lookup += 1;
          return { order, status: "shipped" };
        },
      }),
      { effect: "read" },
    ),
    refund: tool({
      description: "Refunds an order.",
      inputSchema: z.object({ order: z.string(), amount: z.number() }),
      execute: async () => {
        runs.refund += 1;
        return "refunded";
      },
    }),
  };
  return { runs, tools };
}

type ChatMessage = { role: string; content: unknown; tool_call_id?: string; tool_calls?: unknown[] };

function sentMessages(server: ModelServer, index: number): ChatMessage[] {
  return (server.requests[index]?.messages ?? []) as ChatMessage[];
}

describe("a text turn", () => {
  let server: ModelServer;
  before(async () => {
    server = await startModelServer([{ text: "Order A1 shipped yesterday." }]);
  });
  after(async () => await server.stop());

  test("streams deltas in order and completes with usage, metadata and stored messages", async () => {
    const events = new MemoryEvents();
    const runner = new VercelAiRunner({ model: server.model, instructions: "Be brief.", temperature: 0 });
    const outcome = await runner.runModelStep(turnContext(events, { history: userHistory }));

    assert.equal(outcome.kind, "turn_completed");
    const deltas = events.ofType("text_delta").map((payload) => payload.text);
    assert.ok(deltas.length >= 2, `expected several deltas, got ${JSON.stringify(deltas)}`);
    assert.equal(deltas.join(""), "Order A1 shipped yesterday.");
    assert.deepEqual(outcome.usage, {
      modelCalls: 1,
      inputTokens: 10,
      outputTokens: 5,
      cachedInputTokens: 0,
      reasoningTokens: 0,
    });
    assert.equal(outcome.modelCallMetadata?.requestModel, "scripted-model");
    assert.equal(outcome.modelCallMetadata?.responseModel, "scripted-model");
    assert.equal(outcome.modelCallMetadata?.responseId, "chatcmpl-scripted-1");
    assert.equal(outcome.modelCallMetadata?.providerName, "scripted.chat");
    assert.deepEqual(outcome.modelCallMetadata?.finishReasons, ["stop"]);

    const stored = outcome.newMessages ?? [];
    assert.equal(stored.length, 1);
    assert.equal(stored[0]?.role, "assistant");
    assert.equal(stored[0]?.text, "Order A1 shipped yesterday.");
    const item = parseItem(stored[0]?.frameworkItem ?? "");
    assert.equal(item.role, "assistant");
    assert.equal(JSON.stringify(item), stored[0]?.frameworkItem);

    assert.equal(server.requests.length, 1);
    assert.deepEqual(sentMessages(server, 0), [
      { role: "system", content: "Be brief." },
      { role: "user", content: "Where is order A1?" },
    ]);
    assert.equal(server.requests[0]?.temperature, 0);
  });
});

describe("a turn with tool calls", () => {
  let server: ModelServer;
  before(async () => {
    server = await startModelServer([
      {
        tool_calls: [
          { id: "c1", name: "lookup", arguments: { order: "A1" } },
          { id: "c2", name: "refund", arguments: { order: "A1", amount: 5 } },
        ],
      },
      { text: "A1 shipped; the refund was not made." },
      { text: "Anything else?" },
    ]);
  });
  after(async () => await server.stop());

  test("defers every call, runs each once in its tool Step, and sends the recorded results", async () => {
    const { runs, tools } = countedTools();
    const runner = new VercelAiRunner({ model: server.model, tools });
    const first = await runner.runModelStep(turnContext(new MemoryEvents(), { history: userHistory }));

    assert.equal(first.kind, "tool_calls_requested");
    assert.deepEqual(first.toolCalls, [
      {
        toolCallId: "c1",
        toolName: "lookup",
        arguments: '{"order":"A1"}',
        policy: { effect: "read", requiresApproval: false },
      },
      {
        toolCallId: "c2",
        toolName: "refund",
        arguments: '{"order":"A1","amount":5}',
        policy: { effect: "unclassified", requiresApproval: true },
      },
    ]);
    assert.deepEqual(runs, { lookup: 0, refund: 0 }, "no tool runs inside the model step");
    const state = JSON.parse(first.frameworkRunState) as ModelMessage[];
    assert.equal(state.length, 1);
    assert.equal(state[0]?.role, "assistant");
    const tools0 = sentTools(server, 0);
    assert.deepEqual(tools0, ["lookup", "refund"]);

    const lookupRecord = record("c1", "lookup", '{"order":"A1"}', { status: "approved" });
    const result = await runner.executeDeferredToolCall(toolExecution(lookupRecord));
    assert.deepEqual(result, { kind: "tool_execution_result", output: '{"order":"A1","status":"shipped"}' });
    assert.equal(runs.lookup, 1);

    const records = [
      { ...lookupRecord, status: "succeeded" as const, output: '{"order":"A1","status":"shipped"}' },
      record("c2", "refund", '{"order":"A1","amount":5}', { status: "rejected", rejectionMessage: "Not today." }),
    ];
    const events = new MemoryEvents();
    const second = await runner.runModelStep(
      turnContext(events, { history: userHistory, frameworkRunState: first.frameworkRunState, toolCalls: records }),
    );
    assert.equal(second.kind, "turn_completed");
    assert.deepEqual(runs, { lookup: 1, refund: 0 }, "the rejected write never ran");

    const sent = sentMessages(server, 1);
    assert.deepEqual(
      sent.map((message) => message.role),
      ["user", "assistant", "tool", "tool"],
    );
    assert.equal(sent[1]?.tool_calls?.length, 2);
    assert.deepEqual(sent.slice(2), [
      { role: "tool", tool_call_id: "c1", content: '{"order":"A1","status":"shipped"}' },
      { role: "tool", tool_call_id: "c2", content: "Not today." },
    ]);

    const stored = second.newMessages ?? [];
    assert.deepEqual(
      stored.map((message) => [message.role, message.toolCallId ?? null, message.text ?? message.toolOutput ?? null]),
      [
        ["assistant", "c1", null],
        ["assistant", "c2", null],
        ["tool", "c1", '{"order":"A1","status":"shipped"}'],
        ["tool", "c2", "Not today."],
        ["assistant", null, "A1 shipped; the refund was not made."],
      ],
    );
    assert.equal(stored[1]?.toolArguments, '{"order":"A1","amount":5}');

    // The next turn replays the stored pieces: the model sees the messages the SDK made.
    const history = [
      ...userHistory,
      ...stored.map((message, index) => {
        const item = parseItem(message.frameworkItem);
        return { message: storedMessage(index + 2, "turn-1", item, message.text ?? null), item };
      }),
    ];
    const next = { role: "user", content: "Thanks." } as const satisfies ModelMessage;
    history.push({ message: storedMessage(history.length + 1, "turn-2", next, next.content), item: next });
    const third = await runner.runModelStep(turnContext(new MemoryEvents(), { turnId: "turn-2", history }));
    assert.equal(third.kind, "turn_completed");
    const replayed = sentMessages(server, 2);
    assert.deepEqual(
      replayed.map((message) => message.role),
      ["user", "assistant", "tool", "tool", "assistant", "user"],
    );
    assert.deepEqual(replayed.slice(0, 5), [
      ...sent,
      { role: "assistant", content: "A1 shipped; the refund was not made." },
    ]);
  });
});

describe("outcomes other than success", () => {
  let server: ModelServer;
  before(async () => {
    server = await startModelServer([
      {
        tool_calls: [
          { id: "f1", name: "lookup", arguments: { order: "B2" } },
          { id: "u1", name: "refund", arguments: { order: "B2", amount: 1 } },
          { id: "r1", name: "refund", arguments: { order: "B2", amount: 2 } },
        ],
      },
      { text: "Something went wrong." },
    ]);
  });
  after(async () => await server.stop());

  test("a failed, an unknown and a rejected call reach the model as the contract's texts", async () => {
    const { tools } = countedTools();
    const runner = new VercelAiRunner({ model: server.model, tools });
    const first = await runner.runModelStep(turnContext(new MemoryEvents(), { history: userHistory }));
    assert.equal(first.kind, "tool_calls_requested");
    const records = [
      record("f1", "lookup", '{"order":"B2"}', { status: "failed", error: "the warehouse is offline" }),
      record("u1", "refund", '{"order":"B2","amount":1}', { status: "outcome_unknown" }),
      record("r1", "refund", '{"order":"B2","amount":2}', { status: "rejected" }),
    ];
    const second = await runner.runModelStep(
      turnContext(new MemoryEvents(), {
        history: userHistory,
        frameworkRunState: first.frameworkRunState,
        toolCalls: records,
      }),
    );
    assert.equal(second.kind, "turn_completed");
    assert.deepEqual(
      sentMessages(server, 1)
        .slice(2)
        .map((message) => [message.tool_call_id, message.content]),
      [
        ["f1", `${TOOL_CALL_FAILED_PREFIX}the warehouse is offline`],
        ["u1", OUTCOME_UNKNOWN_TEXT],
        ["r1", DEFAULT_REJECTION_TEXT],
      ],
    );
  });
});

describe("invalid arguments", () => {
  let server: ModelServer;
  before(async () => {
    server = await startModelServer([
      {
        tool_calls: [
          { id: "i1", name: "lookup", arguments: { order: 5 } },
          { id: "i2", name: "lookup", arguments: "{not json" },
        ],
      },
      { text: "Let me try again." },
    ]);
  });
  after(async () => await server.stop());

  test("are deferred like any call and fail in the tool Step with a text the model reads", async () => {
    const { runs, tools } = countedTools();
    const runner = new VercelAiRunner({ model: server.model, tools });
    const first = await runner.runModelStep(turnContext(new MemoryEvents(), { history: userHistory }));
    assert.equal(first.kind, "tool_calls_requested");
    assert.deepEqual(
      first.toolCalls.map((call) => [call.toolCallId, call.arguments]),
      [
        ["i1", '{"order":5}'],
        // The provider hands malformed JSON arguments to the SDK as an empty object.
        ["i2", "{}"],
      ],
    );
    const errors: string[] = [];
    for (const call of first.toolCalls) {
      const stepRecord = record(call.toolCallId, call.toolName, call.arguments, { status: "approved" });
      await assert.rejects(runner.executeDeferredToolCall(toolExecution(stepRecord)), (error: unknown) => {
        assert.ok(error instanceof ToolExecutionError);
        errors.push(error.message);
        return true;
      });
    }
    assert.equal(runs.lookup, 0, "the tool never ran");
    assert.match(errors[0] ?? "", /^invalid arguments for tool "lookup": /);
    assert.match(errors[1] ?? "", /^invalid arguments for tool "lookup": /);
    const malformed = record("i3", "lookup", "{not json", { status: "approved" });
    await assert.rejects(
      runner.executeDeferredToolCall(toolExecution(malformed)),
      new ToolExecutionError('the arguments for tool "lookup" are not valid JSON'),
    );

    const records = first.toolCalls.map((call, index) =>
      record(call.toolCallId, call.toolName, call.arguments, { status: "failed", error: errors[index] ?? "" }),
    );
    const second = await runner.runModelStep(
      turnContext(new MemoryEvents(), {
        history: userHistory,
        frameworkRunState: first.frameworkRunState,
        toolCalls: records,
      }),
    );
    assert.equal(second.kind, "turn_completed");
    const sent = sentMessages(server, 1);
    assert.deepEqual(
      sent.slice(2).map((message) => message.content),
      errors.map((error) => `${TOOL_CALL_FAILED_PREFIX}${error}`),
    );
  });
});

function sentTools(server: ModelServer, index: number): string[] {
  const tools = (server.requests[index]?.tools ?? []) as { function: { name: string } }[];
  return tools.map((entry) => entry.function.name);
}
