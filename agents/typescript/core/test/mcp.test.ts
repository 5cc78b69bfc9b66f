/** The `/mcp` subpath: the annotation mapping and the names without a server, then
 *  McpToolSource against a real MCP server of the SDK over Streamable HTTP on loopback (a
 *  stateful one, with protocol sessions): the listing, the key in `_meta`, the DELETE that ends
 *  each request's session, the result and failure mapping, and a task-required tool whose
 *  session-bound task is polled inside the tool Step; then a stateless server's task polled
 *  across Steps, through an outage of the server (503 to every request, or no server). */

import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { InMemoryTaskStore } from "@modelcontextprotocol/sdk/experimental/tasks/stores/in-memory.js";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { z } from "zod";
import {
  agentToolName,
  annotationEffect,
  DEFAULT_TASK_OUTAGE_MS,
  httpServer,
  IDEMPOTENCY_KEY_META,
  intervalSeconds,
  McpTaskUnreachableError,
  McpToolCallInterruptedError,
  McpToolSource,
  stdioServer,
} from "../src/mcp.js";
import {
  type AgentToolCall,
  type QuestionAnswer,
  resolveToolPolicy,
  ToolExecutionError,
  type ToolTaskPoll,
  type ToolTaskPollOutcome,
} from "../src/runner.js";
import { aiSdkModelClientApi, StepwiseRunner, tool } from "../src/stepwise/index.js";
import * as texts from "../src/texts.js";
import { ToolCallInterruptedError } from "../src/tool-source.js";
import { hasUv, MemoryEvents, pythonValue, record, toolExecution } from "./stepwise-support.js";

describe("names and effects", () => {
  test("annotations map to effects as in Python: readOnly, then idempotent, else none", () => {
    assert.equal(annotationEffect({ readOnlyHint: true, destructiveHint: true }), "read");
    assert.equal(
      annotationEffect({ idempotentHint: true, destructiveHint: true }),
      "idempotent_write",
    );
    assert.equal(annotationEffect({ destructiveHint: true, idempotentHint: false }), null);
    assert.equal(annotationEffect({ readOnlyHint: false }), null);
    assert.equal(annotationEffect({}), null);
    assert.equal(annotationEffect(undefined), null);
  });

  test("tools are named <server>__<tool>, and a server name must keep that unambiguous", () => {
    assert.equal(agentToolName("orders", "lookup_order"), "orders__lookup_order");
    assert.equal(stdioServer({ name: "my-files_2", command: "x" }).name, "my-files_2");
    for (const name of ["a__b", "_a", "a_", "", "a b", "a.b"]) {
      assert.throws(() => stdioServer({ name, command: "x" }), /single '_'/, name);
    }
    assert.throws(() => httpServer({ name: "s", url: "ftp://x" }), /http:\/\//);
    assert.throws(() => stdioServer({ name: "s", command: "x", taskWaitMs: 0 }), /positive/);
    const servers = [
      stdioServer({ name: "s", command: "x" }),
      stdioServer({ name: "s", command: "y" }),
    ];
    assert.throws(() => new McpToolSource(servers), /two MCP servers are named "s"/);
  });

  test("the next poll interval: the server's in whole seconds, or double the last, up to 60 s", () => {
    assert.equal(intervalSeconds(undefined), 1);
    assert.equal(intervalSeconds(2500), 3);
    assert.equal(intervalSeconds(500, 4), 8);
    assert.equal(intervalSeconds(500, 50), 60);
    assert.equal(intervalSeconds(90_000, 50), 90);
  });

  test("the _meta key and the texts are the Python core's", { skip: !hasUv }, () => {
    const python = pythonValue(
      "from dex_agents import texts\nfrom dex_agents.mcp import IDEMPOTENCY_KEY_META",
      "[IDEMPOTENCY_KEY_META, texts.MCP_INPUT_NOT_SUPPORTED.format(tool='t', server='s', requested='r'), " +
        "texts.MCP_TASK_FAILED.format(tool='t', server='s', error='e'), " +
        "texts.MCP_TASK_CANCELLED.format(tool='t', server='s'), " +
        "texts.MCP_TASK_NO_RESULT.format(tool='t', server='s')]",
    );
    assert.deepEqual(python, [
      IDEMPOTENCY_KEY_META,
      texts.mcpInputNotSupported("t", "s", "r"),
      texts.mcpTaskFailed("t", "s", "e"),
      texts.mcpTaskCancelled("t", "s"),
      texts.mcpTaskNoResult("t", "s"),
    ]);
  });
});

interface Seen {
  keys: Record<string, string | undefined>;
  deletes: number;
  sessions: number;
  /** Completes the report task of a month that waits (`held-*`). */
  finish: Map<string, () => Promise<void>>;
  /** While true the server answers 503 to every request, keeping its tasks (an outage). */
  unavailable: boolean;
}

const newSeen = (): Seen => ({
  keys: {},
  deletes: 0,
  sessions: 0,
  finish: new Map(),
  unavailable: false,
});

/** A Streamable HTTP MCP server: stateful (one McpServer per protocol session), or stateless
 *  (one per request, no session), its tasks in one store either way. */
async function startServer(
  seen: Seen,
  stateless = false,
): Promise<{ url: string; close(): Promise<void> }> {
  const transports = new Map<string, StreamableHTTPServerTransport>();
  const taskStore = new InMemoryTaskStore();
  const newServer = (): McpServer => {
    const server = new McpServer(
      { name: "test-shop", version: "1.0.0" },
      { capabilities: { tasks: { requests: { tools: { call: {} } } } }, taskStore },
    );
    server.registerTool(
      "lookup",
      {
        description: "Look an order up.",
        inputSchema: { order_id: z.string() },
        annotations: { readOnlyHint: true },
      },
      async ({ order_id }, extra) => {
        seen.keys[`lookup ${order_id}`] = extra._meta?.[IDEMPOTENCY_KEY_META] as string;
        return {
          content: [
            { type: "text", text: `order ${order_id}` },
            { type: "text", text: "shipped" },
          ],
        };
      },
    );
    server.registerTool(
      "refund",
      {
        title: "Refund",
        inputSchema: { order_id: z.string() },
        annotations: { destructiveHint: true },
      },
      async ({ order_id }) => ({
        content: [{ type: "text", text: `order ${order_id} is closed` }],
        isError: true,
      }),
    );
    server.registerTool(
      "restock",
      { description: "Restock.", annotations: { idempotentHint: true, destructiveHint: true } },
      async () => ({ content: [], structuredContent: { restocked: 3 } }),
    );
    server.experimental.tasks.registerToolTask(
      "report",
      {
        description: "A slow report.",
        inputSchema: { month: z.string() },
        execution: { taskSupport: "required" },
      },
      {
        createTask: async ({ month }, extra) => {
          seen.keys[`report ${month}`] = extra._meta?.[IDEMPOTENCY_KEY_META] as string;
          const task = await extra.taskStore.createTask({
            ttl: extra.taskRequestedTtl ?? null,
            pollInterval: 100,
          });
          const finish = async (): Promise<void> =>
            await extra.taskStore.storeTaskResult(task.taskId, "completed", {
              content: [{ type: "text", text: `report for ${month}` }],
            });
          if (month.startsWith("held-")) seen.finish.set(month, finish);
          else setTimeout(() => void finish(), 300);
          return { task };
        },
        getTask: async (_args, extra) => await extra.taskStore.getTask(extra.taskId),
        getTaskResult: async (_args, extra) =>
          (await extra.taskStore.getTaskResult(extra.taskId)) as {
            content: { type: "text"; text: string }[];
          },
      },
    );
    return server;
  };
  const httpServer_ = http.createServer(async (req, res) => {
    if (seen.unavailable) {
      res.writeHead(503).end("unavailable");
      return;
    }
    if (stateless) {
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
      await newServer().connect(transport);
      await transport.handleRequest(req, res);
      return;
    }
    const id = req.headers["mcp-session-id"];
    if (req.method === "DELETE") seen.deletes++;
    let transport = typeof id === "string" ? transports.get(id) : undefined;
    if (transport === undefined) {
      seen.sessions++;
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (sessionId) => {
          if (transport !== undefined) transports.set(sessionId, transport);
        },
      });
      await newServer().connect(transport);
    }
    await transport.handleRequest(req, res);
  });
  await new Promise<void>((resolve) => httpServer_.listen(0, "127.0.0.1", resolve));
  const { port } = httpServer_.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    close: async () => {
      httpServer_.closeAllConnections();
      await new Promise<void>((resolve) => httpServer_.close(() => resolve()));
      taskStore.cleanup();
    },
  };
}

describe("McpToolSource over Streamable HTTP", () => {
  const seen = newSeen();
  let server: { url: string; close(): Promise<void> };
  let source: McpToolSource;
  const warnings: string[] = [];

  before(async () => {
    server = await startServer(seen);
    source = new McpToolSource(
      [
        httpServer({ name: "shop", url: server.url }),
        httpServer({ name: "gone", url: "http://127.0.0.1:9/mcp", handshakeTimeoutMs: 2000 }),
      ],
      { policies: { shop__restock: { requiresApproval: true } }, warn: (m) => warnings.push(m) },
    );
    await source.listTools();
  });
  after(async () => await server.close());

  test("lists <server>__<tool> tools with their effects; an unreachable server is left out", () => {
    const tools = Object.fromEntries([...source.tools.values()].map((t) => [t.name, t]));
    assert.deepEqual(Object.keys(tools).sort(), [
      "shop__lookup",
      "shop__refund",
      "shop__report",
      "shop__restock",
    ]);
    assert.equal(tools.shop__lookup?.effect, "read");
    assert.equal(tools.shop__refund?.effect, null);
    assert.equal(tools.shop__refund?.description, "Refund");
    assert.equal(tools.shop__restock?.effect, "idempotent_write");
    assert.equal(tools.shop__report?.taskSupport, "required");
    assert.deepEqual(
      (tools.shop__lookup?.parameters as { required?: string[] } | undefined)?.required,
      ["order_id"],
    );
    assert.equal(warnings.length, 1);
    assert.match(warnings[0] ?? "", /^MCP server gone left out: its tools could not be listed/);
  });

  test("a call's policy: the explicit policy wins, then the annotation effect, then the default", () => {
    const resolve = (name: string, effect?: string | null, approval?: boolean | null) =>
      resolveToolPolicy(
        name,
        { shop__lookup: { requiresApproval: true } },
        "unclassified",
        effect as never,
        approval,
      );
    const lookup = source.deferredToolCall("c1", "shop__lookup", "{}", resolve);
    assert.deepEqual(lookup.policy, { effect: "read", requiresApproval: true });
    assert.deepEqual(JSON.parse(lookup.toolSourceReference ?? ""), {
      server: "shop",
      tool: "lookup",
    });
    assert.deepEqual(source.deferredToolCall("c2", "shop__refund", "{}", resolve).policy, {
      effect: "unclassified",
      requiresApproval: true,
    });
    assert.deepEqual(source.deferredToolCall("c3", "shop__restock", "{}", resolve).policy, {
      effect: "idempotent_write",
      requiresApproval: true,
    });
  });

  test("a call carries the key in _meta, on a new session that ends with a DELETE", async () => {
    const before_ = { sessions: seen.sessions, deletes: seen.deletes };
    const call = source.deferredToolCall("c1", "shop__lookup", '{"order_id":"A-1"}');
    const execution = toolExecution(
      record("c1", call.toolName, call.arguments, { status: "approved", ...call }),
    );
    const outcome = await source.executeDeferredToolCall(execution);
    assert.deepEqual(outcome, { kind: "tool_execution_result", output: "order A-1\nshipped" });
    assert.equal(seen.keys["lookup A-1"], "flow-1/turn-1/c1");
    assert.equal(seen.sessions - before_.sessions, 1);
    assert.equal(seen.deletes - before_.deletes, 1);
  });

  test("isError is a ToolExecutionError with the tool's text; structured content is its JSON", async () => {
    await assert.rejects(
      source.callListedTool("shop__refund", { order_id: "A-2" }, "k-2"),
      (error: Error) =>
        error instanceof ToolExecutionError && error.message === "order A-2 is closed",
    );
    assert.equal(await source.callListedTool("shop__restock", {}, "k-3"), '{"restocked":3}');
  });

  test("arguments that are not an object, and an unknown server, fail without a call", async () => {
    const bad = toolExecution(
      record("c9", "shop__lookup", "[1]", {
        status: "approved",
        toolSourceReference: JSON.stringify({ server: "shop", tool: "lookup" }),
      }),
    );
    await assert.rejects(source.executeDeferredToolCall(bad), /arguments must be a JSON object/);
    const elsewhere = toolExecution(
      record("c8", "x__y", "{}", {
        status: "approved",
        toolSourceReference: '{"server":"x","tool":"y"}',
      }),
    );
    assert.equal(source.owns(elsewhere.toolCall), false);
    await assert.rejects(source.executeDeferredToolCall(elsewhere), ToolExecutionError);
  });

  test("a server gone after the listing: the call was not sent, a ToolExecutionError", async () => {
    const late = new McpToolSource([httpServer({ name: "gone", url: "http://127.0.0.1:9/mcp" })]);
    await assert.rejects(
      late.callTool("gone", "lookup", {}, "k"),
      (error: Error) =>
        error instanceof ToolExecutionError &&
        /could not be reached, so lookup was not called/.test(error.message),
    );
    assert.ok(!(McpToolCallInterruptedError.prototype instanceof ToolExecutionError));
    assert.ok(McpToolCallInterruptedError.prototype instanceof ToolCallInterruptedError);
  });

  test("a task-required tool: a session-bound task polled in the tool Step, a heartbeat per poll", async () => {
    const call = source.deferredToolCall("c5", "shop__report", '{"month":"May"}');
    const execution = toolExecution(
      record("c5", call.toolName, call.arguments, { status: "approved", ...call }),
    );
    let heartbeats = 0;
    const checkpoints: string[] = [];
    execution.heartbeat = () => heartbeats++;
    execution.saveHeartbeatCheckpoint = async (text) => void checkpoints.push(text);
    const outcome = await source.executeDeferredToolCall(execution);
    assert.deepEqual(outcome, { kind: "tool_execution_result", output: "report for May" });
    assert.equal(seen.keys["report May"], "flow-1/turn-1/c5");
    assert.ok(heartbeats >= 2, `heartbeats: ${heartbeats}`);
    assert.deepEqual(checkpoints, []); // a session-bound task no other connection can poll
  });

  test("Stepwise takes the source among its tools: it runs the source's records and polls its tasks", async () => {
    const own = tool({
      name: "shop__lookup",
      description: "Shadows the source's.",
      execute: () => "own",
    });
    const runner = new StepwiseRunner({
      name: "A",
      instructions: "",
      model: aiSdkModelClientApi("unused"),
      tools: [own, source],
    });
    assert.equal(typeof runner.pollToolTask, "function");
    assert.equal(
      typeof new StepwiseRunner({
        name: "B",
        instructions: "",
        model: aiSdkModelClientApi("unused"),
      }).pollToolTask,
      "undefined",
    );
    const reference = JSON.stringify({ server: "shop", tool: "lookup" });
    const referenced = toolExecution(
      record("c6", "shop__lookup", '{"order_id":"B-1"}', {
        status: "approved",
        toolSourceReference: reference,
      }),
    );
    assert.deepEqual(await runner.executeDeferredToolCall(referenced), {
      kind: "tool_execution_result",
      output: "order B-1\nshipped",
    });
    assert.equal(seen.keys["lookup B-1"], "flow-1/turn-1/c6");
    const unreferenced = toolExecution(record("c7", "shop__lookup", "{}", { status: "approved" }));
    assert.deepEqual(await runner.executeDeferredToolCall(unreferenced), {
      kind: "tool_execution_result",
      output: "own",
    });
  });
});

/** One PollToolTask call of `toolCall`'s task, as the engine sends it. */
function taskPoll(
  toolCall: AgentToolCall,
  events: MemoryEvents,
  continuation: string | null,
  pendingAnswer: QuestionAnswer | null = null,
): ToolTaskPoll {
  return {
    flowType: "Test",
    flowId: "flow-1",
    toolCall: { ...toolCall, inputContinuation: continuation },
    idempotencyKey: `flow-1/turn-1/${toolCall.toolCallId}`,
    attempt: 1,
    inputAnswers: [],
    events,
    heartbeat: () => {},
    cancellationSignal: new AbortController().signal,
    deadline: null,
    pendingAnswer,
  };
}

/** The continuation of a pending poll, as JSON. */
function continuationOf(outcome: ToolTaskPollOutcome): Record<string, unknown> {
  assert.equal(outcome.kind, "tool_task_pending");
  return JSON.parse((outcome.kind === "tool_task_pending" && outcome.continuation) || "");
}

describe("McpToolSource and a stateless Streamable HTTP server's task", () => {
  const seen = newSeen();
  let server: { url: string; close(): Promise<void> };
  let source: McpToolSource;

  before(async () => {
    server = await startServer(seen, true);
    source = new McpToolSource([httpServer({ name: "shop", url: server.url })], {
      taskTtlMs: 60_000,
    });
    await source.listTools();
  });
  after(async () => await server.close());

  test("becomes ToolTaskStarted, saved first; a retried attempt takes the saved task; polls read it", async () => {
    const call = source.deferredToolCall("t1", "shop__report", '{"month":"held-July"}');
    const toolCall = record("t1", call.toolName, call.arguments, { status: "approved", ...call });
    const execution = toolExecution(toolCall);
    const checkpoints: string[] = [];
    execution.supportsToolTasks = true;
    execution.saveHeartbeatCheckpoint = async (text) => void checkpoints.push(text);
    const started = await source.executeDeferredToolCall(execution);
    assert.ok(started.kind === "tool_task_started");
    assert.equal(started.pollIntervalSeconds, 1);
    assert.equal(seen.keys["report held-July"], "flow-1/turn-1/t1");
    assert.equal(checkpoints.length, 1);
    assert.equal(JSON.parse(checkpoints[0] ?? "").task_id, started.taskId);

    const retried = toolExecution(toolCall);
    retried.supportsToolTasks = true;
    retried.heartbeatCheckpoint = checkpoints[0] ?? null;
    assert.deepEqual(await source.executeDeferredToolCall(retried), started);
    assert.equal(seen.finish.size, 1, "the retry sent no second tools/call");

    const events = new MemoryEvents();
    const polled = { ...toolCall, taskId: started.taskId, taskPollIntervalSeconds: 1 };
    const poll = (continuation: string | null) => taskPoll(polled, events, continuation);
    const pending = await source.pollToolTask(poll(null));
    // The server's 100 ms is shorter than double the last interval (1 s): 2 s.
    assert.deepEqual(pending, {
      kind: "tool_task_pending",
      pollIntervalSeconds: 2,
      continuation: '{"status":"working"}',
    });
    assert.deepEqual(await source.pollToolTask(poll('{"status":"working"}')), pending);
    // An earlier version's continuation, the status alone, reads as that status: no new event.
    assert.deepEqual(await source.pollToolTask(poll("working")), pending);
    await seen.finish.get("held-July")?.();
    const done = await source.pollToolTask(poll('{"status":"working"}'));
    assert.deepEqual(done, { kind: "tool_execution_result", output: "report for held-July" });
    const statuses = events.events.map((event) => [event.type, event.payload.status]);
    assert.deepEqual(statuses, [
      ["mcp.task_status", "working"],
      ["mcp.task_status", "completed"],
    ]);
  });
});

describe("McpToolSource polling a task through an outage of its server", () => {
  const seen = newSeen();
  let server: { url: string; close(): Promise<void> };
  let source: McpToolSource;
  const warnings: string[] = [];

  before(async () => {
    server = await startServer(seen, true);
    source = new McpToolSource([httpServer({ name: "shop", url: server.url })], {
      taskTtlMs: 60_000,
      warn: (message) => warnings.push(message),
    });
    await source.listTools();
  });
  after(async () => {
    seen.unavailable = false;
    await server.close();
  });

  test("taskOutageMs: an hour by default, 0 allowed, never negative", () => {
    assert.equal(DEFAULT_TASK_OUTAGE_MS, 3_600_000);
    assert.equal(httpServer({ name: "s", url: "http://x", taskOutageMs: 0 }).taskOutageMs, 0);
    assert.throws(
      () => httpServer({ name: "s", url: "http://x", taskOutageMs: -1 }),
      /taskOutageMs must not be negative/,
    );
  });

  test("a poll that cannot reach the server polls again later, for taskOutageMs from the outage's first poll, then fails", async () => {
    const call = source.deferredToolCall("o1", "shop__report", '{"month":"held-August"}');
    const execution = toolExecution(
      record("o1", call.toolName, call.arguments, { status: "approved", ...call }),
    );
    execution.supportsToolTasks = true;
    execution.saveHeartbeatCheckpoint = async () => {};
    const started = await source.executeDeferredToolCall(execution);
    assert.ok(started.kind === "tool_task_started");
    const task = { ...execution.toolCall, taskId: started.taskId, taskPollIntervalSeconds: 1 };
    const events = new MemoryEvents();
    const seenWorking = await source.pollToolTask(taskPoll(task, events, null));
    assert.deepEqual(continuationOf(seenWorking), { status: "working" });
    const poll = (
      continuation: string | null,
      interval = 1,
      answer: QuestionAnswer | null = null,
    ) => taskPoll({ ...task, taskPollIntervalSeconds: interval }, events, continuation, answer);

    seen.unavailable = true;
    const startedAt = Date.now() / 1000;
    const first = await source.pollToolTask(poll(JSON.stringify(continuationOf(seenWorking))));
    assert.ok(first.kind === "tool_task_pending");
    assert.equal(first.pollIntervalSeconds, 2); // the record's 1 s, doubled
    const since = continuationOf(first).unreachable_since as number;
    assert.equal(continuationOf(first).status, "working");
    assert.ok(since >= startedAt - 1 && since <= Date.now() / 1000, `since: ${since}`);
    const second = await source.pollToolTask(poll(first.continuation ?? null, 2));
    assert.ok(second.kind === "tool_task_pending");
    assert.equal(second.pollIntervalSeconds, 4); // growing, as a poll that reached the server
    assert.deepEqual(continuationOf(second), { status: "working", unreachable_since: since });
    assert.equal(warnings.length, 2);
    assert.match(
      warnings[0] ?? "",
      new RegExp(
        `^MCP server shop could not be reached to read task ${started.taskId}: .*: unavailable; polling again in 2 s$`,
      ),
    );

    // Past taskOutageMs from the outage's first poll, the poll fails its attempt.
    const hourAgo = JSON.stringify({ status: "working", unreachable_since: since - 3601 });
    await assert.rejects(source.pollToolTask(poll(hourAgo)), McpTaskUnreachableError);
    const impatient = new McpToolSource([
      httpServer({ name: "shop", url: server.url, taskOutageMs: 0 }),
    ]);
    await assert.rejects(
      impatient.pollToolTask(poll(null)),
      (error: Error) =>
        error instanceof McpTaskUnreachableError &&
        /could not be reached to read task/.test(error.message),
    );
    // A poll that was to deliver an answer fails its attempt, so the answer stays pending.
    const answer: QuestionAnswer = {
      interruptId: "o1-input-1",
      question: "Ship?",
      answer: "yes",
      resolution: "answered",
    };
    await assert.rejects(
      source.pollToolTask(poll(first.continuation ?? null, 2, answer)),
      McpTaskUnreachableError,
    );
    // No server at all (the connection refused) is an outage too.
    const gone = new McpToolSource(
      [httpServer({ name: "shop", url: "http://127.0.0.1:9/mcp", handshakeTimeoutMs: 2000 })],
      { warn: () => {} },
    );
    const refused = await gone.pollToolTask(poll(first.continuation ?? null, 2));
    assert.deepEqual(continuationOf(refused), { status: "working", unreachable_since: since });
    // A cancellation fails its attempt at once.
    await assert.rejects(
      source.cancelToolTask({ ...poll(null), toolCall: task }),
      /could not be reached to cancel/,
    );

    // The server back: the task goes on where it was, the outage forgotten, no event repeated.
    seen.unavailable = false;
    const back = await source.pollToolTask(poll(second.continuation ?? null, 4));
    assert.deepEqual(continuationOf(back), { status: "working" });
    await seen.finish.get("held-August")?.();
    const done = await source.pollToolTask(poll(JSON.stringify(continuationOf(back))));
    assert.deepEqual(done, { kind: "tool_execution_result", output: "report for held-August" });
    assert.deepEqual(
      events.events.map((event) => event.payload.status),
      ["working", "completed"],
    );
  });
});
