/**
 * `toolSources`: the core's McpToolSource over the Python core's stdio MCP server
 * (`dex_agents.testing.mcp_server`, a real process per request, each run of a tool logged with
 * the idempotency key it got in `_meta`), served to the real Claude Code CLI by the runner and
 * driven by the scripted Anthropic server. The model sees the source's tools with their JSON
 * Schemas as `mcp__<key>__<tool>`; a read runs inside the CLI run with the key of its tool_use
 * ID; a write is deferred, runs once in its tool Step with the Step's key, and the resumed run
 * hands its recorded result to the model without calling the server again.
 */
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { after, before, test } from "node:test";
import { McpToolSource, stdioServer } from "@superdurable/dex-agents/mcp";
import { readToolLog } from "@superdurable/dex-agents/testing";
import type { ToolPolicy } from "../src/dex.js";
import { ClaudeAgentRunner } from "../src/index.js";
import {
  type AnthropicBody,
  type AnthropicServer,
  expectKind,
  record,
  startAnthropicServer,
  toolExecution,
  turnContext,
  userText,
} from "./support.js";

const PYTHON = resolve(process.cwd(), "..", "..", "python", "core", ".venv", "bin", "python");
const LOOKUP = "mcp__shop__orders__lookup_order";
const REFUND = "mcp__shop__orders__refund_order";

let server: AnthropicServer;
const log = join(mkdtempSync(join(tmpdir(), "dex-claude-mcp-")), "tools.jsonl");

before(async () => {
  writeFileSync(log, "");
  server = await startAnthropicServer([
    {
      tool_uses: [
        ["toolu_1", LOOKUP, { order_id: "A-1" }],
        ["toolu_2", REFUND, { order_id: "A-1" }],
      ],
    },
    { text: "Order A-1 is refunded." },
    { tool_uses: [["toolu_3", LOOKUP, { order_id: "B-2" }]] },
  ]);
});

after(async () => {
  await server.stop();
});

/** The runs of the server's tools: [tool, order_id, idempotency key]. */
function toolLog(): [unknown, unknown, unknown][] {
  return readToolLog(log).map((entry) => [entry.tool, entry.order_id, entry.key]);
}

function runner(policies: Record<string, ToolPolicy> = {}): ClaudeAgentRunner {
  const orders = stdioServer({
    name: "orders",
    command: PYTHON,
    args: ["-m", "dex_agents.testing.mcp_server"],
    env: { TOOL_LOG: log },
  });
  return new ClaudeAgentRunner({
    options: {
      model: "claude-sonnet-4-5",
      cwd: tmpdir(),
      tools: [],
      allowedTools: [LOOKUP, REFUND],
      maxTurns: 5,
      env: { ANTHROPIC_BASE_URL: server.baseUrl, ANTHROPIC_AUTH_TOKEN: "scripted", ANTHROPIC_API_KEY: "" },
    },
    toolSources: { shop: new McpToolSource([orders], { policies }) },
  });
}

/** The tool results the model got in a request, by tool_use ID (the CLI's reminders cut). */
function toolResults(body: AnthropicBody): Record<string, [string, boolean]> {
  const found: Record<string, [string, boolean]> = {};
  for (const message of body.messages) {
    if (typeof message.content === "string") continue;
    for (const block of message.content) {
      if (block.type !== "tool_result") continue;
      const content = block.content;
      const text =
        typeof content === "string" ? content : (content as { text?: string }[]).map((p) => p.text ?? "").join("");
      found[String(block.tool_use_id)] = [text.split("<system-reminder>")[0]?.trimEnd() ?? "", block.is_error === true];
    }
  }
  return found;
}

test("a read runs in the CLI run with its tool_use ID's key; a write runs once in its tool Step with the Step's key", async () => {
  // The server's refund is destructive and not idempotent, which gives no effect: the source's
  // explicit policy makes it a non-idempotent write (approval by default).
  const dex = runner({ orders__refund_order: { effect: "non_idempotent_write" } });
  const messages = userText("Refund order A-1.");
  const first = expectKind(await dex.runModelStep(turnContext({ messages })), "tool_calls_requested");
  assert.deepEqual(
    first.toolCalls.map((call) => [call.toolCallId, call.toolName, call.policy]),
    [["toolu_2", REFUND, { effect: "non_idempotent_write", requiresApproval: true }]],
  );
  // The read ran inside the run, with the key its tool Step would have had; the write did not run.
  assert.deepEqual(toolLog(), [["lookup_order", "A-1", "flow-1/turn-1/toolu_1"]]);
  const [offered] = await server.requests();
  const tools = (offered?.tools ?? []) as { name: string; description: string; input_schema: unknown }[];
  const lookup = tools.find((tool) => tool.name === LOOKUP);
  assert.equal(lookup?.description, "The status of an order.");
  assert.deepEqual((lookup?.input_schema as { required?: string[] } | undefined)?.required, ["order_id"]);
  assert.ok(tools.some((tool) => tool.name === REFUND));

  const approved = record("toolu_2", REFUND, '{"order_id":"A-1"}', { status: "approved" });
  const ran = await dex.executeDeferredToolCall(toolExecution(approved));
  assert.deepEqual(ran, { kind: "tool_execution_result", output: "order A-1 is refunded" });
  assert.deepEqual(toolLog().at(-1), ["refund_order", "A-1", "flow-1/turn-1/toolu_2"]);

  const refunded = record("toolu_2", REFUND, '{"order_id":"A-1"}', {
    status: "succeeded",
    output: "order A-1 is refunded",
  });
  const resumed = turnContext({ messages, frameworkRunState: first.frameworkRunState, toolCalls: [refunded] });
  const last = expectKind(await dex.runModelStep(resumed), "turn_completed");
  assert.equal(last.newMessages?.at(-1)?.text, "Order A-1 is refunded.");
  // Each tool ran once: the resumed run took the write's recorded result and did not read again.
  assert.deepEqual(toolLog(), [
    ["lookup_order", "A-1", "flow-1/turn-1/toolu_1"],
    ["refund_order", "A-1", "flow-1/turn-1/toolu_2"],
  ]);
  const requests = await server.requests();
  assert.deepEqual(toolResults(requests[1] as AnthropicBody), {
    toolu_1: ["order A-1 is shipped", false],
    toolu_2: ["order A-1 is refunded", false],
  });
  // The calls are recorded under the names the model sees, as the tool servers' are, and so is
  // each result (the write's came in the resumed run, after its call in the first).
  const named = (role: string) =>
    last.newMessages?.filter((m) => m.role === role && m.toolCallId).map((m) => [m.toolCallId, m.toolName]);
  const expected = [
    ["toolu_1", LOOKUP],
    ["toolu_2", REFUND],
  ];
  assert.deepEqual(named("assistant"), expected);
  assert.deepEqual(named("tool"), expected);
});

test("the source's explicit policy wins over the annotations: a read it asks approval for is deferred", async () => {
  const dex = runner({ orders__lookup_order: { requiresApproval: true } });
  const before = toolLog().length;
  const first = expectKind(
    await dex.runModelStep(turnContext({ messages: userText("Look up B-2.") })),
    "tool_calls_requested",
  );
  assert.deepEqual(
    first.toolCalls.map((call) => [call.toolCallId, call.toolName, call.policy]),
    [["toolu_3", LOOKUP, { effect: "read", requiresApproval: true }]],
  );
  assert.equal(toolLog().length, before); // deferred: not run in the CLI
});
