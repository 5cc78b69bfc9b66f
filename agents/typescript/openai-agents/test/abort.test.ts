import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Agent, type AgentInputItem } from "@openai/agents";
import { OpenAIAgentsRunner } from "../src/index.js";
import { MemoryEvents, type ModelServer, startModelServer, storedMessage, turnContext } from "./support.js";

const USER = { role: "user", content: "Hello?" } as const satisfies AgentInputItem;
const history = [{ message: storedMessage(1, "turn-1", USER, USER.content), item: USER as AgentInputItem }];

describe("a model call that does not answer", () => {
  let server: ModelServer;
  before(async () => {
    // The call that is aborted takes the last reply: a server slow to read its request (a busy
    // machine) must not hand its reply to a later test's request.
    server = await startModelServer([
      { status: 500, text: "overloaded" },
      { status: 500, text: "overloaded" },
      { status: 500, text: "overloaded" },
      { text: "Third time lucky." },
      { text: "Slowly.", delay_seconds: 1 },
      { text: "Too late.", delay_seconds: 30 },
    ]);
  });
  after(async () => await server.stop());

  test("a failed request fails the attempt after one request, though the client keeps its own retries", async () => {
    const runner = new OpenAIAgentsRunner(new Agent({ name: "Support", model: server.model }));
    await assert.rejects(runner.runModelStep(turnContext(new MemoryEvents(), { history })), /500/);
    assert.equal(server.requests.length, 1, "the OpenAI client did not retry the request itself");
  });

  test("frameworkRetries leaves the client's retries on", async () => {
    const runner = new OpenAIAgentsRunner(new Agent({ name: "Support", model: server.model }), {
      frameworkRetries: true,
    });
    const outcome = await runner.runModelStep(turnContext(new MemoryEvents(), { history }));
    assert.equal(outcome.kind, "turn_completed");
    assert.equal(outcome.newMessages?.[0]?.text, "Third time lucky.");
    assert.equal(server.requests.length, 4, "two requests failed and the client retried them");
  });

  test("a slow model call heartbeats while it waits", async () => {
    let beats = 0;
    const runner = new OpenAIAgentsRunner(new Agent({ name: "Support", model: server.model }), {
      heartbeatIntervalMs: 100,
    });
    const turn = { ...turnContext(new MemoryEvents(), { history }), heartbeat: () => (beats += 1) };
    const outcome = await runner.runModelStep(turn);
    assert.equal(outcome.kind, "turn_completed");
    assert.ok(beats >= 5, `expected a heartbeat every 100 ms of a 1 s wait, got ${beats}`);
    const after = beats;
    await new Promise((done) => setTimeout(done, 300));
    assert.equal(beats, after, "the heartbeat stops with the call");
  });

  test("ends promptly when the turn's signal aborts", async () => {
    const controller = new AbortController();
    const runner = new OpenAIAgentsRunner(new Agent({ name: "Support", model: server.model }));
    const events = new MemoryEvents();
    const started = Date.now();
    const step = runner.runModelStep(turnContext(events, { history, signal: controller.signal }));
    setTimeout(() => controller.abort(new Error("turn cancelled")), 300);
    await assert.rejects(step, /turn cancelled/);
    const elapsed = Date.now() - started;
    assert.ok(elapsed < 3_000, `the aborted call took ${elapsed} ms`);
    assert.equal(server.requests.length, 6);
    assert.deepEqual(events.ofType("text_delta"), []);
  });
});
