import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { jsonSchema, type ModelMessage, tool } from "ai";
import { z } from "zod";
import { ToolExecutionError } from "../src/dex.js";
import { VercelAiRunner } from "../src/index.js";
import { declaredPolicy } from "../src/policy.js";
import { OUTCOME_UNKNOWN_TEXT } from "../src/texts.js";
import {
  MemoryEvents,
  type ModelServer,
  record,
  startModelServer,
  storedMessage,
  toolExecution,
  turnContext,
} from "./support.js";

const MODEL_UNUSED = "unused-model";

describe("a tool Step", () => {
  test("a thrown error becomes a failure the model reads", async () => {
    let runs = 0;
    const runner = new VercelAiRunner({
      model: MODEL_UNUSED,
      tools: {
        charge: tool({
          inputSchema: z.object({ cents: z.number() }),
          execute: async (): Promise<string> => {
            runs += 1;
            throw new Error("card declined");
          },
        }),
      },
    });
    const call = record("k1", "charge", '{"cents":100}', { status: "approved" });
    await assert.rejects(runner.executeDeferredToolCall(toolExecution(call)), (error: unknown) => {
      assert.ok(error instanceof ToolExecutionError);
      assert.equal(error.message, "card declined");
      return true;
    });
    assert.equal(runs, 1);
  });

  test("gets the call's ID and abort signal, and an abort ends it", async () => {
    const seen: string[] = [];
    const runner = new VercelAiRunner({
      model: MODEL_UNUSED,
      tools: {
        wait: tool({
          inputSchema: z.object({}),
          execute: (_input: Record<string, never>, options) =>
            new Promise((_resolve, reject) => {
              seen.push(options.toolCallId);
              options.abortSignal?.addEventListener("abort", () => reject(options.abortSignal?.reason));
            }),
        }),
      },
    });
    const controller = new AbortController();
    const started = Date.now();
    const running = runner.executeDeferredToolCall(
      toolExecution(record("w1", "wait", "{}", { status: "approved" }), controller.signal),
    );
    setTimeout(() => controller.abort(new Error("worker gone")), 100);
    await assert.rejects(running, (error: unknown) => {
      assert.ok(!(error instanceof ToolExecutionError), "an abort is not a tool failure");
      assert.match(String(error), /worker gone/);
      return true;
    });
    assert.deepEqual(seen, ["w1"]);
    assert.ok(Date.now() - started < 2_000);
  });

  test("a streaming tool's last value is its result; a JSON-schema tool is validated too", async () => {
    const runner = new VercelAiRunner({
      model: MODEL_UNUSED,
      tools: {
        progress: tool({
          inputSchema: jsonSchema<{ steps: number }>({
            type: "object",
            properties: { steps: { type: "number" } },
            required: ["steps"],
          }),
          async *execute({ steps }: { steps: number }) {
            for (let step = 1; step <= steps; step += 1) {
              yield { done: step, of: steps };
            }
          },
        }),
      },
    });
    const result = await runner.executeDeferredToolCall(
      toolExecution(record("p1", "progress", '{"steps":3}', { status: "approved" })),
    );
    assert.deepEqual(result, { kind: "tool_execution_result", output: '{"done":3,"of":3}' });
  });

  test("gets its entry of the runner's toolsContext", async () => {
    const runner = new VercelAiRunner({
      model: MODEL_UNUSED,
      toolsContext: { whoami: { tenant: "acme" } },
      tools: {
        whoami: tool({
          inputSchema: z.object({}),
          contextSchema: z.object({ tenant: z.string() }),
          execute: async (_input, options) => options.context.tenant,
        }),
      },
    });
    const result = await runner.executeDeferredToolCall(
      toolExecution(record("t1", "whoami", "{}", { status: "approved" })),
    );
    assert.deepEqual(result, { kind: "tool_execution_result", output: "acme" });
  });

  test("a tool the runner does not have fails with the names it has", async () => {
    const runner = new VercelAiRunner({
      model: MODEL_UNUSED,
      tools: { a: tool({ inputSchema: z.object({}), execute: async () => 1 }) },
    });
    await assert.rejects(
      runner.executeDeferredToolCall(toolExecution(record("x1", "gone", "{}", { status: "approved" }))),
      new ToolExecutionError('there is no tool named "gone"; the tools are: a'),
    );
  });
});

describe("tool metadata", () => {
  test("declares the effect: durableTool's fields, else MCP-style hints, else nothing", () => {
    const schema = z.object({});
    assert.deepEqual(declaredPolicy(tool({ inputSchema: schema, metadata: { annotations: { readOnlyHint: true } } })), {
      effect: "read",
      requiresApproval: null,
    });
    assert.deepEqual(
      declaredPolicy(tool({ inputSchema: schema, metadata: { annotations: { idempotentHint: true } } })),
      { effect: "idempotent_write", requiresApproval: null },
    );
    assert.deepEqual(
      declaredPolicy(
        tool({ inputSchema: schema, metadata: { effect: "non_idempotent_write", requiresApproval: false } }),
      ),
      { effect: "non_idempotent_write", requiresApproval: false },
    );
    assert.deepEqual(declaredPolicy(tool({ inputSchema: schema, metadata: { effect: "bogus" } })), {
      effect: null,
      requiresApproval: null,
    });
  });
});

describe("results the model reads", () => {
  let server: ModelServer;
  before(async () => {
    server = await startModelServer([
      {
        tool_calls: [
          { id: "s1", name: "say", arguments: { words: "hi" } },
          { id: "f1", name: "formatted", arguments: {} },
        ],
      },
      { text: "Done." },
    ]);
  });
  after(async () => await server.stop());

  test("go back as the SDK sends them: a string as text, toModelOutput applied", async () => {
    const runner = new VercelAiRunner({
      model: server.model,
      tools: {
        say: tool({ inputSchema: z.object({ words: z.string() }), execute: async ({ words }) => `said ${words}` }),
        formatted: tool({
          inputSchema: z.object({}),
          execute: async () => ({ rows: 2 }),
          toModelOutput: ({ output }) => ({ type: "text", value: `${(output as { rows: number }).rows} rows` }),
        }),
      },
    });
    const user = { role: "user", content: "Go." } as const satisfies ModelMessage;
    const history = [{ message: storedMessage(1, "turn-1", user, user.content), item: user }];
    const first = await runner.runModelStep(turnContext(new MemoryEvents(), { history }));
    assert.equal(first.kind, "tool_calls_requested");
    const records = [];
    for (const call of first.toolCalls) {
      const stepRecord = record(call.toolCallId, call.toolName, call.arguments, { status: "approved" });
      const outcome = await runner.executeDeferredToolCall(toolExecution(stepRecord));
      assert.equal(outcome.kind, "tool_execution_result");
      records.push({
        ...stepRecord,
        status: "succeeded" as const,
        output: outcome.kind === "tool_execution_result" ? outcome.output : null,
      });
    }
    assert.deepEqual(
      records.map((entry) => entry.output),
      ["said hi", '{"rows":2}'],
    );
    const turn = turnContext(new MemoryEvents(), {
      history,
      frameworkRunState: first.frameworkRunState,
      toolCalls: records,
    });
    const second = await runner.runModelStep(turn);
    assert.equal(second.kind, "turn_completed");
    const sent = (server.requests[1]?.messages ?? []) as { role: string; content: unknown }[];
    assert.deepEqual(
      sent.filter((message) => message.role === "tool").map((message) => message.content),
      ["said hi", "2 rows"],
    );
  });
});

describe("an unfinished turn", () => {
  test("keeps its messages, with the outcome unknown for a call that never finished", async () => {
    const runner = new VercelAiRunner({ model: MODEL_UNUSED });
    const state: ModelMessage[] = [
      {
        role: "assistant",
        content: [
          { type: "text", text: "Checking." },
          { type: "tool-call", toolCallId: "a1", toolName: "lookup", input: { order: "A1" } },
          { type: "tool-call", toolCallId: "a2", toolName: "refund", input: { order: "A1" } },
        ],
      },
    ];
    const records = [
      record("a1", "lookup", '{"order":"A1"}', { status: "succeeded", output: '{"ok":true}' }),
      record("a2", "refund", '{"order":"A1"}', { status: "approved" }),
    ];
    const turn = turnContext(new MemoryEvents(), { frameworkRunState: JSON.stringify(state), toolCalls: records });
    const messages = await runner.buildUnfinishedTurnMessages(turn);
    assert.deepEqual(
      messages.map((message) => [
        message.role,
        message.text ?? null,
        message.toolCallId ?? null,
        message.toolOutput ?? null,
      ]),
      [
        ["assistant", "Checking.", null, null],
        ["assistant", null, "a1", null],
        ["assistant", null, "a2", null],
        ["tool", null, "a1", '{"ok":true}'],
        ["tool", null, "a2", OUTCOME_UNKNOWN_TEXT],
      ],
    );
  });
});
