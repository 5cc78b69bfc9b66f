/** AgentClient against the real session API: `dex-agents serve` and a Worker hosting the
 *  core's demo flow on a scripted model (test/harness/serve_demo.py), on a temporary SQLite
 *  file. Needs `uv` and the Python core beside this package; skipped without `uv`. */

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import {
  AgentClient,
  type AgentClient as AgentClientType,
  ForbiddenError,
  InvalidInputError,
  NotFoundError,
  SessionExistsError,
  TurnTimeoutError,
  UnauthorizedError,
} from "../src/client.js";
import type { AgentEvent } from "../src/events.js";
import { convertAgentSnapshotToUIMessages } from "../src/ui.js";
import { hasUv, type Ready, type SessionApi, startSessionApi, toolRuns } from "./session-api.js";

/** Reads events after `after` until one of type `type` (or a turn failure) arrives. */
async function until(
  client: AgentClientType,
  sessionId: string,
  after: string | number,
  type: string,
): Promise<AgentEvent[]> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), 60_000);
  const seen: AgentEvent[] = [];
  try {
    for await (const event of client.followEvents(sessionId, {
      after,
      signal: controller.signal,
    })) {
      seen.push(event);
      if (event.type === type) return seen;
      if (event.type === "turn_failed") throw new Error(JSON.stringify(event.payload));
    }
  } finally {
    clearTimeout(timer);
    controller.abort();
  }
  throw new Error(`no ${type} event within 60 s; saw ${seen.map((e) => e.type).join(", ")}`);
}

describe("AgentClient against dex-agents serve", { skip: !hasUv && "uv is not installed" }, () => {
  let api: SessionApi | undefined;
  let ready: Ready;
  let client: AgentClient;
  before(async () => {
    api = await startSessionApi();
    ready = api.ready;
    client = new AgentClient({ baseUrl: ready.base_url, token: ready.token, reconnectDelayMs: 50 });
  });
  after(async () => {
    await api?.stop();
  });

  test("a session's turns, an approval, events, snapshots and UI messages", async () => {
    const { sessionId } = await client.startSession(
      ready.flow_type,
      "What's the weather in Lisbon?",
      { sessionSettings: { user_tier: "gold" } },
    );
    const first = await until(client, sessionId, 0, "turn_completed");
    assert.ok(first.some((e) => e.type === "turn_started"));
    assert.equal(first.map((e) => e.offset).join(), first.map((_, i) => i + 1).join());
    let snapshot = await client.getAgentSnapshot(sessionId);
    assert.equal(snapshot.messages.at(-1)?.text, "It is 22 °C and sunny in Lisbon.");
    assert.deepEqual(snapshot.sessionSettings, { user_tier: "gold" });
    assert.equal(toolRuns(ready.tool_log, "get_weather"), 1);

    assert.equal(await client.sendUserMessage(sessionId, "Email Ana the forecast."), true);
    const raised = await until(client, sessionId, snapshot.resumeToken, "interrupt_raised");
    snapshot = await client.getAgentSnapshot(sessionId);
    const interrupt = snapshot.pendingInterrupts[0];
    assert.equal(interrupt?.toolName, "send_email");
    assert.equal(toolRuns(ready.tool_log, "send_email"), 0);
    // The session waits on a person: its status stays running_tools, waitingFor says why.
    assert.equal(snapshot.state?.status, "running_tools");
    assert.equal(snapshot.waitingFor, "approval");
    const listed = (await client.listSessions()).find((s) => s.sessionId === sessionId);
    assert.equal(listed?.waitingFor, "approval");
    // The UI conversion here gives what the API's own conversion gives.
    const served = await fetch(`${ready.base_url}/sessions/${sessionId}/ui-messages`, {
      headers: { authorization: `Bearer ${ready.token}` },
    });
    assert.deepStrictEqual(
      JSON.parse(JSON.stringify(convertAgentSnapshotToUIMessages(snapshot))),
      await served.json(),
    );

    const offset = raised.at(-1)?.offset ?? 0;
    assert.equal(
      await client.resolveInterrupt(sessionId, interrupt?.interruptId ?? "", true),
      true,
    );
    await until(client, sessionId, offset, "turn_completed");
    snapshot = await client.getAgentSnapshot(sessionId);
    assert.equal(snapshot.messages.at(-1)?.text, "Done: Ana has the forecast.");
    assert.equal(toolRuns(ready.tool_log, "send_email"), 1);
    assert.equal(snapshot.state?.turnCount, 2);
    assert.equal(snapshot.waitingFor, null);

    const page = await client.listAgentMessages(sessionId, { limit: 2 });
    assert.equal(page.messages.length, 2);
    assert.equal(page.messages.at(-1)?.text, "Done: Ana has the forecast.");
    const older = await client.listAgentMessages(sessionId, {
      beforeSequence: page.nextBeforeSequence ?? 0,
    });
    assert.equal(older.messages[0]?.text, "What's the weather in Lisbon?");
    const steps = await client.getStepHistory(sessionId);
    assert.ok(
      steps.some((s) => s.stepType === "CallSingleAttemptTool" && s.status === "succeeded"),
    );
    assert.ok((await client.listSessions()).some((s) => s.sessionId === sessionId));
    const workers = await client.listWorkers();
    assert.ok(workers.some((w) => w.flowTypes.includes(ready.flow_type) && w.state === "running"));
    assert.equal(await client.updateSessionSettings(sessionId, { user_tier: "silver" }), true);
    assert.deepEqual((await client.getAgentSnapshot(sessionId)).sessionSettings, {
      user_tier: "silver",
    });
    assert.equal(await client.cancelTurn(sessionId), false);
  });

  test("runTurn, waitForTurn and startSessionAndWait wait for a turn's outcome", async () => {
    const started = await client.startSessionAndWait(ready.flow_type, "Weather in Porto?");
    assert.equal(started.status, "completed");
    assert.equal(started.turnId, "turn-1");
    assert.equal(started.text, "Cloudy in Porto.");
    assert.equal(started.error, null);
    assert.equal(started.messages[0]?.text, "Weather in Porto?");
    assert.equal(started.messages.at(-1)?.text, "Cloudy in Porto.");
    assert.ok(started.messages.some((m) => m.role === "tool" && m.toolName === "get_weather"));
    assert.equal(started.usage.modelCalls, 2);
    assert.deepEqual(started.interrupts, []);
    const { sessionId } = started;

    const waiting = await client.runTurn(sessionId, "Email Rui the weather.");
    assert.equal(waiting.status, "waiting_for_interrupts");
    assert.equal(waiting.turnId, "turn-2");
    assert.equal(waiting.messages[0]?.text, "Email Rui the weather.");
    assert.deepEqual(
      waiting.interrupts.map((i) => [i.kind, i.toolName]),
      [["tool_approval", "send_email"]],
    );
    assert.equal(waiting.usage.modelCalls, 1);
    const interruptId = waiting.interrupts[0]?.interruptId ?? "";
    assert.equal(await client.resolveInterrupt(sessionId, interruptId, true), true);
    const done = await client.waitForTurn(sessionId, waiting.turnId, {
      after: waiting.eventOffset,
    });
    assert.equal(done.status, "completed");
    assert.equal(done.text, "Sent to Rui.");
    assert.equal(done.usage.modelCalls, 1); // counted from `after`
    assert.ok(done.eventOffset > waiting.eventOffset);
    assert.ok(done.messages.some((m) => m.role === "tool" && m.toolName === "send_email"));

    // An ended turn waits no more: a short timeout ends the wait with a TurnTimeoutError.
    await assert.rejects(
      client.waitForTurn(sessionId, "turn-2", { after: done.eventOffset, timeoutMs: 300 }),
      TurnTimeoutError,
    );
    await assert.rejects(client.runTurn(sessionId, "  "), InvalidInputError);
  });

  test("a session of a flow type no live Worker hosts warns", async () => {
    const warnings: string[] = [];
    const warned = new AgentClient({
      baseUrl: ready.base_url,
      token: ready.token,
      onWarning: (warning) => warnings.push(warning),
    });
    const started = await warned.startSession("NoSuchFlow", null);
    assert.match(started.warning ?? "", /no live Worker hosts flow type 'NoSuchFlow'/);
    assert.deepEqual(warnings, [started.warning]);
    const hosted = await warned.startSession(ready.flow_type, null);
    assert.equal(hosted.warning, null);
    assert.equal(warnings.length, 1);
  });

  test("the API's errors arrive as their DexAgentsError classes", async () => {
    await assert.rejects(client.getAgentSnapshot("no-such-session"), NotFoundError);
    await client.startSession(ready.flow_type, null, { sessionId: "fixed-id" });
    await assert.rejects(
      client.startSession(ready.flow_type, null, { sessionId: "fixed-id" }),
      SessionExistsError,
    );
    const stranger = new AgentClient({ baseUrl: ready.base_url, token: "wrong" });
    await assert.rejects(stranger.listSessions(), UnauthorizedError);
  });

  test("a minted session token opens its session and nothing else", async () => {
    const { sessionId } = await client.startSession(ready.flow_type, null);
    const other = await client.startSession(ready.flow_type, null);
    const minted = await client.mintSessionToken(sessionId, { expiresInSeconds: 120 });
    assert.equal(minted.sessionId, sessionId);
    const expires = Date.parse(minted.expiresAt) - Date.now();
    assert.ok(expires > 100_000 && expires <= 121_000, minted.expiresAt);
    const browser = new AgentClient({ baseUrl: ready.base_url, token: minted.token });
    assert.equal((await browser.getAgentSnapshot(sessionId)).sessionId, sessionId);
    assert.equal(await browser.cancelTurn(sessionId), false);
    // An EventSource sends it in the URL: the stream answers, the server's token would not.
    const stream = await fetch(
      `${ready.base_url}/sessions/${sessionId}/events?access_token=${minted.token}`,
    );
    assert.equal(stream.status, 200);
    await stream.body?.cancel();
    const leaked = await fetch(
      `${ready.base_url}/sessions/${sessionId}/events?access_token=${ready.token}`,
    );
    assert.equal(leaked.status, 401);
    await assert.rejects(browser.getAgentSnapshot(other.sessionId), ForbiddenError);
    await assert.rejects(browser.listSessions(), ForbiddenError);
    await assert.rejects(browser.mintSessionToken(sessionId), ForbiddenError);
    await assert.rejects(browser.updateSessionSettings(sessionId, {}), ForbiddenError);
  });
});
