/** AgentClient against a scripted HTTP server on loopback that answers as the session API
 *  does (routes, snake_case bodies, error shape, SSE with ids), recording every request. */

import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import {
  AgentClient,
  DexAgentsError,
  NotFoundError,
  SessionExistsError,
  UnauthorizedError,
} from "../src/client.js";
import type { AgentEvent } from "../src/events.js";

interface Seen {
  method: string;
  url: string;
  auth: string | undefined;
  lastEventId: string | undefined;
  body: unknown;
}

const PAYLOADS: [string, Record<string, unknown>][] = [
  ["text_delta", { text: "Hel" }],
  ["vercel_ai.note", { snake_key: { inner_key: 2 } }],
  ["tool_call_finished", { tool_call_id: "c1", tool_name: "lookup", status: "succeeded" }],
  ["turn_completed", { message_count: 3 }],
];
const EVENTS = PAYLOADS.map(([type, payload], index) => ({
  type,
  turn_id: "t1",
  attempt: 1,
  payload,
  step_execution_id: "s1",
  offset: index + 1,
  created_at: "2026-01-01T00:00:00Z",
}));

/** A Step history as `GET /sessions/{id}/steps` answers it: a tool Step that failed its three
 *  attempts, and the failure route that handled it (its input the failed Step's, its recovery
 *  why that Step failed), as the Python core's `test_failures.py` produces them. */
const STEP = {
  step_type: "CallTool",
  status: "failed",
  attempts: 3,
  input: '"b1"',
  error: "RuntimeError: the disk is on fire",
  next_steps: ["st-3"],
  scheduled_at: "2026-01-01T00:00:01Z",
  started_at: "2026-01-01T00:00:01Z",
  ended_at: "2026-01-01T00:00:04Z",
};
const STEPS = [
  { ...STEP, step_execution_id: "st-2", recovery: null },
  {
    ...STEP,
    step_execution_id: "st-3",
    step_type: "RecordToolFailure",
    status: "succeeded",
    attempts: 1,
    error: null,
    next_steps: [],
    scheduled_at: "2026-01-01T00:00:04Z",
    started_at: "2026-01-01T00:00:04Z",
    ended_at: "2026-01-01T00:00:05Z",
    recovery: {
      detail: "the disk is on fire",
      attempt_progress: "NOT_COMPLETED",
      error_type: "RuntimeError",
    },
  },
];

function sse(offset: number): string {
  return `id: ${offset}\ndata: ${JSON.stringify(EVENTS[offset - 1])}\n\n`;
}

describe("AgentClient", () => {
  const seen: Seen[] = [];
  let eventConnections = 0;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const text = Buffer.concat(chunks).toString();
      seen.push({
        method: req.method ?? "",
        url: req.url ?? "",
        auth: req.headers.authorization,
        lastEventId: req.headers["last-event-id"] as string | undefined,
        body: text ? JSON.parse(text) : undefined,
      });
      route(req, res);
    });
  });
  const json = (res: http.ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
  };
  const route = (req: http.IncomingMessage, res: http.ServerResponse) => {
    const url = req.url ?? "";
    if (req.headers.authorization !== "Bearer tok") {
      return json(res, 401, { error: { code: "unauthorized", message: "no", field: null } });
    }
    if (url === "/api/sessions" && req.method === "POST") {
      const body = seen.at(-1)?.body as { session_id?: string; flow_type?: string };
      if (body.session_id === "taken") {
        return json(res, 409, {
          error: { code: "session_exists", message: "taken", field: "session_id" },
        });
      }
      if (body.flow_type === "Unhosted") {
        return json(res, 201, { session_id: "s-2", warning: "no live Worker hosts Unhosted" });
      }
      return json(res, 201, { session_id: "s-1" });
    }
    if (url.startsWith("/api/sessions/missing/")) {
      return json(res, 404, {
        error: { code: "session_not_found", message: "no session", field: "session_id" },
      });
    }
    if (url === "/api/sessions/s-1/snapshot") return json(res, 200, SNAPSHOT);
    if (url === "/api/sessions/s-1/events") return streamEvents(req, res);
    if (url === "/api/workers") return json(res, 200, []);
    if (url === "/api/sessions/s-1/steps") return json(res, 200, STEPS);
    if (url === "/api/sessions/s-1/messages" && req.method === "POST") {
      return json(res, 200, { result: true, message_id: "m-9", event_offset: 3 });
    }
    return json(res, 200, { result: true });
  };
  /** The first connection sends two events and breaks; the next resumes after Last-Event-ID. */
  const streamEvents = (req: http.IncomingMessage, res: http.ServerResponse) => {
    eventConnections += 1;
    res.writeHead(200, { "content-type": "text/event-stream" });
    const after = Number(req.headers["last-event-id"] ?? 0);
    res.write(": ping\n\n");
    if (eventConnections === 1) {
      res.write(sse(after + 1) + sse(after + 2));
      setTimeout(() => res.destroy(), 20);
      return;
    }
    for (let offset = after + 1; offset <= EVENTS.length; offset++) res.write(sse(offset));
  };
  let client: AgentClient;
  let baseUrl = "";
  const warnings: string[] = [];
  before(async () => {
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    baseUrl = `http://127.0.0.1:${port}/api/`;
    client = new AgentClient({
      baseUrl,
      token: "tok",
      reconnectDelayMs: 10,
      onWarning: (warning) => warnings.push(warning),
    });
  });
  after(() => {
    server.closeAllConnections();
    server.close();
  });

  test("each RPC sends its route and snake_case body; results come back camelCase", async () => {
    seen.length = 0;
    assert.deepEqual(
      await client.startSession("Triage", "My order is late.", {
        sessionSettings: { user_tier: "gold" },
      }),
      { sessionId: "s-1", warning: null },
    );
    assert.equal(await client.sendUserMessage("s-1", { text: "more", planMode: true }), true);
    await client.steerUserMessage("s-1", { messageId: "m-1" });
    await client.deleteQueuedMessage("s-1", "m 2");
    await client.cancelTurn("s-1");
    await client.resolveInterrupt("s-1", "i-1", false, "not now");
    await client.answerQuestion("s-1", "i-2", "blue");
    await client.executePlan("s-1", 3);
    await client.updateSessionSettings("s-1", { user_tier: "silver" });
    assert.deepEqual(
      seen.map((s) => [s.method, s.url, s.body]),
      [
        [
          "POST",
          "/api/sessions",
          {
            flow_type: "Triage",
            message: "My order is late.",
            session_id: null,
            session_settings: { user_tier: "gold" },
          },
        ],
        ["POST", "/api/sessions/s-1/messages", { text: "more", plan_mode: true }],
        ["POST", "/api/sessions/s-1/steer", { message_id: "m-1" }],
        ["DELETE", "/api/sessions/s-1/queued-messages/m%202", undefined],
        ["POST", "/api/sessions/s-1/cancel", { turn_id: null }],
        [
          "POST",
          "/api/sessions/s-1/interrupts/i-1/resolve",
          { approved: false, rejection_message: "not now" },
        ],
        ["POST", "/api/sessions/s-1/interrupts/i-2/answer", { answer: "blue" }],
        ["POST", "/api/sessions/s-1/plan/execute", { revision: 3 }],
        ["PUT", "/api/sessions/s-1/settings", { session_settings: { user_tier: "silver" } }],
      ],
    );
    assert.ok(seen.every((s) => s.auth === "Bearer tok"));
    const snapshot = await client.getAgentSnapshot("s-1");
    assert.equal(snapshot.resumeToken, "7");
    assert.equal(snapshot.state?.activeTurnId, "t2");
    assert.equal(snapshot.messages[0]?.turnId, "t1");
    assert.equal(snapshot.pendingInterrupts[0]?.interruptId, "i-9");
    assert.equal(snapshot.toolCalls[0]?.requiresApproval, true);
    assert.equal(snapshot.usage.inputTokens, 12);
    assert.deepEqual(snapshot.sessionSettings, { user_tier: "gold" });
    assert.deepEqual(await client.sendUserMessageForTurn("s-1", "again"), {
      messageId: "m-9",
      eventOffset: 3,
    });
    assert.deepEqual(warnings, []);
  });

  test("the Step history maps each Step, a failure route's recovery included", async () => {
    const [call, route] = await client.getStepHistory("s-1");
    assert.equal(call?.recovery, null);
    assert.equal(call?.nextSteps[0], "st-3");
    assert.deepEqual(route, {
      stepExecutionId: "st-3",
      stepType: "RecordToolFailure",
      status: "succeeded",
      attempts: 1,
      input: '"b1"',
      error: null,
      nextSteps: [],
      scheduledAt: "2026-01-01T00:00:04Z",
      startedAt: "2026-01-01T00:00:04Z",
      endedAt: "2026-01-01T00:00:05Z",
      recovery: {
        detail: "the disk is on fire",
        attemptProgress: "NOT_COMPLETED",
        errorType: "RuntimeError",
      },
    });
  });

  test("a session of a flow type no live Worker hosts warns through onWarning", async () => {
    warnings.length = 0;
    const started = await client.startSession("Unhosted", "Hi");
    assert.deepEqual(started, { sessionId: "s-2", warning: "no live Worker hosts Unhosted" });
    assert.deepEqual(warnings, ["no live Worker hosts Unhosted"]);
    await client.startSession("Unhosted", "Hi", { warnIfNotHosted: false });
    assert.equal(warnings.length, 1);
  });

  test("API errors are DexAgentsError subclasses with status, code and field", async () => {
    const taken = await client
      .startSession("Triage", null, { sessionId: "taken" })
      .catch((e: unknown) => e);
    assert.ok(taken instanceof SessionExistsError);
    assert.ok(taken instanceof DexAgentsError);
    assert.equal(taken.status, 409);
    assert.equal(taken.field, "session_id");
    const missing = await client.getAgentSnapshot("missing").catch((e: unknown) => e);
    assert.ok(missing instanceof NotFoundError);
    assert.equal(missing.code, "session_not_found");
    const anonymous = new AgentClient({ baseUrl });
    const refused = await anonymous.listWorkers().catch((e: unknown) => e);
    assert.ok(refused instanceof UnauthorizedError);
  });

  test("events resume with Last-Event-ID after a broken stream: none missed or repeated", async () => {
    const controller = new AbortController();
    const got: number[] = [];
    const read: string[] = [];
    for await (const event of client.followEvents("s-1", { signal: controller.signal })) {
      got.push(event.offset);
      read.push(describeEvent(event));
      if (event.type === "turn_completed") break;
    }
    // Engine events come typed and camelCase; an adapter's payload keeps its own keys.
    assert.deepEqual(read, [
      "text: Hel",
      'vercel_ai.note: {"snake_key":{"inner_key":2}}',
      "lookup c1 succeeded",
      "done, 3 messages",
    ]);
    assert.deepEqual(got, [1, 2, 3, 4]);
    assert.equal(eventConnections, 2);
    const resumed = seen.filter((s) => s.url.endsWith("/events")).map((s) => s.lastEventId);
    assert.deepEqual(resumed, [undefined, "2"]);
    await assert.rejects(
      async () => {
        for await (const _ of client.followEvents("missing")) break;
      },
      (e: unknown) => e instanceof NotFoundError,
    );
  });
});

/** Narrows on `type`: each branch reads its own payload's typed fields (compiled strict). */
function describeEvent(event: AgentEvent): string {
  switch (event.type) {
    case "text_delta":
      // @ts-expect-error a text delta has no message count
      void event.payload.messageCount;
      return `text: ${event.payload.text}`;
    case "tool_call_finished":
      return `${event.payload.toolName} ${event.payload.toolCallId} ${event.payload.status}`;
    case "turn_completed":
      return `done, ${event.payload.messageCount} messages`;
    case "usage_recorded":
      return `${event.payload.recorded.inputTokens} tokens`;
    default:
      return `${event.type}: ${JSON.stringify(event.payload)}`;
  }
}

const SNAPSHOT = {
  state: {
    status: "running_tools",
    turn_count: 2,
    active_turn_id: "t2",
    next_message_sequence: 3,
    last_turn_error: null,
    interaction_mode: "chat",
    accepts_turn_control: true,
  },
  messages: [
    {
      sequence: 1,
      turn_id: "t1",
      role: "user",
      text: "hi",
      tool_call_id: null,
      tool_name: null,
      tool_arguments: null,
      tool_output: null,
      created_at: "2026-01-01T00:00:00Z",
    },
  ],
  pending_interrupts: [
    {
      interrupt_id: "i-9",
      kind: "tool_approval",
      tool_call_id: "c1",
      tool_name: "refund",
      arguments: "{}",
      created_at: "2026-01-01T00:00:00Z",
      deadline: null,
      question: null,
      choices: [],
      allows_free_text: true,
    },
  ],
  tool_calls: [
    {
      tool_call_id: "c1",
      turn_id: "t2",
      tool_name: "refund",
      arguments: "{}",
      effect: "non_idempotent_write",
      requires_approval: true,
      status: "awaiting_approval",
      output: null,
      error: null,
      rejection_message: null,
      deferral_order: 0,
      wait_until: null,
      input_question: null,
      input_choices: [],
      input_allows_free_text: true,
      cancellation_reason: null,
      task_id: null,
      task_poll_interval_seconds: null,
    },
  ],
  usage: {
    model_calls: 1,
    input_tokens: 12,
    output_tokens: 3,
    cached_input_tokens: 0,
    reasoning_tokens: 0,
  },
  queued_message_count: 0,
  plan: null,
  queued_messages: [],
  steered_messages: [],
  context_summary: null,
  session_settings: { user_tier: "gold" },
  session_id: "s-1",
  flow_type: "Triage",
  resume_token: "7",
};
