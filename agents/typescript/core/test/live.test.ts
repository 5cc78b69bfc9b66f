/** AgentClient against the real session API: `dex-agents serve` and a Worker hosting the
 *  core's demo flow on a scripted model (test/harness/serve_demo.py), on a temporary SQLite
 *  file. Needs `uv` and the Python core beside this package; skipped without `uv`. */

import assert from "node:assert/strict";
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { createInterface } from "node:readline";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import {
  AgentClient,
  type AgentClient as AgentClientType,
  type AgentEvent,
  ForbiddenError,
  NotFoundError,
  SessionExistsError,
  UnauthorizedError,
} from "../src/client.js";
import { convertAgentSnapshotToUIMessages } from "../src/ui.js";

const PACKAGE = fileURLToPath(new URL("../../", import.meta.url));
const CORE = fileURLToPath(new URL("../../../../python/core", import.meta.url));
const hasUv = spawnSync("uv", ["--version"]).status === 0;

interface Ready {
  base_url: string;
  token: string;
  flow_type: string;
  tool_log: string;
}

function startApi(): Promise<{ child: ChildProcess; ready: Ready }> {
  const child = spawn("uv", ["run", "--project", CORE, "python", "test/harness/serve_demo.py"], {
    cwd: PACKAGE,
    stdio: ["pipe", "pipe", "inherit"],
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("the session API did not start")), 120_000);
    child.once("exit", (code) => reject(new Error(`the harness exited with ${code}`)));
    createInterface({ input: child.stdout as NodeJS.ReadableStream }).once("line", (line) => {
      clearTimeout(timer);
      resolve({ child, ready: JSON.parse(line) as Ready });
    });
  });
}

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
    for await (const event of client.events(sessionId, { after, signal: controller.signal })) {
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

function toolRuns(path: string, name: string): number {
  let text = "";
  try {
    text = readFileSync(path, "utf8");
  } catch {
    return 0;
  }
  return text.split("\n").filter((line) => line.includes(`"${name}"`)).length;
}

describe("AgentClient against dex-agents serve", { skip: !hasUv && "uv is not installed" }, () => {
  let child: ChildProcess | undefined;
  let ready: Ready;
  let client: AgentClient;
  before(async () => {
    ({ child, ready } = await startApi());
    client = new AgentClient({ baseUrl: ready.base_url, token: ready.token, reconnectDelayMs: 50 });
  });
  after(async () => {
    if (child === undefined || child.exitCode !== null) return;
    const exited = new Promise((resolve) => child?.once("exit", resolve));
    child.stdin?.end();
    await exited;
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
    let snapshot = await client.getSnapshot(sessionId);
    assert.equal(snapshot.messages.at(-1)?.text, "It is 22 °C and sunny in Lisbon.");
    assert.deepEqual(snapshot.sessionSettings, { user_tier: "gold" });
    assert.equal(toolRuns(ready.tool_log, "get_weather"), 1);

    assert.equal(await client.sendMessage(sessionId, "Email Ana the forecast."), true);
    const raised = await until(client, sessionId, snapshot.resumeToken, "interrupt_raised");
    snapshot = await client.getSnapshot(sessionId);
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
    snapshot = await client.getSnapshot(sessionId);
    assert.equal(snapshot.messages.at(-1)?.text, "Done: Ana has the forecast.");
    assert.equal(toolRuns(ready.tool_log, "send_email"), 1);
    assert.equal(snapshot.state?.turnCount, 2);
    assert.equal(snapshot.waitingFor, null);

    const page = await client.getMessages(sessionId, { limit: 2 });
    assert.equal(page.messages.length, 2);
    assert.equal(page.messages.at(-1)?.text, "Done: Ana has the forecast.");
    const older = await client.getMessages(sessionId, {
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
    assert.equal(await client.updateSettings(sessionId, { user_tier: "silver" }), true);
    assert.deepEqual((await client.getSnapshot(sessionId)).sessionSettings, {
      user_tier: "silver",
    });
    assert.equal(await client.cancelTurn(sessionId), false);
  });

  test("the API's errors arrive as their DexAgentsError classes", async () => {
    await assert.rejects(client.getSnapshot("no-such-session"), NotFoundError);
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
    assert.equal((await browser.getSnapshot(sessionId)).sessionId, sessionId);
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
    await assert.rejects(browser.getSnapshot(other.sessionId), ForbiddenError);
    await assert.rejects(browser.listSessions(), ForbiddenError);
    await assert.rejects(browser.mintSessionToken(sessionId), ForbiddenError);
    await assert.rejects(browser.updateSettings(sessionId, {}), ForbiddenError);
  });
});
