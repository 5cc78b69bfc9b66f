/**
 * Whole turns through the runner, the real CLI and the scripted Anthropic server: a read runs
 * inside the CLI run, the next turn resumes the transcript from the stored messages alone, and
 * an error answer fails the attempt (the CLI's own retries are off).
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import type { FrameworkMessage } from "../src/dex.js";
import { parseTurn } from "../src/index.js";
import {
  type AnthropicServer,
  expectKind,
  type MemoryEvents,
  startAnthropicServer,
  stored,
  testRunner,
  textsOf,
  toolRuns,
  turnContext,
  userText,
} from "./support.js";

let server: AnthropicServer;

before(async () => {
  server = await startAnthropicServer([
    { tool_uses: [["toolu_1", "mcp__t__lookup", { q: "oslo" }]] },
    { text: "Oslo is cold." },
    { text: "It snows." },
    { status: 400, text: "bad request" },
    { status: 400, text: "bad request" },
    { status: 400, text: "bad request" },
    { text: "not asked for" },
  ]);
});

after(async () => {
  await server.stop();
});

test("a read runs in the CLI run, and the next turn resumes the transcript from the records", async () => {
  const runner = testRunner(server.baseUrl);
  const context = turnContext({ messages: userText("Weather in Oslo?") });
  const first = expectKind(await runner.runModelStep(context), "turn_completed");

  assert.deepEqual(toolRuns, [{ name: "lookup", args: { q: "oslo" } }]);
  const messages = first.newMessages ?? [];
  assert.deepEqual(
    messages.map((m) => [m.role, m.toolCallId ?? null, m.toolOutput ?? m.text ?? null]),
    [
      ["assistant", "toolu_1", null],
      ["tool", "toolu_1", "found oslo"],
      ["assistant", null, "Oslo is cold."],
    ],
  );
  assert.equal(first.usage?.modelCalls, 2);
  const deltas = (context.events as MemoryEvents).events.filter((e) => e.type === "text_delta");
  assert.equal(deltas.map((e) => e.payload.text).join(""), "Oslo is cold.");
  const transcript = parseTurn(messages.at(-1)?.frameworkItem ?? "");
  assert.ok(transcript !== null && (transcript.entries[""]?.length ?? 0) > 0);

  // The second turn: a new runner (another process) with only the stored messages.
  const history = stored([
    {
      role: "user",
      frameworkItem: JSON.stringify({ kind: "user_text", text: "Weather in Oslo?" }),
      text: "Weather in Oslo?",
    },
    ...messages.map((m: FrameworkMessage) => ({ role: m.role, frameworkItem: m.frameworkItem, text: m.text ?? null })),
    {
      role: "user",
      frameworkItem: JSON.stringify({ kind: "user_text", text: "Will it snow?" }),
      text: "Will it snow?",
    },
  ]);
  const second = expectKind(
    await testRunner(server.baseUrl).runModelStep(turnContext({ messages: history })),
    "turn_completed",
  );
  assert.equal(second.newMessages?.at(-1)?.text, "It snows.");
  assert.equal(parseTurn(second.newMessages?.at(-1)?.frameworkItem ?? "")?.session_id, transcript?.session_id);
  const sent = textsOf((await server.requests())[2] ?? { messages: [] }).filter(
    (t) => !t.startsWith("<system-reminder>"),
  );
  assert.equal(sent[0], "Weather in Oslo?");
  assert.ok(sent.includes("Oslo is cold."));
  assert.equal(sent.at(-1), "Will it snow?");
  assert.equal(toolRuns.length, 1); // the resumed transcript did not run the read again
});

test("an error answer fails the attempt", async () => {
  const before = (await server.requests()).length;
  await assert.rejects(testRunner(server.baseUrl).runModelStep(turnContext({ messages: userText("Hi") })), {
    name: "HarnessTurnError",
    message: /bad request/,
  });
  // The pinned CLI sends a request answered with HTTP 400 three times in all, whatever
  // CLAUDE_CODE_MAX_RETRIES says (README, Limits).
  assert.equal((await server.requests()).length - before, 3);
});
