/**
 * The framework run state's round trip: a turn paused at its tool calls, its run state
 * serialized, restored in a fresh Node process, finishes with the model request the SDK makes
 * when it runs the same turn without a pause. This is where the SDK's RunState defects show:
 * interruptions not rehydrated from the string, or approvals of a handoff target's tools not
 * owned by the restored agent, change or break that request.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { text } from "node:stream/consumers";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { run } from "@openai/agents";
import type { AgentToolCall, AgentTurnOutcome } from "../src/dex.js";
import { OpenAIAgentsRunner, toFrameworkMessages } from "../src/index.js";
import { SCRIPT, supportAgent, USER } from "./round-trip-app.js";
import {
  MemoryEvents,
  type ModelServer,
  record,
  startModelServer,
  storedMessage,
  toolExecution,
  turnContext,
} from "./support.js";

const CHILD = fileURLToPath(new URL("./round-trip-child.js", import.meta.url));
const history = [{ message: storedMessage(1, "turn-1", USER, "Refund order A1 if it shipped."), item: USER }];

interface ChildResult {
  outcome: AgentTurnOutcome;
  requests: unknown[];
}

async function finishInFreshProcess(baseUrl: string, frameworkRunState: string, toolCalls: AgentToolCall[]) {
  const child = spawn(process.execPath, [CHILD, baseUrl], { stdio: ["pipe", "pipe", "inherit"] });
  child.stdin.end(JSON.stringify({ frameworkRunState, toolCalls }));
  const [output, code] = await Promise.all([
    text(child.stdout),
    new Promise<number | null>((done) => child.once("exit", (exitCode) => done(exitCode))),
  ]);
  assert.equal(code, 0, "the fresh process finished the turn");
  return JSON.parse(output) as ChildResult;
}

describe("a run state restored in a fresh Node process", () => {
  let paused: ModelServer;
  let uninterrupted: ModelServer;
  before(async () => {
    [paused, uninterrupted] = await Promise.all([startModelServer(SCRIPT), startModelServer(SCRIPT)]);
  });
  after(async () => await Promise.all([paused.stop(), uninterrupted.stop()]));

  test("finishes with the model request the run makes without a pause", async () => {
    // The SDK alone, streamed as the runner streams, running the tools itself: the requests
    // the turn should make.
    const plain = await run(supportAgent(uninterrupted.model), [USER], { stream: true });
    for await (const _event of plain) {
      // drained
    }
    await plain.completed;
    assert.equal(plain.finalOutput, "Refunded 5 on A1.");
    assert.equal(uninterrupted.requests.length, 3);

    const runner = new OpenAIAgentsRunner(supportAgent(paused.model));
    const first = await runner.runModelStep(turnContext(new MemoryEvents(), { history }));
    assert.equal(first.kind, "tool_calls_requested");
    assert.deepEqual(
      first.toolCalls.map((call) => [call.toolCallId, call.toolName, call.toolSourceReference]),
      [
        ["c1", "lookup", "Billing"],
        ["c2", "refund", "Billing"],
      ],
    );
    assert.deepEqual(paused.requests, uninterrupted.requests.slice(0, 2));

    const records: AgentToolCall[] = [];
    for (const call of first.toolCalls) {
      const approved = {
        ...record(call.toolCallId, call.toolName, call.arguments, { status: "approved" }),
        toolSourceReference: call.toolSourceReference ?? null,
      };
      const result = await runner.executeDeferredToolCall(toolExecution(approved));
      assert.equal(result.kind, "tool_execution_result");
      records.push({
        ...approved,
        status: "succeeded",
        output: result.kind === "tool_execution_result" ? result.output : "",
      });
    }

    const finished = await finishInFreshProcess(paused.baseUrl, first.frameworkRunState, records);
    assert.deepEqual(finished.requests, uninterrupted.requests.slice(2), "the same request as without the pause");
    assert.equal(finished.outcome.kind, "turn_completed");
    assert.deepEqual(
      finished.outcome.kind === "turn_completed" ? finished.outcome.newMessages : null,
      toFrameworkMessages(plain.history.slice(1)),
      "the same items as without the pause",
    );
    assert.equal(paused.requests.length, 2, "the first process made no further request");
    // At the scripted server: what the two processes sent is what the run without a pause sent.
    assert.deepEqual(paused.received(), uninterrupted.received(), "the server saw the same requests");
    assert.equal(paused.received().length, 3);
  });
});
