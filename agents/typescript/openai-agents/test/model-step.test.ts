import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import {
  Agent,
  type AgentInputItem,
  defineToolInputGuardrail,
  defineToolOutputGuardrail,
  handoff,
  ToolGuardrailFunctionOutputFactory,
  tool,
} from "@openai/agents";
import { z } from "zod";
import { ToolExecutionError } from "../src/dex.js";
import { durableTool, HANDOFF_EVENT, OpenAIAgentsRunner, parseItem } from "../src/index.js";
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

const USER = { role: "user", content: "Where is order A1?" } as const satisfies AgentInputItem;
const userHistory = [{ message: storedMessage(1, "turn-1", USER, USER.content), item: USER as AgentInputItem }];

/** Tools whose executions are counted here, outside anything the runner keeps. */
function countedTools() {
  const runs = { lookup: 0, refund: 0 };
  const lookup = durableTool(
    tool({
      name: "lookup",
      description: "Looks an order up.",
      parameters: z.object({ order: z.string() }),
      execute: async ({ order }) => {
        runs.lookup += 1;
        return { order, status: "shipped" };
      },
    }),
    { effect: "read" },
  );
  const refund = tool({
    name: "refund",
    description: "Refunds an order.",
    parameters: z.object({ order: z.string(), amount: z.number() }),
    execute: async () => {
      runs.refund += 1;
      return "refunded";
    },
  });
  return { runs, tools: [lookup, refund], lookup, refund };
}

type ChatMessage = { role: string; content: unknown; tool_call_id?: string; tool_calls?: unknown[] };

function sentMessages(server: ModelServer, index: number): ChatMessage[] {
  return (server.requests[index]?.messages ?? []) as ChatMessage[];
}

function sentTools(server: ModelServer, index: number): string[] {
  const tools = (server.requests[index]?.tools ?? []) as { function: { name: string } }[];
  return tools.map((entry) => entry.function.name);
}

describe("a text turn", () => {
  let server: ModelServer;
  before(async () => {
    server = await startModelServer([{ text: "Order A1 shipped yesterday." }]);
  });
  after(async () => await server.stop());

  test("streams deltas in order and completes with usage, metadata and stored messages", async () => {
    const events = new MemoryEvents();
    const agent = new Agent({ name: "Support", instructions: "Be brief.", model: server.model });
    const runner = new OpenAIAgentsRunner(agent);
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
    assert.equal(outcome.modelCallMetadata?.responseModel, "scripted-model");
    assert.equal(outcome.modelCallMetadata?.requestModel, "scripted-model");
    assert.equal(outcome.modelCallMetadata?.responseId, "chatcmpl-scripted-1");

    const stored = outcome.newMessages ?? [];
    assert.equal(stored.length, 1);
    assert.equal(stored[0]?.role, "assistant");
    assert.equal(stored[0]?.text, "Order A1 shipped yesterday.");
    const item = parseItem(stored[0]?.frameworkItem ?? "");
    assert.equal(JSON.stringify(item), stored[0]?.frameworkItem);

    assert.equal(server.requests.length, 1);
    assert.deepEqual(sentMessages(server, 0), [
      { role: "system", content: "Be brief." },
      { role: "user", content: "Where is order A1?" },
    ]);
  });

  test("an input guardrail's tripwire ends the turn as failed, naming the guardrail", async () => {
    const agent = new Agent({
      name: "Support",
      model: server.model,
      inputGuardrails: [
        {
          name: "no_refunds",
          runInParallel: false,
          execute: async () => ({ tripwireTriggered: true, outputInfo: null }),
        },
      ],
    });
    const sent = server.requests.length;
    const outcome = await new OpenAIAgentsRunner(agent).runModelStep(
      turnContext(new MemoryEvents(), { history: userHistory }),
    );
    assert.equal(outcome.kind, "turn_completed");
    assert.equal(outcome.kind === "turn_completed" ? outcome.turnError : null, 'input guardrail "no_refunds" tripped');
    assert.equal(server.requests.length, sent, "a guardrail that runs first stops the turn before its model call");
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
    const agent = new Agent({ name: "Support", instructions: "Be brief.", model: server.model, tools });
    const runner = new OpenAIAgentsRunner(agent);
    const first = await runner.runModelStep(turnContext(new MemoryEvents(), { history: userHistory }));

    assert.equal(first.kind, "tool_calls_requested");
    assert.deepEqual(first.toolCalls, [
      {
        toolCallId: "c1",
        toolName: "lookup",
        arguments: '{"order": "A1"}',
        toolSourceReference: "Support",
        policy: { effect: "read", requiresApproval: false },
      },
      {
        toolCallId: "c2",
        toolName: "refund",
        arguments: '{"order": "A1", "amount": 5}',
        toolSourceReference: "Support",
        policy: { effect: "unclassified", requiresApproval: true },
      },
    ]);
    assert.deepEqual(runs, { lookup: 0, refund: 0 }, "no tool runs inside the model step");
    assert.deepEqual(sentTools(server, 0), ["lookup", "refund"]);
    // The stored history stays out of the run state: the next Step puts it back.
    assert.ok(!first.frameworkRunState.includes("Where is order A1?"), "the history is not in the run state");
    assert.equal(agent.tools[0], tools[0], "the application's agent is unchanged");

    const lookupRecord = {
      ...record("c1", "lookup", '{"order": "A1"}', { status: "approved" }),
      toolSourceReference: "Support",
    };
    const result = await runner.executeDeferredToolCall(toolExecution(lookupRecord));
    assert.deepEqual(result, { kind: "tool_execution_result", output: '{"order":"A1","status":"shipped"}' });
    assert.equal(runs.lookup, 1);

    const records = [
      { ...lookupRecord, status: "succeeded" as const, output: '{"order":"A1","status":"shipped"}' },
      record("c2", "refund", '{"order": "A1", "amount": 5}', { status: "rejected", rejectionMessage: "Not today." }),
    ];
    const second = await runner.runModelStep(
      turnContext(new MemoryEvents(), {
        history: userHistory,
        frameworkRunState: first.frameworkRunState,
        toolCalls: records,
      }),
    );
    assert.equal(second.kind, "turn_completed");
    assert.deepEqual(runs, { lookup: 1, refund: 0 }, "the rejected write never ran");
    assert.equal(second.usage?.modelCalls, 1, "the Step counts only its own model call");

    const sent = sentMessages(server, 1);
    assert.deepEqual(
      sent.map((message) => message.role),
      ["system", "user", "assistant", "tool", "tool"],
    );
    assert.equal(sent[2]?.tool_calls?.length, 2);
    assert.deepEqual(sent.slice(3), [
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
    assert.equal(stored[1]?.toolArguments, '{"order": "A1", "amount": 5}');

    // The next turn replays the stored items: the model sees what the SDK sent.
    const history = [
      ...userHistory,
      ...stored.map((message, index) => {
        const item = parseItem(message.frameworkItem);
        return { message: storedMessage(index + 2, "turn-1", item, message.text ?? null), item };
      }),
    ];
    const next = { role: "user", content: "Thanks." } as const satisfies AgentInputItem;
    history.push({ message: storedMessage(history.length + 1, "turn-2", next, next.content), item: next });
    const third = await runner.runModelStep(turnContext(new MemoryEvents(), { turnId: "turn-2", history }));
    assert.equal(third.kind, "turn_completed");
    const replayed = sentMessages(server, 2);
    assert.deepEqual(replayed.slice(0, 5), sent);
    assert.deepEqual(replayed.slice(5), [
      { role: "assistant", content: [{ type: "text", text: "A1 shipped; the refund was not made.", annotations: [] }] },
      { role: "user", content: "Thanks." },
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
      { tool_calls: [{ id: "x1", name: "lookup", arguments: { order: "B3" } }] },
    ]);
  });
  after(async () => await server.stop());

  test("a failed, an unknown and a rejected call reach the model as the contract's texts", async () => {
    const { tools } = countedTools();
    const runner = new OpenAIAgentsRunner(new Agent({ name: "Support", model: server.model, tools }));
    const first = await runner.runModelStep(turnContext(new MemoryEvents(), { history: userHistory }));
    assert.equal(first.kind, "tool_calls_requested");
    const records = [
      record("f1", "lookup", "{}", { status: "failed", error: "the warehouse is offline" }),
      record("u1", "refund", "{}", { status: "outcome_unknown" }),
      record("r1", "refund", "{}", { status: "rejected" }),
    ];
    const second = await runner.runModelStep(
      turnContext(new MemoryEvents(), {
        history: userHistory,
        frameworkRunState: first.frameworkRunState,
        toolCalls: records,
      }),
    );
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

    // The second response asked for another call: the turn left unfinished stores every item
    // so far with a result for that call.
    assert.equal(second.kind, "tool_calls_requested");
    const unfinished = await runner.buildUnfinishedTurnMessages(
      turnContext(new MemoryEvents(), {
        history: userHistory,
        frameworkRunState: second.frameworkRunState,
        toolCalls: records,
      }),
    );
    assert.deepEqual(
      unfinished.map((message) => [message.role, message.toolCallId, message.toolOutput ?? null]),
      [
        ["assistant", "f1", null],
        ["assistant", "u1", null],
        ["assistant", "r1", null],
        ["tool", "f1", `${TOOL_CALL_FAILED_PREFIX}the warehouse is offline`],
        ["tool", "u1", OUTCOME_UNKNOWN_TEXT],
        ["tool", "r1", DEFAULT_REJECTION_TEXT],
        ["assistant", "x1", null],
        ["tool", "x1", OUTCOME_UNKNOWN_TEXT],
      ],
    );
  });
});

describe("a tool Step", () => {
  test("refuses an unknown tool and arguments that are not JSON, with the core's texts", async () => {
    const { runs, tools } = countedTools();
    const runner = new OpenAIAgentsRunner(new Agent({ name: "Support", tools }));
    await assert.rejects(
      runner.executeDeferredToolCall(toolExecution(record("n1", "nope", "{}", { status: "approved" }))),
      new ToolExecutionError('there is no tool named "nope"; the tools are: lookup, refund'),
    );
    await assert.rejects(
      runner.executeDeferredToolCall(toolExecution(record("n2", "lookup", "{not json", { status: "approved" }))),
      new ToolExecutionError('the arguments for tool "lookup" are not valid JSON'),
    );
    assert.equal(runs.lookup, 0);
  });

  test("a tool made with errorFunction null fails with a ToolExecutionError the model reads", async () => {
    const strict = tool({
      name: "strict",
      description: "Fails.",
      parameters: z.object({}),
      errorFunction: null,
      execute: async () => {
        throw new ToolExecutionError("the order is locked");
      },
    });
    const runner = new OpenAIAgentsRunner(new Agent({ name: "Support", tools: [strict] }));
    await assert.rejects(
      runner.executeDeferredToolCall(toolExecution(record("e1", "strict", "{}", { status: "approved" }))),
      new ToolExecutionError("the order is locked"),
    );
  });
});

describe("a tool's guardrails", () => {
  test("run in its tool Step around the tool, as the SDK runs them", async () => {
    const ran: string[] = [];
    const guarded = tool({
      name: "guarded",
      description: "Echoes.",
      parameters: z.object({ word: z.string() }),
      inputGuardrails: [
        defineToolInputGuardrail({
          name: "no_secrets",
          run: async ({ toolCall }) => {
            const { word } = JSON.parse(toolCall.arguments) as { word: string };
            if (word === "secret") {
              return ToolGuardrailFunctionOutputFactory.rejectContent("That word is not allowed.");
            }
            return word === "explode"
              ? ToolGuardrailFunctionOutputFactory.throwException()
              : ToolGuardrailFunctionOutputFactory.allow();
          },
        }),
      ],
      outputGuardrails: [
        defineToolOutputGuardrail({
          name: "short",
          run: async ({ output }) =>
            String(output).length > 12
              ? ToolGuardrailFunctionOutputFactory.rejectContent("The answer was too long.")
              : ToolGuardrailFunctionOutputFactory.allow(),
        }),
      ],
      execute: async ({ word }) => {
        ran.push(word);
        return `echo ${word}`;
      },
    });
    const runner = new OpenAIAgentsRunner(new Agent({ name: "Support", tools: [guarded] }));
    const call = (word: string) =>
      runner.executeDeferredToolCall(
        toolExecution(record(`g-${word}`, "guarded", JSON.stringify({ word }), { status: "approved" })),
      );

    assert.deepEqual(await call("hi"), { kind: "tool_execution_result", output: "echo hi" });
    assert.deepEqual(await call("secret"), { kind: "tool_execution_result", output: "That word is not allowed." });
    await assert.rejects(call("explode"), new ToolExecutionError('tool input guardrail "no_secrets" tripped'));
    assert.deepEqual(await call("supercalifragilistic"), {
      kind: "tool_execution_result",
      output: "The answer was too long.",
    });
    assert.deepEqual(ran, ["hi", "supercalifragilistic"], "a rejected or tripped input never reaches the tool");
  });
});

describe("a handoff", () => {
  let server: ModelServer;
  before(async () => {
    server = await startModelServer([
      { tool_calls: [{ id: "h1", name: "transfer_to_Billing", arguments: {} }] },
      { tool_calls: [{ id: "b1", name: "refund", arguments: { order: "A1", amount: 5 } }] },
      { text: "Refunded." },
    ]);
  });
  after(async () => await server.stop());

  test("runs inside the model Step, writes its event, and the next Step resumes with the target agent", async () => {
    const { runs, lookup, refund } = countedTools();
    const billing = new Agent({
      name: "Billing",
      instructions: "You refund.",
      model: server.model,
      tools: [refund],
    });
    const support = new Agent({
      name: "Support",
      instructions: "You help.",
      model: server.model,
      tools: [lookup],
      handoffs: [handoff(billing)],
    });
    const runner = new OpenAIAgentsRunner(support);
    const events = new MemoryEvents();
    const first = await runner.runModelStep(turnContext(events, { history: userHistory }));
    assert.equal(first.kind, "tool_calls_requested");
    assert.deepEqual(events.ofType(HANDOFF_EVENT), [
      { from_agent: "Support", to_agent: "Billing", tool_call_id: "h1" },
    ]);
    assert.equal(first.usage?.modelCalls, 2, "the handoff's next model call is in the same Step");
    assert.deepEqual(
      first.toolCalls.map((call) => [call.toolCallId, call.toolName, call.toolSourceReference]),
      [["b1", "refund", "Billing"]],
    );
    assert.deepEqual(sentTools(server, 1), ["refund"]);

    const refundRecord = {
      ...record("b1", "refund", '{"order": "A1", "amount": 5}', { status: "approved" }),
      toolSourceReference: "Billing",
    };
    const output = await runner.executeDeferredToolCall(toolExecution(refundRecord));
    assert.deepEqual(output, { kind: "tool_execution_result", output: "refunded" });
    const second = await runner.runModelStep(
      turnContext(new MemoryEvents(), {
        history: userHistory,
        frameworkRunState: first.frameworkRunState,
        toolCalls: [{ ...refundRecord, status: "succeeded", output: "refunded" }],
      }),
    );
    assert.equal(second.kind, "turn_completed");
    assert.equal(runs.refund, 1);
    // The restored run continued with Billing: its instructions and tools.
    assert.deepEqual(sentMessages(server, 2)[0], { role: "system", content: "You refund." });
    assert.deepEqual(sentTools(server, 2), ["refund"]);
  });

  test("agents of one graph with the same name are refused", () => {
    const twin = new Agent({ name: "Support" });
    const support = new Agent({ name: "Support", handoffs: [twin] });
    assert.throws(
      () => new OpenAIAgentsRunner(support),
      /two agents reachable from the runner's agent are named "Support"/,
    );
  });
});

describe("arguments the model got wrong", () => {
  let server: ModelServer;
  before(async () => {
    server = await startModelServer([
      {
        tool_calls: [
          { id: "j1", name: "lookup", arguments: "{not json" },
          { id: "j2", name: "lookup", arguments: { order: 5 } },
        ],
      },
      { text: "Let me try again." },
    ]);
  });
  after(async () => await server.stop());

  test("malformed JSON is answered by the SDK itself; a call that misfits the schema is deferred", async () => {
    const { runs, tools } = countedTools();
    const runner = new OpenAIAgentsRunner(new Agent({ name: "Support", model: server.model, tools }));
    const first = await runner.runModelStep(turnContext(new MemoryEvents(), { history: userHistory }));
    assert.equal(first.kind, "tool_calls_requested");
    // The SDK answers a call whose arguments are not JSON before it asks for any approval:
    // nothing runs, and no tool Step is needed.
    assert.deepEqual(
      first.toolCalls.map((call) => [call.toolCallId, call.arguments]),
      [["j2", '{"order": 5}']],
    );
    const mistyped = record("j2", "lookup", '{"order": 5}', { status: "approved" });
    const answered = await runner.executeDeferredToolCall(toolExecution(mistyped));
    assert.deepEqual(answered, {
      kind: "tool_execution_result",
      output: "An error occurred while running the tool. Please try again.",
    });
    await assert.rejects(
      runner.executeDeferredToolCall(toolExecution(record("j3", "lookup", "{not json", { status: "approved" }))),
      new ToolExecutionError('the arguments for tool "lookup" are not valid JSON'),
    );
    assert.equal(runs.lookup, 0, "the tool never ran");

    const output = answered.kind === "tool_execution_result" ? answered.output : "";
    const second = await runner.runModelStep(
      turnContext(new MemoryEvents(), {
        history: userHistory,
        frameworkRunState: first.frameworkRunState,
        toolCalls: [{ ...mistyped, status: "succeeded", output }],
      }),
    );
    assert.equal(second.kind, "turn_completed");
    const results = sentMessages(server, 1).filter((message) => message.role === "tool");
    assert.deepEqual(
      results.map((message) => message.tool_call_id),
      ["j1", "j2"],
    );
    assert.equal(results[1]?.content, output);
    assert.deepEqual(
      (second.newMessages ?? []).map((message) => [message.role, message.toolCallId ?? null]),
      [
        ["assistant", "j1"],
        ["assistant", "j2"],
        ["tool", "j1"],
        ["tool", "j2"],
        ["assistant", null],
      ],
    );
  });
});

describe("the Responses model", () => {
  let server: ModelServer;
  before(async () => {
    server = await startModelServer([
      { tool_calls: [{ id: "w1", name: "lookup", arguments: { order: "A1" } }] },
      { text: "A1 shipped." },
    ]);
  });
  after(async () => await server.stop());

  test("pauses at the calls and resumes with the recorded results the same way", async () => {
    const { tools } = countedTools();
    const runner = new OpenAIAgentsRunner(new Agent({ name: "Support", model: server.responsesModel, tools }));
    const events = new MemoryEvents();
    const first = await runner.runModelStep(turnContext(events, { history: userHistory }));
    assert.equal(first.kind, "tool_calls_requested");
    assert.deepEqual(
      first.toolCalls.map((call) => [call.toolCallId, call.toolName]),
      [["w1", "lookup"]],
    );
    const records = [record("w1", "lookup", "{}", { status: "succeeded", output: "shipped" })];
    const second = await runner.runModelStep(
      turnContext(events, { history: userHistory, frameworkRunState: first.frameworkRunState, toolCalls: records }),
    );
    assert.equal(second.kind, "turn_completed");
    assert.equal(second.newMessages?.at(-1)?.text, "A1 shipped.");
    assert.equal(
      events
        .ofType("text_delta")
        .map((payload) => payload.text)
        .join(""),
      "A1 shipped.",
    );
    const input = (server.requests[1]?.input ?? []) as { type?: string; call_id?: string; output?: unknown }[];
    assert.deepEqual(
      input.filter((item) => item.type === "function_call_output").map((item) => [item.call_id, item.output]),
      [["w1", "shipped"]],
    );
  });
});
