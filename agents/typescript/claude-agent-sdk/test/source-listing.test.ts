/**
 * A run's listing of its tool sources (`SourceTools.listing()`), without the CLI: each run gets
 * a listing of its own, which a later run's listing does not change (the runner is shared by
 * the Worker's sessions), and a run's source server answers a call of a tool it did not list
 * with the model-visible `notRunnerTool` error instead of calling the source.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { type CallableToolSource, type SourceTool, ToolExecutionError } from "../src/dex.js";
import { SourceTools } from "../src/sources.js";
import { notRunnerTool } from "../src/texts.js";
import { RecordedResults } from "../src/tools.js";
import { turnContext } from "./support.js";

/** A source whose tools change between listings, and which counts its calls. */
class ChangingSource implements CallableToolSource {
  readonly policies = {};
  listings = 0;
  calls: string[] = [];

  async listTools(): Promise<readonly SourceTool[]> {
    this.listings += 1;
    return [{ name: `tool_${this.listings}`, description: "", parameters: { type: "object" }, effect: "read" }];
  }

  async callListedTool(name: string): Promise<string> {
    this.calls.push(name);
    return `ran ${name}`;
  }
}

test("each run's listing stays as it was listed when a later run lists again", async () => {
  const source = new ChangingSource();
  const sources = new SourceTools({ shop: source });
  const first = await sources.listing();
  const second = await sources.listing();
  assert.ok(first.has("mcp__shop__tool_1"));
  assert.ok(!first.has("mcp__shop__tool_2"));
  assert.ok(second.has("mcp__shop__tool_2"));
  assert.deepEqual(first.declared("mcp__shop__tool_1"), { effect: "read", requiresApproval: null });
  await assert.rejects(first.call("mcp__shop__tool_2", "{}"), (error: unknown) => {
    assert.ok(error instanceof ToolExecutionError);
    assert.equal(error.message, notRunnerTool("mcp__shop__tool_2"));
    return true;
  });
  assert.deepEqual(source.calls, []);
});

test("a run's source server answers an unlisted tool with notRunnerTool and calls nothing", async () => {
  const source = new ChangingSource();
  const listing = await new SourceTools({ shop: source }).listing();
  const server = listing.serving(new RecordedResults(), turnContext()).shop;
  assert.ok(server !== undefined);
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.instance.connect(serverSide);
  const client = new Client({ name: "test", version: "1.0.0" });
  await client.connect(clientSide);
  try {
    const listed = await client.listTools();
    assert.deepEqual(
      listed.tools.map((tool) => tool.name),
      ["tool_1"],
    );
    const result = (await client.callTool({ name: "tool_9", arguments: {} })) as CallToolResult;
    assert.equal(result.isError, true);
    assert.deepEqual(result.content, [{ type: "text", text: notRunnerTool("mcp__shop__tool_9") }]);
    const ran = (await client.callTool({ name: "tool_1", arguments: {} })) as CallToolResult;
    assert.deepEqual(ran.content, [{ type: "text", text: "ran tool_1" }]);
    assert.deepEqual(source.calls, ["tool_1"]);
  } finally {
    await client.close();
  }
});
