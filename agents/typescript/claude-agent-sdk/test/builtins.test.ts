/**
 * The built-in tools' server and the runner's refusals around it: the zod schemas the SDK's
 * `tool()` needs say what the core's JSON schemas say, a planning turn offers only
 * `write_todos`, and the key `dex` is the built-ins' own.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { z } from "zod";
import { builtInOf, inputShape, modelName, offered } from "../src/builtins.js";
import { texts } from "../src/dex.js";
import { ClaudeAgentRunner } from "../src/index.js";
import { lookup } from "./support.js";

test("each built-in's zod schema is the core's JSON schema", () => {
  for (const name of texts.BUILT_IN_TOOL_NAMES) {
    const { $schema: _, ...schema } = z.toJSONSchema(z.strictObject(inputShape(name))) as Record<string, unknown>;
    assert.deepEqual(schema, texts.BUILT_IN_TOOL_DEFINITIONS[name].function.parameters, name);
  }
});

test("a run offers the enabled built-ins in the contract's order, only write_todos when planning", () => {
  assert.deepEqual(offered(["write_todos", "ask_user"], false), ["ask_user", "write_todos"]);
  assert.deepEqual(offered(["write_todos", "ask_user", "durable_wait"], true), ["write_todos"]);
  assert.deepEqual(offered(["ask_user"], true), []);
  assert.equal(modelName("ask_user"), "mcp__dex__ask_user");
  assert.equal(builtInOf("mcp__dex__ask_user", ["ask_user"]), "ask_user");
  assert.equal(builtInOf("mcp__dex__ask_user", ["write_todos"]), null);
  assert.equal(builtInOf("mcp__t__ask_user", ["ask_user"]), null);
});

test("the key dex is refused for a tool server, in mcpServers, and in what optionsFor returns", () => {
  assert.throws(
    () => new ClaudeAgentRunner({ toolServers: { dex: { tools: [lookup] } } }),
    /reserved for the session's built-in tools/,
  );
  const server = { type: "stdio" as const, command: "true" };
  assert.throws(() => new ClaudeAgentRunner({ options: { mcpServers: { dex: server } } }), /reserved/);
  const runner = new ClaudeAgentRunner({
    optionsFor: (options, settings) => ({ ...options, model: String(settings.model), resume: "elsewhere" }),
  });
  assert.throws(() => runner.sessionOptions({ model: "m" }), /leave sessionStore, resume and continue unset/);
  const plain = new ClaudeAgentRunner({
    optionsFor: (options, settings) => ({ ...options, model: String(settings.model) }),
  });
  assert.equal(plain.sessionOptions({ model: "m" }).model, "m");
  assert.equal(plain.supportsPlanMode, true);
});
