/**
 * The MCP tool source suite every runner package of this repository passes, the TypeScript side
 * of the Python core's `dex_agents.testing.mcp_source`: the core's `McpToolSource` over the
 * Python core's stdio MCP server (`dex_agents.testing.mcp_server`, a real process per request)
 * as the framework's own tools in the package's runner, against the scripted Chat Completions
 * server. The model sees the `<server>__<tool>` tools with their descriptions, each call's policy
 * comes from the annotations or the source's explicit policy, the server sees the call's
 * idempotency key in `_meta`, and a call outside a tool Step is refused before it reaches the
 * server. A package states how its framework holds tools and runs them (`McpSourceSubject`);
 * the scenario and its assertions are written once, here.
 *
 * A subpath of its own (`@superdurable/dex-agents/testing/mcp`), so that the other test parts do
 * not load the MCP SDK.
 */
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { McpToolSource, stdioServer } from "./mcp.js";
import {
  type AgentFrameworkRunner,
  type AgentTurnContext,
  type EventWriter,
  ToolExecutionError,
} from "./runner.js";
import {
  MemoryEvents,
  readToolLog,
  type ScriptedReply,
  toolCallRecord,
  toolExecution,
} from "./testing.js";

/** A scripted model server as a package's tests start it: its model as the framework takes it. */
export interface ScriptedModel<Model> {
  /** The JSON bodies the model sent, in order. */
  requests: Record<string, unknown>[];
  model: Model;
  stop(): Promise<void>;
}

/** What the suite needs of a runner package. */
export interface McpSourceSubject<Tools, Model, Item> {
  /** The runner as the suite's title names it, such as "an OpenAIAgentsRunner". */
  runnerName: string;
  /** A Python interpreter of an environment with dex-agents, which runs the MCP server. */
  python: string;
  /** Starts the scripted model server answering `replies` once each, in order. */
  startModelServer(replies: ScriptedReply[]): Promise<ScriptedModel<Model>>;
  /** The package's `sourceTools`: the source's tools as the framework's. */
  sourceTools(source: McpToolSource): Promise<Tools>;
  /** The names of `tools`. */
  toolNames(tools: Tools): string[];
  /** The package's runner of an agent that has `tools` and answers with `model`. */
  runner(tools: Tools, model: Model): AgentFrameworkRunner<Item>;
  /** A turn of turn-1 whose only history is the user's `text`. */
  turn(events: EventWriter, text: string): AgentTurnContext<Item>;
  /** Calls the tool `name` of `tools` as the framework would, outside any tool Step. */
  callOutsideStep(tools: Tools, name: string, input: Record<string, unknown>): Promise<unknown>;
}

const REFUND = "Refund order A-1";

function offeredTools(request: Record<string, unknown> | undefined): string[][] {
  const tools = (request?.tools ?? []) as { function: { name: string; description: string } }[];
  return tools.map((tool) => [tool.function.name, tool.function.description]);
}

/** Registers the suite (`describe` and its tests) for `subject`. */
export function mcpSourceSuite<Tools, Model, Item>(
  subject: McpSourceSubject<Tools, Model, Item>,
): void {
  describe(`sourceTools: an MCP server's tools in ${subject.runnerName}`, () => {
    let server: ScriptedModel<Model>;
    const log = join(mkdtempSync(join(tmpdir(), "dex-mcp-source-")), "tools.jsonl");
    const orders = () =>
      stdioServer({
        name: "orders",
        command: subject.python,
        args: ["-m", "dex_agents.testing.mcp_server"],
        env: { TOOL_LOG: log },
      });

    before(async () => {
      writeFileSync(log, "");
      server = await subject.startModelServer([
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
      const tools = await subject.sourceTools(source);
      assert.deepEqual(subject.toolNames(tools).sort(), [
        "orders__lookup_order",
        "orders__refund_order",
      ]);
      const runner = subject.runner(tools, server.model);

      const outcome = await runner.runModelStep(subject.turn(new MemoryEvents(), REFUND));
      assert.ok(outcome.kind === "tool_calls_requested", outcome.kind);
      assert.deepEqual(
        outcome.toolCalls.map((call) => [call.toolName, call.policy]),
        [
          ["orders__lookup_order", { effect: "read", requiresApproval: false }],
          ["orders__refund_order", { effect: "non_idempotent_write", requiresApproval: true }],
        ],
      );
      assert.deepEqual(offeredTools(server.requests[0]), [
        ["orders__lookup_order", "The status of an order."],
        ["orders__refund_order", "Refund an order to the customer's card."],
      ]);

      const lookup = toolCallRecord("m1", "orders__lookup_order", '{"order_id":"A-1"}', {
        status: "approved",
      });
      const result = await runner.executeDeferredToolCall(toolExecution<Item>(lookup));
      assert.deepEqual(result, { kind: "tool_execution_result", output: "order A-1 is shipped" });
      assert.deepEqual(
        readToolLog(log).map((entry) => [entry.tool, entry.order_id, entry.key]),
        [["lookup_order", "A-1", "flow-1/turn-1/m1"]],
      );
    });

    test("a call outside a tool Step has no idempotency key: a failure, not a call", async () => {
      const tools = await subject.sourceTools(new McpToolSource([orders()]));
      await assert.rejects(
        subject.callOutsideStep(tools, "orders__lookup_order", { order_id: "B-2" }),
        (error: Error) =>
          error instanceof ToolExecutionError && /runs only in its tool Step/.test(error.message),
      );
      assert.equal(readToolLog(log).filter((entry) => entry.order_id === "B-2").length, 0);
    });
  });
}
