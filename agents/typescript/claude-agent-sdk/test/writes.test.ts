/**
 * Write calls through the runner, the real CLI and the scripted Anthropic server: what the model
 * sees for a rejected write, and a second write call of one response refused until the first's
 * result is in.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { ONE_WRITE_AT_A_TIME } from "../src/texts.js";
import {
  type AnthropicBody,
  type AnthropicServer,
  expectKind,
  record,
  startAnthropicServer,
  testRunner,
  toolRuns,
  turnContext,
  userText,
} from "./support.js";

let server: AnthropicServer;

before(async () => {
  server = await startAnthropicServer([
    { tool_uses: [["toolu_1", "mcp__t__send", { text: "spam" }]] },
    { text: "Not sent." },
    {
      tool_uses: [
        ["toolu_2", "mcp__t__send", { text: "a" }],
        ["toolu_3", "mcp__t__send", { text: "b" }],
        ["toolu_4", "mcp__t__lookup", { q: "c" }],
      ],
    },
    { text: "Sent a; b waits." },
  ]);
});

after(async () => {
  await server.stop();
});

/** The tool_result block the model got for `toolUseId` in a request. */
function toolResult(body: AnthropicBody, toolUseId: string): Record<string, unknown> {
  for (const message of body.messages) {
    if (typeof message.content === "string") continue;
    const found = message.content.find((block) => block.type === "tool_result" && block.tool_use_id === toolUseId);
    if (found !== undefined) return found;
  }
  throw new Error(`no tool_result for ${toolUseId}`);
}

function textOf(block: Record<string, unknown>): string {
  const content = block.content;
  const text =
    typeof content === "string" ? content : (content as { text?: string }[]).map((part) => part.text ?? "").join("");
  return text.split("<system-reminder>")[0]?.trimEnd() ?? ""; // the CLI appends a reminder of its own
}

test("a rejected write never runs and the model sees the rejection as an error result", async () => {
  const runner = testRunner(server.baseUrl);
  const messages = userText("Send spam.");
  const first = expectKind(await runner.runModelStep(turnContext({ messages })), "tool_calls_requested");
  const rejected = record("toolu_1", "mcp__t__send", '{"text":"spam"}', {
    status: "rejected",
    rejectionMessage: "No spam, please.",
  });
  const resumed = turnContext({ messages, frameworkRunState: first.frameworkRunState, toolCalls: [rejected] });
  const last = expectKind(await runner.runModelStep(resumed), "turn_completed");

  assert.equal(last.newMessages?.at(-1)?.text, "Not sent.");
  assert.equal(toolRuns.filter((run) => run.name === "send").length, 0);
  const requests = await server.requests();
  const block = toolResult(requests[1] as AnthropicBody, "toolu_1");
  assert.equal(block.is_error, true);
  assert.equal(textOf(block), "No spam, please.");
});

test("one write call of a response runs at a time: the next gets the refusal, a read runs in the CLI", async () => {
  const runner = testRunner(server.baseUrl);
  const messages = userText("Send a and b, look up c.");
  const before = (await server.requests()).length;
  const first = expectKind(await runner.runModelStep(turnContext({ messages })), "tool_calls_requested");
  assert.deepEqual(
    first.toolCalls.map((call) => call.toolCallId),
    ["toolu_2"],
  );
  const sent = record("toolu_2", "mcp__t__send", '{"text":"a"}', { status: "succeeded", output: "sent a" });
  const resumed = turnContext({ messages, frameworkRunState: first.frameworkRunState, toolCalls: [sent] });
  const last = expectKind(await runner.runModelStep(resumed), "turn_completed");

  assert.equal(last.newMessages?.at(-1)?.text, "Sent a; b waits.");
  assert.deepEqual(
    toolRuns.map((run) => run.name),
    ["lookup"],
  ); // the read ran inside the CLI; neither write ran there
  const requests = await server.requests();
  assert.equal(requests.length - before, 2);
  const seen = requests.at(-1) as AnthropicBody;
  assert.equal(textOf(toolResult(seen, "toolu_2")), "sent a");
  // The pinned CLI shows a hook's deny reason after a prefix of its own.
  assert.equal(textOf(toolResult(seen, "toolu_3")), `PreToolUse:mcp__t__send hook error: ${ONE_WRITE_AT_A_TIME}`);
  assert.equal(toolResult(seen, "toolu_3").is_error, true);
  assert.equal(textOf(toolResult(seen, "toolu_4")), "found c");
  const outputs = last.newMessages?.filter((m) => m.role === "tool").map((m) => [m.toolCallId, m.toolOutput]);
  assert.deepEqual(outputs?.map(([id]) => id).sort(), ["toolu_2", "toolu_3", "toolu_4"]);
});
