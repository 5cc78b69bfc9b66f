/**
 * piTools on Pi's own tools (pi-coding-agent's read, write, bash, ...) and on tools written
 * here: the effect table and who wins, a call run as a tool Step runs it, bad arguments, a
 * tool that throws, an aborted call, and the call's idempotency key inside `execute`.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import type { AgentTool } from "@mariozechner/pi-agent-core";
import { Type } from "@mariozechner/pi-ai";
import {
  createBashTool,
  createEditTool,
  createFindTool,
  createGrepTool,
  createLsTool,
  createReadTool,
  createWriteTool,
} from "@mariozechner/pi-coding-agent";
import { ToolExecutionError, texts } from "@superdurable/dex-agents";
import { currentToolExecution, PI_TOOL_EFFECTS, piTool, piTools } from "../src/index.js";
import { toolCall, toolExecution } from "./support.js";

const workspace = mkdtempSync(join(tmpdir(), "dex-pi-tools-"));
const piOwn = {
  read: createReadTool(workspace),
  bash: createBashTool(workspace),
  edit: createEditTool(workspace),
  write: createWriteTool(workspace),
  grep: createGrepTool(workspace),
  find: createFindTool(workspace),
  ls: createLsTool(workspace),
};

function echo(run: (params: { text: string }, signal?: AbortSignal) => Promise<string> | string): AgentTool {
  return {
    name: "echo",
    label: "Echo",
    description: "Echo a text.",
    parameters: Type.Object({ text: Type.String(), times: Type.Optional(Type.Integer()) }),
    execute: async (_id, params, signal) => ({
      content: [{ type: "text", text: await run(params as { text: string }, signal) }],
      details: { echoed: true },
    }),
  };
}

describe("piTools", () => {
  test("Pi's own tools get the effect table: readers read, writers need approval", () => {
    const tools = piTools(Object.values(piOwn));
    const effects = Object.fromEntries(tools.map((t) => [t.name, [t.effect, t.requiresApproval]]));
    assert.deepEqual(effects, {
      read: ["read", null],
      bash: ["non_idempotent_write", null],
      edit: ["non_idempotent_write", null],
      write: ["non_idempotent_write", null],
      grep: ["read", null],
      find: ["read", null],
      ls: ["read", null],
    });
    assert.deepEqual(Object.keys(PI_TOOL_EFFECTS).sort(), Object.keys(piOwn).sort());
  });

  test("a tool's own declaration wins over the table, and a declaration given wins over both", () => {
    const declared = { ...piOwn.write, effect: "idempotent_write" as const, requiresApproval: false };
    assert.equal(piTool(declared).effect, "idempotent_write");
    assert.equal(piTool(declared).requiresApproval, false);
    assert.equal(piTool(declared, { effect: "unclassified" }).effect, "unclassified");
    assert.equal(piTools([piOwn.bash], { bash: { requiresApproval: false } })[0]?.requiresApproval, false);
    assert.equal(piTool(echo(() => "")).effect, null);
    assert.throws(() => piTool({ ...piOwn.read, name: "has space" }), /must be 1 to 64/);
  });

  test("a call runs the Pi tool's execute: Pi's read tool reads the file", async () => {
    writeFileSync(join(workspace, "notes.txt"), "Lisbon: sunny\n");
    const read = piTool(piOwn.read);
    assert.deepEqual(read.definition().function.name, "read");
    assert.equal((read.definition().function.parameters as { required: string[] }).required[0], "path");
    const result = await read.run('{"path":"notes.txt"}', toolExecution(toolCall("c1", "read", {})));
    assert.equal(result.kind, "tool_execution_result");
    assert.match(result.kind === "tool_execution_result" ? result.output : "", /Lisbon: sunny/);
  });

  test("Pi's write tool writes once run", async () => {
    const write = piTool(piOwn.write);
    await write.run(JSON.stringify({ path: "out.txt", content: "hello" }), toolExecution(toolCall("c1", "write", {})));
    assert.equal(readFileSync(join(workspace, "out.txt"), "utf8"), "hello");
  });

  test("the result's text goes to the model, its details to the call's framework data", async () => {
    const tool = piTool(echo(({ text }) => `echo: ${text}`));
    const result = await tool.run('{"text":"hi"}', toolExecution(toolCall("c1", "echo", {})));
    assert.deepEqual(result, {
      kind: "tool_execution_result",
      output: "echo: hi",
      frameworkData: '{"details":{"echoed":true}}',
    });
  });

  test("arguments that are not JSON, or do not fit the schema, are the model's error", async () => {
    const tool = piTool(echo(() => "never"));
    const execution = toolExecution(toolCall("c1", "echo", {}));
    await assert.rejects(
      tool.run("{not json", execution),
      (error: unknown) => error instanceof ToolExecutionError && error.message === texts.argumentsNotJsonText("echo"),
    );
    await assert.rejects(
      tool.run('{"times": 2}', execution),
      (error: unknown) =>
        error instanceof ToolExecutionError &&
        error.message === texts.invalidArgumentsText("echo", "text: must have required properties text"),
    );
  });

  test("a tool that throws failed: the model reads its message", async () => {
    const tool = piTool(
      echo(() => {
        throw new Error("no such city");
      }),
    );
    await assert.rejects(
      tool.run('{"text":"x"}', toolExecution(toolCall("c1", "echo", {}))),
      (error: unknown) => error instanceof ToolExecutionError && error.message === "no such city",
    );
  });

  test("an aborted call ends with the abort, not as the tool's failure", async () => {
    const controller = new AbortController();
    const tool = piTool(
      echo(async (_params, signal) => {
        await new Promise((_resolve, reject) => signal?.addEventListener("abort", () => reject(signal.reason)));
        return "never";
      }),
    );
    const run = tool.run('{"text":"x"}', toolExecution(toolCall("c1", "echo", {}), controller.signal));
    controller.abort(new Error("cancelled"));
    await assert.rejects(
      run,
      (error: unknown) => !(error instanceof ToolExecutionError) && /cancelled/.test(String(error)),
    );
  });

  test("currentToolExecution gives the running call's idempotency key, and null outside", async () => {
    const tool = piTool(echo(() => currentToolExecution()?.idempotencyKey ?? "none"));
    const result = await tool.run('{"text":"x"}', toolExecution(toolCall("c7", "echo", {})));
    assert.equal(result.kind === "tool_execution_result" ? result.output : "", "flow-1/turn-1/c7");
    assert.equal(currentToolExecution(), null);
  });
});
