/** The wire converters against the Python core's own definitions (fields in order, samples
 *  dumped by its models: test/fixtures/make_wire_fixtures.py), and every body field reaching
 *  the runner under its camelCase name. */

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import type { AgentFrameworkRunner } from "../src/runner.js";
import { serveRunners } from "../src/serve.js";
import {
  contextSummaryFromWire,
  contextSummaryResultToWire,
  deferredToolCallToWire,
  frameworkMessageToWire,
  messageFromWire,
  modelCallMetadataToWire,
  planFromWire,
  questionAnswerFromWire,
  toolCallFromWire,
  toolOutcomeToWire,
  toolPolicyToWire,
  turnOutcomeToWire,
  usageFromWire,
  usageToWire,
  type WireAgentMessage,
  type WireAgentToolCall,
} from "../src/wire.js";
import { lines, toolCallRecord, turnBody, userMessage } from "./helpers.js";

interface Fixtures {
  fields: Record<string, string[]>;
  samples: Record<string, Record<string, unknown>>;
}
const { fields, samples } = JSON.parse(
  readFileSync(new URL("../../test/fixtures/wire-fixtures.json", import.meta.url), "utf8"),
) as Fixtures;

/** Only for checking: the camelCase name of a wire field. */
const camel = (name: string): string =>
  name.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
const pyFields = (name: string): string[] => {
  const names = fields[name];
  assert.ok(names, name);
  return names;
};

test("what goes to the engine has the Python fields, in their order", () => {
  const message = { role: "assistant" as const, frameworkItem: "{}" };
  assert.deepEqual(Object.keys(frameworkMessageToWire(message)), pyFields("FrameworkMessage"));
  assert.deepEqual(Object.keys(toolPolicyToWire({})), pyFields("ToolPolicy"));
  const call = { toolCallId: "c", toolName: "n", arguments: "{}" };
  assert.deepEqual(Object.keys(deferredToolCallToWire(call)), pyFields("DeferredToolCall"));
  assert.deepEqual(Object.keys(modelCallMetadataToWire({})), pyFields("ModelCallMetadata"));
  const usage = usageFromWire({});
  assert.deepEqual(Object.keys(usageToWire(usage)), pyFields("AgentUsage"));
  const outcomes = [
    ["TurnCompleted", turnOutcomeToWire({ kind: "turn_completed" })],
    [
      "ToolCallsRequested",
      turnOutcomeToWire({
        kind: "tool_calls_requested",
        frameworkRunState: "s",
        toolCalls: [call],
      }),
    ],
    ["TurnContinued", turnOutcomeToWire({ kind: "turn_continued", frameworkRunState: "s" })],
    ["ToolExecutionResult", toolOutcomeToWire({ kind: "tool_execution_result", output: "o" })],
    ["ToolInputRequested", toolOutcomeToWire({ kind: "tool_input_requested", question: "q" })],
    [
      "ToolTaskStarted",
      toolOutcomeToWire({ kind: "tool_task_started", taskId: "t", pollIntervalSeconds: 1 }),
    ],
    ["ToolTaskPending", toolOutcomeToWire({ kind: "tool_task_pending", pollIntervalSeconds: 1 })],
  ] as const;
  for (const [name, wire] of outcomes) {
    assert.deepEqual(Object.keys(wire), ["kind", ...pyFields(name)], name);
  }
  assert.deepEqual(
    Object.keys(contextSummaryResultToWire({ text: "t" })),
    pyFields("ContextSummaryResult"),
  );
});

test("what comes from the engine keeps every Python field under its camelCase name", () => {
  const converters: [string, (value: never) => object][] = [
    ["AgentMessage", messageFromWire],
    ["AgentToolCall", toolCallFromWire],
    ["QuestionAnswer", questionAnswerFromWire],
    ["AgentUsage", usageFromWire],
    ["AgentPlan", planFromWire],
    ["ContextSummary", contextSummaryFromWire],
  ];
  for (const [name, convert] of converters) {
    const sample = samples[name];
    assert.ok(sample, name);
    const ours = convert(sample as never) as Record<string, unknown>;
    assert.deepEqual(Object.keys(ours), pyFields(name).map(camel), name);
    for (const field of pyFields(name)) {
      const value: unknown = sample[field];
      if (typeof value !== "object" || value === null) {
        assert.equal(ours[camel(field)], value, `${name}.${field}`);
      }
    }
  }
  const call = toolCallFromWire(samples.AgentToolCall as unknown as WireAgentToolCall);
  assert.deepEqual(call.inputAnswers, [
    { interruptId: "i1", question: "Color?", answer: "blue", resolution: "answered" },
  ]);
  assert.deepEqual(call.inputChoices, ["a", "b"]);
  // User data inside a field is not renamed.
  const message = messageFromWire(samples.AgentMessage as unknown as WireAgentMessage);
  assert.equal(message.toolArguments, '{"a_b":1}');
});

test("every body field of every method reaches the runner under its camelCase name", async () => {
  const seen: Record<string, Record<string, unknown>> = {};
  const record = (name: string, value: object): void => {
    seen[name] = value as Record<string, unknown>;
  };
  const runner: AgentFrameworkRunner<string> = {
    parseItem: (item) => item,
    buildUserMessage: (text) => text,
    runModelStep: async (turn) => {
      record("AgentTurnContext", turn);
      return { kind: "turn_completed" };
    },
    executeDeferredToolCall: async (call) => {
      record("DeferredToolExecution", call);
      return { kind: "tool_execution_result", output: "o" };
    },
    pollToolTask: async (poll) => {
      record("ToolTaskPoll", poll);
      return { kind: "tool_task_pending", pollIntervalSeconds: 2 };
    },
    cancelToolTask: async (cancellation) => {
      record("ToolTaskCancellation", cancellation);
    },
    summarizeContext: async (request) => {
      record("ContextSummaryRequest", request);
      return { text: "summary" };
    },
  };
  const handler = serveRunners({ Echo: runner });
  const call = async (method: string, body: unknown) => {
    const request = new Request(`http://runner.local/dex/${method}`, {
      method: "POST",
      body: JSON.stringify(body),
    });
    const got = await lines(await handler.fetch(request));
    assert.ok("result" in (got.at(-1) ?? {}), `${method}: ${JSON.stringify(got)}`);
  };
  const turn = turnBody([userMessage(1, "hi")], { first: 1, last: 1, after: 0 });
  const tool = {
    flow_type: "Echo",
    flow_id: "session-1",
    tool_call: toolCallRecord("refund", {}),
    idempotency_key: "k",
    attempt: 2,
  };
  const answer = samples.QuestionAnswer;
  await call("run_model_step", turn);
  await call("execute_deferred_tool_call", {
    ...tool,
    turn_id: "t1",
    step_execution_id: "s",
    heartbeat_checkpoint: "cp",
    input_answers: [answer],
    supports_tool_tasks: true,
    turn,
  });
  await call("poll_tool_task", { ...tool, input_answers: [answer], pending_answer: answer });
  await call("cancel_tool_task", tool);
  await call("summarize_context", {
    flow_type: "Echo",
    flow_id: "session-1",
    turn_id: "t1",
    attempt: 1,
    step_execution_id: "CompactContext-3",
    deadline: 1_700_000_000_000,
    previous_summary: samples.ContextSummary,
    history: { first_sequence: 1, last_sequence: 1, messages_after: 1 },
    messages: [],
    through_sequence: 1,
    input_token_budget: 1000,
    session_settings: { a_b: 1 },
  });
  for (const name of [
    "AgentTurnContext",
    "DeferredToolExecution",
    "ToolTaskPoll",
    "ToolTaskCancellation",
    "ContextSummaryRequest",
  ]) {
    const got = seen[name];
    assert.ok(got, name);
    for (const field of pyFields(name)) {
      assert.ok(camel(field) in got, `${name} lacks ${camel(field)}`);
      assert.notEqual(got[camel(field)], undefined, `${name}.${camel(field)}`);
    }
  }
  const execution = seen.DeferredToolExecution as { turn: { items: string[] } };
  assert.deepEqual(execution.turn.items, ["hi"]);
  const summary = seen.ContextSummaryRequest as {
    items: string[];
    sessionSettings: unknown;
    stepExecutionId: string;
    deadline: Date | null;
  };
  assert.deepEqual(summary.items, ["hi"]);
  assert.deepEqual(summary.sessionSettings, { a_b: 1 });
  assert.equal(summary.stepExecutionId, "CompactContext-3");
  assert.equal(summary.deadline?.getTime(), 1_700_000_000_000);
});
