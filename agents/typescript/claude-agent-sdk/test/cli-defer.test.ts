/**
 * The pinned CLI's exact behaviour around a deferred write call, through the runner with the real
 * Claude Code CLI and the scripted Anthropic server: the first run stops before the write
 * (`tool_deferred`, the tool not run), the tool Step runs it once, and the resumed run hands the
 * recorded result to the CLI, which sends it to the model without running the tool again.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { RESUME_PROMPT } from "../src/texts.js";
import {
  type AnthropicBody,
  type AnthropicServer,
  expectKind,
  record,
  startAnthropicServer,
  testRunner,
  textsOf,
  toolExecution,
  toolRuns,
  turnContext,
  userText,
} from "./support.js";

let server: AnthropicServer;

before(async () => {
  server = await startAnthropicServer([
    { tool_uses: [["toolu_1", "mcp__t__send", { text: "hello" }]] },
    { text: "Sent hello." },
  ]);
});

after(async () => {
  await server.stop();
});

test("a write is deferred, run once in its Step, and the resumed run sends its result with the prompt", async () => {
  const runner = testRunner(server.baseUrl);
  const messages = userText("Send hello.");
  const first = expectKind(await runner.runModelStep(turnContext({ messages })), "tool_calls_requested");
  assert.deepEqual(first.toolCalls, [
    {
      toolCallId: "toolu_1",
      toolName: "mcp__t__send",
      arguments: '{"text":"hello"}',
      policy: { effect: "unclassified", requiresApproval: true },
    },
  ]);
  assert.deepEqual(toolRuns, []);
  assert.equal((await server.requests()).length, 1);

  const call = record("toolu_1", "mcp__t__send", '{"text":"hello"}', { status: "approved" });
  const outcome = await runner.executeDeferredToolCall(toolExecution(call));
  assert.deepEqual(outcome, { kind: "tool_execution_result", output: "sent hello" });
  assert.deepEqual(toolRuns, [{ name: "send", args: { text: "hello" } }]);

  const done = record("toolu_1", "mcp__t__send", '{"text":"hello"}', { status: "succeeded", output: "sent hello" });
  const resumed = turnContext({ messages, frameworkRunState: first.frameworkRunState, toolCalls: [done] });
  const last = expectKind(await runner.runModelStep(resumed), "turn_completed");

  // The resumed CLI called the tool again and got the recorded result: the tool did not run.
  assert.equal(toolRuns.length, 1);
  assert.equal(last.newMessages?.at(-1)?.text, "Sent hello.");
  assert.deepEqual(
    last.newMessages
      ?.filter((m) => m.role !== "assistant" || m.toolCallId)
      .map((m) => [m.role, m.toolCallId, m.toolOutput ?? null]),
    [
      ["assistant", "toolu_1", null],
      ["tool", "toolu_1", "sent hello"],
    ],
  );
  assert.deepEqual(last.usage?.modelCalls, 1);
  // The pinned CLI (2.1.337) sends the result and the resumed run's prompt in one request: two
  // model requests for the turn, the second ending with the tool's result then the prompt.
  const requests = await server.requests();
  assert.equal(requests.length, 2);
  const second = textsOf(requests[1] as AnthropicBody);
  const [asked, result, prompt] = second.filter((text) => !text.startsWith("<system-reminder>")).slice(-3);
  assert.equal(asked, "Send hello.");
  assert.match(String(result), /^sent hello/); // the CLI appends a reminder of its own
  assert.equal(prompt, RESUME_PROMPT);
});
