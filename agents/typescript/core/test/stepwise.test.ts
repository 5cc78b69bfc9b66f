/** StepwiseRunner in-process, its model calls made by the AI SDK's real OpenAI-compatible
 *  provider against the Python core's scripted Chat Completions server: the Step shapes, the
 *  texts and the request bodies the Python core's Stepwise makes. */

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, before, describe, test } from "node:test";
import { serveRunners } from "../src/serve.js";
import {
  type AgentDefinition,
  aiSdkModelClientApi,
  BUILT_IN_TOOL_DEFINITIONS,
  buildPlanNote,
  CONTINUATION_LIMIT_ERROR,
  continueTurn,
  type ModelClient,
  type ModelRequest,
  StepwiseRunner,
  tool,
} from "../src/stepwise/index.js";
import * as texts from "../src/texts.js";
import { PROTOCOL_VERSION } from "../src/wire.js";
import { listen } from "./helpers.js";
import {
  hasUv,
  MemoryEvents,
  type ModelServer,
  pythonValue,
  record,
  type ScriptedReply,
  startModelServer,
  stored,
  toolExecution,
  turnContext,
} from "./stepwise-support.js";

const weatherRuns: string[] = [];
const getWeather = tool<{ city: string }>({
  name: "get_weather",
  description: "The weather in a city.",
  parameters: {
    type: "object",
    properties: { city: { type: "string", description: "The city's name." } },
    required: ["city"],
    additionalProperties: false,
  },
  effect: "read",
  execute: ({ city }, { idempotencyKey }) => {
    weatherRuns.push(`${city}@${idempotencyKey}`);
    return { city, forecast: "sunny" };
  },
});
const sendEmail = tool<{ to: string }>({
  name: "send_email",
  description: "Send an email.",
  parameters: { type: "object", properties: { to: { type: "string" } }, required: ["to"] },
  effect: "non_idempotent_write",
  execute: ({ to }) => `sent to ${to}`,
});

/** Every test's scripted replies, in the order the tests run: one model server serves them
 *  all, and each test checks that it starts where the previous one stopped. */
const SCRIPT: [string, ScriptedReply[]][] = [
  [
    "tool turn",
    [
      { tool_calls: [{ id: "call_1", name: "get_weather", arguments: { city: "Paris" } }] },
      { text: "It is sunny in Paris." },
    ],
  ],
  ["outcomes", [{ text: "Understood." }]],
  ["settings", [{ text: "Hello." }]],
  [
    "built-ins",
    [{ tool_calls: [{ id: "q1", name: "ask_user", arguments: { question: "Which city?" } }] }],
  ],
  [
    "planning",
    [
      { tool_calls: [{ id: "p1", name: "write_todos", arguments: { todos: [] } }] },
      { text: "Done." },
    ],
  ],
  ["unforced", []],
  ["continuations", Array.from({ length: 9 }, (_, i) => ({ text: `Answer ${i}` }))],
  ["end", []],
  ["summary", [{ text: "  The user asked about Paris.  " }]],
  ["cancel", [{ text: "late", delay_seconds: 30 }]],
];

let shared: ModelServer | undefined;
before(async () => {
  if (hasUv) shared = await startModelServer(SCRIPT.flatMap(([, replies]) => replies));
});
after(async () => {
  await shared?.stop();
});

interface Segment {
  /** The requests this test made. */
  requests: Record<string, unknown>[];
  model: ModelServer["model"];
}

/** The scripted replies of test `name`, checking the earlier tests used theirs. */
function server(name: string): Segment {
  if (shared === undefined) throw new Error("no model server");
  const index = SCRIPT.findIndex(([segment]) => segment === name);
  const offset = SCRIPT.slice(0, index).reduce((sum, [, replies]) => sum + replies.length, 0);
  const all = shared.requests;
  assert.equal(all.length, offset, `the tests before "${name}" made other requests than scripted`);
  return {
    get requests() {
      return all.slice(offset);
    },
    model: shared.model,
  };
}

function runner(model: ModelClient, extra: Partial<AgentDefinition> = {}): StepwiseRunner {
  return new StepwiseRunner({
    name: "Assistant",
    instructions: "You are helpful.",
    tools: [getWeather, sendEmail],
    model,
    ...extra,
  });
}

type Body = { messages: Record<string, unknown>[]; tools?: { function: { name: string } }[] };
const toolNames = (body: Record<string, unknown>): string[] =>
  ((body as Body).tools ?? []).map((t) => t.function.name);
const messagesOf = (body: Record<string, unknown>): Record<string, unknown>[] =>
  (body as Body).messages;

describe("Stepwise", { skip: !hasUv && "uv is not installed" }, () => {
  test("a tool call is one ToolCallsRequested, its tool runs in a tool Step, then the answer", async () => {
    const model = server("tool turn");
    const agent = runner(aiSdkModelClientApi(model.model()));
    const events = new MemoryEvents();
    const user = stored(1, "turn-1", { role: "user", content: "Weather in Paris?" });

    const first = await agent.runModelStep(turnContext(events, { messages: [user] }));
    assert.equal(first.kind, "tool_calls_requested");
    assert.ok(first.kind === "tool_calls_requested");
    assert.deepEqual(first.toolCalls, [
      {
        toolCallId: "call_1",
        toolName: "get_weather",
        arguments: '{"city":"Paris"}',
        policy: { effect: "read", requiresApproval: false },
      },
    ]);
    assert.equal(first.usage?.modelCalls, 1);
    const state = JSON.parse(first.frameworkRunState) as { items: unknown[] };
    assert.deepEqual(state, {
      items: [
        {
          role: "assistant",
          content: null,
          tool_calls: [
            {
              id: "call_1",
              type: "function",
              function: { name: "get_weather", arguments: '{"city":"Paris"}' },
            },
          ],
        },
      ],
    });

    const call = record("call_1", "get_weather", '{"city":"Paris"}', {
      status: "awaiting_approval",
    });
    const outcome = await agent.executeDeferredToolCall(toolExecution(call));
    assert.deepEqual(outcome, {
      kind: "tool_execution_result",
      output: '{"city":"Paris","forecast":"sunny"}',
    });
    assert.deepEqual(weatherRuns, ["Paris@flow-1/turn-1/call_1"]);

    const done = record("call_1", "get_weather", '{"city":"Paris"}', {
      status: "succeeded",
      output: outcome.kind === "tool_execution_result" ? outcome.output : "",
    });
    const second = await agent.runModelStep(
      turnContext(events, {
        messages: [user],
        frameworkRunState: first.frameworkRunState,
        toolCalls: [done],
      }),
    );
    assert.equal(second.kind, "turn_completed");
    assert.ok(second.kind === "turn_completed");
    assert.deepEqual(
      second.newMessages?.map((m) => [m.role, m.text ?? m.toolOutput ?? null, m.toolCallId]),
      [
        ["assistant", null, "call_1"],
        ["tool", '{"city":"Paris","forecast":"sunny"}', "call_1"],
        ["assistant", "It is sunny in Paris.", null],
      ],
    );
    assert.equal(events.texts("text_delta").join(""), "It is sunny in Paris.");

    // The second request: system, user, the call and its result (no name on the result).
    const messages = messagesOf(model.requests[1] ?? {});
    assert.deepEqual(
      messages.map((m) => m.role),
      ["system", "user", "assistant", "tool"],
    );
    assert.deepEqual(messages[0], { role: "system", content: "You are helpful." });
    assert.deepEqual(messages[3], {
      role: "tool",
      tool_call_id: "call_1",
      content: '{"city":"Paris","forecast":"sunny"}',
    });
    assert.deepEqual(toolNames(model.requests[0] ?? {}), ["get_weather", "send_email"]);
    // The SDK's own retries are off: every request is one model call.
    assert.equal(model.requests.length, 2);
  });

  test("the model sees a failed, rejected or unknown outcome in the core's texts", async () => {
    const model = server("outcomes");
    const agent = runner(aiSdkModelClientApi(model.model()));
    const calls = [
      { id: "a", name: "send_email" },
      { id: "b", name: "send_email" },
      { id: "c", name: "get_weather" },
    ];
    const runState = JSON.stringify({
      items: [
        {
          role: "assistant",
          content: null,
          tool_calls: calls.map((c) => ({
            id: c.id,
            type: "function",
            function: { name: c.name, arguments: "{}" },
          })),
        },
      ],
    });
    await agent.runModelStep(
      turnContext(new MemoryEvents(), {
        messages: [stored(1, "turn-1", { role: "user", content: "Go" })],
        frameworkRunState: runState,
        toolCalls: [
          record("a", "send_email", "{}", { status: "failed", error: "SMTP down" }),
          record("b", "send_email", "{}", { status: "rejected", rejectionMessage: null }),
          record("c", "get_weather", "{}", { status: "outcome_unknown" }),
        ],
      }),
    );
    const results = messagesOf(model.requests[0] ?? {}).filter((m) => m.role === "tool");
    assert.deepEqual(
      results.map((m) => m.content),
      [
        `${texts.TOOL_CALL_FAILED_PREFIX}SMTP down`,
        texts.DEFAULT_REJECTION_TEXT,
        texts.OUTCOME_UNKNOWN_TEXT,
      ],
    );
  });

  test("session settings choose the instructions and the model of each call", async () => {
    const model = server("settings");
    const agent = new StepwiseRunner({
      name: "Assistant",
      instructions: ({ sessionSettings }) => String(sessionSettings.instructions ?? "Default."),
      resolveModel: (settings) =>
        aiSdkModelClientApi(model.model(String(settings.model ?? "small"))),
    });
    await agent.runModelStep(
      turnContext(new MemoryEvents(), {
        messages: [stored(1, "turn-1", { role: "user", content: "Hi" })],
        sessionSettings: { model: "large", instructions: "Answer in one word." },
      }),
    );
    const body = model.requests[0] ?? {};
    assert.equal(body.model, "large");
    assert.deepEqual(messagesOf(body)[0], { role: "system", content: "Answer in one word." });
  });

  test("enabled built-ins are offered after the agent's tools and run as the session's", async () => {
    const model = server("built-ins");
    const askUser = tool({ name: "ask_user", description: "shadowed", execute: () => "no" });
    const agent = runner(aiSdkModelClientApi(model.model()), { tools: [getWeather, askUser] });
    const outcome = await agent.runModelStep(
      turnContext(new MemoryEvents(), {
        messages: [stored(1, "turn-1", { role: "user", content: "Plan a trip" })],
        enabledBuiltInTools: ["ask_user", "durable_wait", "write_todos"],
      }),
    );
    const body = model.requests[0] as { tools: unknown[] };
    assert.deepEqual(toolNames(body), ["get_weather", "ask_user", "durable_wait", "write_todos"]);
    assert.deepEqual(body.tools.slice(1), [
      BUILT_IN_TOOL_DEFINITIONS.ask_user,
      BUILT_IN_TOOL_DEFINITIONS.durable_wait,
      BUILT_IN_TOOL_DEFINITIONS.write_todos,
    ]);
    assert.ok(outcome.kind === "tool_calls_requested");
    assert.deepEqual(outcome.toolCalls[0]?.policy, { effect: "read", requiresApproval: false });
  });

  test("a planning turn offers only write_todos, with the plan note, and can force it", async () => {
    const model = server("planning");
    const agent = runner(aiSdkModelClientApi(model.model()), { planningToolChoice: "required" });
    const planning = {
      messages: [stored(1, "turn-1", { role: "user", content: "Plan a trip" })],
      enabledBuiltInTools: ["ask_user", "durable_wait", "write_todos"],
      interactionMode: "planning" as const,
    };
    const first = await agent.runModelStep(turnContext(new MemoryEvents(), planning));
    assert.ok(first.kind === "tool_calls_requested");
    const body = model.requests[0] ?? {};
    assert.deepEqual(toolNames(body), ["write_todos"]);
    assert.deepEqual(body.tool_choice, { type: "function", function: { name: "write_todos" } });
    assert.deepEqual(
      messagesOf(body).map((m) => m.content),
      ["You are helpful.", buildPlanNote(null, "planning"), "Plan a trip"],
    );
    // The second call of the turn is not forced.
    await agent.runModelStep(
      turnContext(new MemoryEvents(), {
        ...planning,
        frameworkRunState: first.frameworkRunState,
        toolCalls: [record("p1", "write_todos", "{}", { status: "succeeded", output: "{}" })],
      }),
    );
    assert.equal(model.requests[1]?.tool_choice, "auto");
  });

  test("a model that cannot be forced ends the planning turn with the problem", async () => {
    const model = server("unforced");
    const unforced = aiSdkModelClientApi(model.model(), { forcedToolChoice: false });
    assert.throws(
      () => runner(unforced, { planningToolChoice: "required" }),
      new RangeError(texts.forcedChoiceProblem("scripted-model")),
    );
    const agent = runner(unforced, {
      model: undefined,
      resolveModel: () => unforced,
      planningToolChoice: "required",
    });
    const outcome = await agent.runModelStep(
      turnContext(new MemoryEvents(), {
        messages: [stored(1, "turn-1", { role: "user", content: "Plan" })],
        enabledBuiltInTools: ["write_todos"],
        interactionMode: "planning",
      }),
    );
    assert.deepEqual(outcome, {
      kind: "turn_completed",
      newMessages: [],
      usage: {
        modelCalls: 0,
        inputTokens: 0,
        outputTokens: 0,
        cachedInputTokens: 0,
        reasoningTokens: 0,
      },
      turnError: texts.forcedChoiceProblem("scripted-model"),
    });
    assert.equal(model.requests.length, 0);
  });

  test("decideTurnContinuation continues a turn, at most 8 times in a row", async () => {
    const model = server("continuations");
    const seen: number[] = [];
    const agent = runner(aiSdkModelClientApi(model.model()), {
      decideTurnContinuation: ({ after, consecutiveContinuations }) => {
        assert.equal(after, "answer");
        seen.push(consecutiveContinuations);
        return continueTurn("Go on.");
      },
    });
    const messages = [stored(1, "turn-1", { role: "user", content: "Start" })];
    let state: string | null = null;
    let sequence = 1;
    for (let i = 0; i < 8; i++) {
      const outcome = await agent.runModelStep(
        turnContext(new MemoryEvents(), { messages, frameworkRunState: state }),
      );
      assert.ok(outcome.kind === "turn_continued", `call ${i}: ${outcome.kind}`);
      assert.deepEqual(
        outcome.newMessages?.map((m) => [m.role, m.text]),
        [
          ["assistant", `Answer ${i}`],
          ["user", "Go on."],
        ],
      );
      for (const message of outcome.newMessages ?? []) {
        sequence += 1;
        messages.push(
          stored(sequence, "turn-1", JSON.parse(message.frameworkItem) as Record<string, unknown>),
        );
      }
      state = outcome.frameworkRunState;
    }
    const last = await agent.runModelStep(
      turnContext(new MemoryEvents(), { messages, frameworkRunState: state }),
    );
    assert.ok(last.kind === "turn_completed");
    assert.equal(last.turnError, CONTINUATION_LIMIT_ERROR);
    assert.deepEqual(seen, [0, 1, 2, 3, 4, 5, 6, 7, 8]);
    // Each request ends with the continuation's user text.
    assert.deepEqual(messagesOf(model.requests[1] ?? {}).at(-1), {
      role: "user",
      content: "Go on.",
    });
  });

  test('"end" after the tool calls completes the turn with their results, no model call', async () => {
    const model = server("end");
    const agent = runner(aiSdkModelClientApi(model.model()), {
      decideTurnContinuation: ({ after, toolCalls }) =>
        after === "tool_calls" && toolCalls[0]?.toolName === "send_email" ? "end" : null,
    });
    const runState = JSON.stringify({
      items: [
        {
          role: "assistant",
          content: null,
          tool_calls: [
            {
              id: "e1",
              type: "function",
              function: { name: "send_email", arguments: '{"to":"a"}' },
            },
          ],
        },
      ],
    });
    const outcome = await agent.runModelStep(
      turnContext(new MemoryEvents(), {
        messages: [stored(1, "turn-1", { role: "user", content: "Mail a" })],
        frameworkRunState: runState,
        toolCalls: [
          record("e1", "send_email", '{"to":"a"}', { status: "succeeded", output: "sent to a" }),
        ],
      }),
    );
    assert.ok(outcome.kind === "turn_completed");
    assert.deepEqual(
      outcome.newMessages?.map((m) => [m.role, m.toolOutput ?? null]),
      [
        ["assistant", null],
        ["tool", "sent to a"],
      ],
    );
    assert.equal(model.requests.length, 0);
  });

  test("a summary call starts with the earlier summary and ends with the instruction", async () => {
    const model = server("summary");
    const agent = runner(aiSdkModelClientApi(model.model()));
    const call = {
      role: "assistant",
      content: null,
      tool_calls: [
        {
          id: "c1",
          type: "function",
          function: { name: "get_weather", arguments: '{"city":"Paris"}' },
        },
      ],
    };
    const messages = [
      stored(1, "turn-1", { role: "user", content: "Weather in Paris?" }),
      stored(2, "turn-1", call, { toolCallId: "c1" }),
      stored(3, "turn-1", {
        role: "tool",
        tool_call_id: "c1",
        name: "get_weather",
        content: "sunny",
      }),
      stored(4, "turn-1", { role: "assistant", content: "Sunny." }),
      stored(5, "turn-2", { role: "user", content: "And Lima?" }),
    ];
    const items = messages.map((m) => agent.parseItem(m.frameworkItem));
    // No cut between the call and its result: the cuts are after 1 (the user), 4 and not 5.
    assert.equal(agent.selectCompactionCutoff(turnContext(new MemoryEvents(), { messages }), 0), 4);
    const result = await agent.summarizeContext({
      flowType: "Test",
      flowId: "flow-1",
      turnId: "turn-2",
      attempt: 1,
      stepExecutionId: "CompactContext-1",
      previousSummary: {
        generation: 1,
        firstSequence: 0,
        lastSequence: 0,
        text: "Earlier.",
        createdAt: "",
      },
      history: { firstSequence: 1, lastSequence: 4 },
      messages: messages.slice(0, 4),
      items: items.slice(0, 4),
      throughSequence: 4,
      events: new MemoryEvents(),
      heartbeat: () => {},
      cancellationSignal: new AbortController().signal,
      deadline: null,
      inputTokenBudget: 10_000,
      sessionSettings: {},
    });
    assert.equal(result.text, "The user asked about Paris.");
    assert.deepEqual(
      messagesOf(model.requests[0] ?? {}).map((m) => m.content),
      [
        `${texts.CONTEXT_SUMMARY_PREFIX}\nEarlier.`,
        [
          "User: Weather in Paris?",
          'Assistant called get_weather with {"city":"Paris"}',
          "Tool result (get_weather): sunny",
          "Assistant: Sunny.",
          texts.CONTEXT_SUMMARY_INSTRUCTION,
        ].join("\n\n"),
      ],
    );
  });

  test("cancelling the turn aborts the model call", async () => {
    const model = server("cancel");
    const agent = runner(aiSdkModelClientApi(model.model()));
    const controller = new AbortController();
    const pending = agent.runModelStep(
      turnContext(new MemoryEvents(), {
        messages: [stored(1, "turn-1", { role: "user", content: "Hi" })],
        signal: controller.signal,
      }),
    );
    setTimeout(() => controller.abort(new Error("turn cancelled")), 300);
    const started = Date.now();
    await assert.rejects(pending, /turn cancelled|abort/i);
    assert.ok(Date.now() - started < 10_000);
  });
});

describe("Stepwise tools", () => {
  test("the model call gets the turn's cancellation signal and the Step's deadline", async () => {
    const requests: ModelRequest[] = [];
    const recorder: ModelClient = {
      model: "recorder",
      complete: async (request) => {
        requests.push(request);
        const usage = {
          modelCalls: 1,
          inputTokens: 1,
          outputTokens: 1,
          cachedInputTokens: 0,
          reasoningTokens: 0,
        };
        return { item: { role: "assistant", content: "Hi." }, usage, metadata: {} };
      },
      supportsForcedToolChoice: () => false,
    };
    const signal = new AbortController().signal;
    const deadline = new Date(1_700_000_000_000);
    const user = stored(1, "turn-1", { role: "user", content: "Hello" });
    const turn = { ...turnContext(new MemoryEvents(), { messages: [user], signal }), deadline };
    const outcome = await runner(recorder).runModelStep(turn);
    assert.equal(outcome.kind, "turn_completed");
    assert.equal(requests[0]?.cancellationSignal, signal);
    assert.equal(requests[0]?.deadline, deadline);
  });

  test("arguments are checked against the schema before the tool runs", async () => {
    const run = (args: string) =>
      getWeather.run(args, toolExecution(record("x", "get_weather", args, { status: "approved" })));
    await assert.rejects(run("{"), {
      name: "ToolExecutionError",
      message: texts.argumentsNotJsonText("get_weather"),
    });
    await assert.rejects(run("{}"), {
      message: texts.invalidArgumentsText("get_weather", "city is required"),
    });
    await assert.rejects(run('{"city":3}'), {
      message: texts.invalidArgumentsText("get_weather", "city must be string"),
    });
    await assert.rejects(run('{"city":"A","x":1}'), {
      message: texts.invalidArgumentsText("get_weather", 'unknown argument "x"'),
    });
    assert.equal(weatherRuns.filter((r) => r.startsWith("A@")).length, 0);
  });

  test("an unknown tool fails with the core's text and no approval", async () => {
    const agent = new StepwiseRunner({
      name: "A",
      instructions: "",
      tools: [getWeather],
      model: aiSdkModelClientApi("unused"),
    });
    await assert.rejects(
      agent.executeDeferredToolCall(
        toolExecution(record("u", "nope", "{}", { status: "approved" })),
      ),
      { name: "ToolExecutionError", message: texts.unknownToolText("nope", ["get_weather"]) },
    );
  });

  test("a definition without a model, or two tools of one name, is refused", () => {
    assert.throws(
      () => new StepwiseRunner({ name: "A", instructions: "" }),
      /needs a model or resolveModel/,
    );
    assert.throws(
      () =>
        new StepwiseRunner({
          name: "A",
          instructions: "",
          tools: [getWeather, getWeather],
          model: aiSdkModelClientApi("unused"),
        }),
      /two tools are named "get_weather"/,
    );
  });
});

describe("Stepwise texts", { skip: !hasUv && "uv is not installed" }, () => {
  test("the built-ins, plan note and summary texts are the Python core's, word for word", () => {
    const plan = {
      revision: 2,
      status: "active" as const,
      tasks: [{ content: "Pack", status: "pending" as const }],
      updatedAt: "",
    };
    const python = pythonValue(
      "from dex_agents import builtins, texts\nfrom dex_agents.stepwise import definition\n" +
        "from dex_agents.types import AgentPlan, AgentPlanTask\n" +
        "plan = AgentPlan(revision=2, status='active', tasks=[AgentPlanTask(content='Pack', status='pending')], updated_at='')",
      "dict(definitions=builtins.BUILT_IN_TOOL_DEFINITIONS, names=list(builtins.BUILT_IN_TOOL_NAMES), " +
        "planning_line=builtins.PLAN_NOTE_PLANNING_LINE, no_plan=builtins.NO_PLAN_YET, " +
        "rejection=builtins.PLANNING_TURN_REJECTION, " +
        "note_planning=builtins.build_plan_note(None, 'planning'), " +
        "note_plan=builtins.build_plan_note(plan, 'executing'), " +
        "note_plan_planning=builtins.build_plan_note(plan, 'planning'), " +
        "prefix=texts.CONTEXT_SUMMARY_PREFIX, instruction=texts.CONTEXT_SUMMARY_INSTRUCTION, " +
        "left_out=[texts.context_left_out_note(1), texts.context_left_out_note(3)], " +
        "limit=definition.CONTINUATION_LIMIT_ERROR, max=definition.MAX_CONSECUTIVE_CONTINUATIONS)",
    );
    assert.deepEqual(python, {
      definitions: texts.BUILT_IN_TOOL_DEFINITIONS,
      names: [...texts.BUILT_IN_TOOL_NAMES],
      planning_line: texts.PLAN_NOTE_PLANNING_LINE,
      no_plan: texts.NO_PLAN_YET,
      rejection: texts.PLANNING_TURN_REJECTION,
      note_planning: buildPlanNote(null, "planning"),
      note_plan: buildPlanNote(plan, "executing"),
      note_plan_planning: buildPlanNote(plan, "planning"),
      prefix: texts.CONTEXT_SUMMARY_PREFIX,
      instruction: texts.CONTEXT_SUMMARY_INSTRUCTION,
      left_out: [texts.contextLeftOutNote(1), texts.contextLeftOutNote(3)],
      limit: CONTINUATION_LIMIT_ERROR,
      max: texts.MAX_CONSECUTIVE_CONTINUATIONS,
    });
  });
});

describe("Stepwise README", () => {
  test("the README's example is e2e/readme-example.ts, which e2e/test_features.py runs", () => {
    const readme = readFileSync("README.md", "utf8");
    const section = readme.slice(readme.indexOf("## Stepwise"));
    const block = /```ts\n([\s\S]*?)```/.exec(section)?.[1];
    const example = readFileSync("e2e/readme-example.ts", "utf8");
    assert.equal(
      block,
      example.replace('from "../src/index.js"', 'from "@superdurable/dex-agents"'),
    );
  });
});

describe("Stepwise served", () => {
  test("serveRunners describes its capabilities: compaction, plan mode, unfinished turns", async () => {
    const agent = new StepwiseRunner({
      name: "A",
      instructions: "",
      model: aiSdkModelClientApi("unused"),
    });
    const served = await listen(serveRunners({ Assistant: agent }));
    try {
      const response = await fetch(`${served.url}/describe`);
      assert.deepEqual(await response.json(), {
        protocol_version: PROTOCOL_VERSION,
        flows: {
          Assistant: {
            capabilities: {
              unfinished_turn_messages: true,
              tool_tasks: false,
              tool_task_cancellation: false,
              context_compaction: true,
              plan_mode: true,
              tool_steps_read_turn: false,
            },
          },
        },
      });
    } finally {
      await served.close();
    }
  });
});
