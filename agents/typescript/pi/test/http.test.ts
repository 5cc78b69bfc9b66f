/**
 * piModelClient through pi-ai's OpenAI-compatible provider against the core's scripted Chat
 * Completions server (real HTTP, one server answering the tests in order): a reply with a tool
 * call and usage, the forced tool choice sent, and failures thrown with the HTTP status and
 * Retry-After the Worker judges.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { PiModelError, piModelClient } from "../src/index.js";
import { type ModelServer, modelRequest, startModelServer } from "./support.js";

describe("piModelClient over HTTP", () => {
  let server: ModelServer;
  before(async () => {
    server = await startModelServer([
      { text: "Checking.", tool_calls: [{ id: "c1", name: "write_todos", arguments: { todos: [] } }] },
      { status: 429, retry_after: 2 },
      { status: 400, text: "unknown parameter: temperatura" },
    ]);
  });
  after(() => server.stop());
  const client = (observeHttp = true) =>
    piModelClient(server.model(), { observeHttp, options: { apiKey: "test", onPayload: server.onPayload } });

  test("one request per call: text, tool calls, usage, and a forced tool choice", async () => {
    const tool = {
      type: "function" as const,
      function: { name: "write_todos", description: "Plan.", parameters: { type: "object", properties: {} } },
    };
    const request = modelRequest(
      [
        { role: "system", content: "Plan first." },
        { role: "user", content: "Go." },
      ],
      {
        tools: [tool],
        toolChoice: { type: "function", function: { name: "write_todos" } },
        maxOutputTokens: 100,
      },
    );
    const reply = await client().complete(request);

    assert.equal(request.texts.join(""), "Checking.");
    assert.deepEqual(reply.item, {
      role: "assistant",
      content: "Checking.",
      tool_calls: [{ id: "c1", type: "function", function: { name: "write_todos", arguments: '{"todos":[]}' } }],
    });
    assert.deepEqual(reply.usage, {
      modelCalls: 1,
      inputTokens: 10,
      outputTokens: 5,
      cachedInputTokens: 0,
      reasoningTokens: 0,
    });
    assert.equal(server.requests.length, 1);
    const body = server.requests[0] ?? {};
    assert.deepEqual(body.tool_choice, { type: "function", function: { name: "write_todos" } });
    assert.deepEqual(body.messages, [
      { role: "system", content: "Plan first." },
      { role: "user", content: "Go." },
    ]);
    assert.equal(body.max_tokens ?? body.max_completion_tokens, 100);
  });

  test("a 429 throws with its status and Retry-After, after one request", async () => {
    await assert.rejects(client().complete(modelRequest([{ role: "user", content: "Hi" }])), (error: unknown) => {
      assert.ok(error instanceof PiModelError);
      assert.equal(error.statusCode, 429);
      assert.deepEqual(error.responseHeaders, { "retry-after": "2" });
      return true;
    });
    assert.equal(server.requests.length, 2);
  });

  test("a 400 not observed throws with the status the provider's message starts with", async () => {
    await assert.rejects(client(false).complete(modelRequest([{ role: "user", content: "Hi" }])), (error: unknown) => {
      assert.ok(error instanceof PiModelError);
      assert.equal(error.statusCode, 400);
      assert.deepEqual(error.responseHeaders, {});
      assert.match(error.message, /temperatura/);
      return true;
    });
    assert.equal(server.requests.length, 3);
  });
});
