/** `sourceTools`: the core's McpToolSource over the Python core's stdio MCP server
 *  (`dex_agents.testing.mcp_server`, a real process per request) as Mastra tools of an Agent
 *  run by MastraRunner against the scripted Chat Completions server: the model sees the
 *  `<server>__<tool>` tools, each call's policy comes from the annotations or the source's
 *  explicit policy, and the server sees the call's idempotency key in `_meta`. */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { after, before, describe, test } from "node:test";
import { Agent } from "@mastra/core/agent";
import { McpToolSource, stdioServer } from "@superdurable/dex-agents/mcp";
import { ToolExecutionError } from "../src/dex.js";
import { MastraRunner, sourceTools } from "../src/index.js";
import { MemoryEvents, type ModelServer, record, startModelServer, toolExecution, turnContext } from "./support.js";

const PYTHON = resolve(process.cwd(), "..", "..", "python", "core", ".venv", "bin", "python");

function toolLog(path: string): Record<string, unknown>[] {
  return readFileSync(path, "utf8")
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

describe("sourceTools: an MCP server's tools in a MastraRunner", () => {
  let server: ModelServer;
  const log = join(mkdtempSync(join(tmpdir(), "dex-mastra-mcp-")), "tools.jsonl");
  const orders = () =>
    stdioServer({
      name: "orders",
      command: PYTHON,
      args: ["-m", "dex_agents.testing.mcp_server"],
      env: { TOOL_LOG: log },
    });

  before(async () => {
    writeFileSync(log, "");
    server = await startModelServer([
      {
        tool_calls: [
          { id: "m1", name: "orders__lookup_order", arguments: { order_id: "A-1" } },
          { id: "m2", name: "orders__refund_order", arguments: { order_id: "A-1" } },
        ],
      },
    ]);
  });
  after(async () => await server.stop());

  test("the model sees the tools, the policies follow the annotations, the key reaches the server", async () => {
    const source = new McpToolSource([orders()], {
      policies: { orders__refund_order: { effect: "non_idempotent_write" } },
    });
    const tools = await sourceTools(source);
    assert.deepEqual(Object.keys(tools).sort(), ["orders__lookup_order", "orders__refund_order"]);
    const agent = new Agent({ id: "support", name: "Support", instructions: "Be brief.", model: server.model, tools });
    const runner = new MastraRunner({ agent });

    const outcome = await runner.runModelStep(turnContext(new MemoryEvents(), "Refund order A-1"));
    assert.ok(outcome.kind === "tool_calls_requested");
    assert.deepEqual(
      outcome.toolCalls.map((call) => [call.toolName, call.policy]),
      [
        ["orders__lookup_order", { effect: "read", requiresApproval: false }],
        ["orders__refund_order", { effect: "non_idempotent_write", requiresApproval: true }],
      ],
    );
    const offered = ((server.requests[0]?.tools ?? []) as { function: { name: string; description: string } }[]).map(
      (tool) => [tool.function.name, tool.function.description],
    );
    assert.deepEqual(offered, [
      ["orders__lookup_order", "The status of an order."],
      ["orders__refund_order", "Refund an order to the customer's card."],
    ]);

    const lookup = record("m1", "orders__lookup_order", '{"order_id":"A-1"}', { status: "approved" });
    const result = await runner.executeDeferredToolCall(toolExecution(lookup));
    assert.deepEqual(result, { kind: "tool_execution_result", output: "order A-1 is shipped" });
    assert.deepEqual(
      toolLog(log).map((entry) => [entry.tool, entry.order_id, entry.key]),
      [["lookup_order", "A-1", "flow-1/turn-1/m1"]],
    );
  });

  test("a call outside a tool Step has no idempotency key: a failure, not a call", async () => {
    const tools = await sourceTools(new McpToolSource([orders()]));
    const lookup = tools.orders__lookup_order as { execute: (input: unknown, context: unknown) => Promise<unknown> };
    await assert.rejects(
      lookup.execute({ order_id: "B-2" }, {}),
      (error: Error) => error instanceof ToolExecutionError && /runs only in its tool Step/.test(error.message),
    );
    assert.equal(toolLog(log).filter((entry) => entry.order_id === "B-2").length, 0);
  });
});
