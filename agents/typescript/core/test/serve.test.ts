import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { currentToolExecution } from "../src/runner.js";
import { serveRunners } from "../src/serve.js";
import { EchoRunner } from "./echo-runner.js";
import {
  assistantMessage,
  lines,
  listen,
  post,
  type Served,
  toolCallRecord,
  turnBody,
  userMessage,
} from "./helpers.js";

const TOKEN = "runner-secret";
const auth = { authorization: `Bearer ${TOKEN}` };

function toolBody(args: unknown, flowId = "session-tools") {
  return {
    flow_type: "Echo",
    flow_id: flowId,
    turn_id: "t1",
    step_execution_id: "step-9",
    tool_call: toolCallRecord("refund", args),
    idempotency_key: `${flowId}/t1/call-1`,
    attempt: 1,
    heartbeat_checkpoint: null,
    input_answers: [],
    supports_tool_tasks: false,
    turn: null,
  };
}

describe("serveRunners on a real HTTP server", () => {
  const echo = new EchoRunner();
  const handler = serveRunners({ Echo: echo }, { token: TOKEN, heartbeatIntervalMs: 60 });
  let served: Served;
  before(async () => {
    served = await listen(handler);
  });
  after(() => served.close());

  test("describe answers the protocol version and each flow's capabilities", async () => {
    const response = await fetch(`${served.url}/describe`, { headers: auth });
    assert.equal(response.status, 200);
    assert.deepEqual(await response.json(), {
      protocol_version: 1,
      flows: {
        Echo: {
          capabilities: {
            unfinished_turn_messages: true,
            tool_tasks: false,
            tool_task_cancellation: false,
            context_compaction: false,
            plan_mode: false,
            tool_steps_read_turn: false,
          },
        },
      },
    });
  });

  test("describe carries the session options the app sets, in seconds; bad ones throw", async () => {
    const withOptions = serveRunners(
      { Echo: echo },
      { sessionOptions: { Echo: { interruptDeadlineMs: 90_000, maxDurableWaitMs: 1_500 } } },
    );
    const described = await withOptions.fetch(new Request("http://runner/dex/describe"));
    const body = (await described.json()) as { flows: Record<string, Record<string, unknown>> };
    assert.deepEqual(body.flows.Echo?.session_options, {
      interrupt_deadline_seconds: 90,
      max_durable_wait_seconds: 1.5,
    });
    assert.throws(
      () => serveRunners({ Echo: echo }, { sessionOptions: { Other: { maxDurableWaitMs: 1 } } }),
      /sessionOptions names "Other", a flow not served/,
    );
    assert.throws(
      () => serveRunners({ Echo: echo }, { sessionOptions: { Echo: { interruptDeadlineMs: 0 } } }),
      /interruptDeadlineMs must be a positive number of ms/,
    );
  });

  test("a wrong or missing token is refused with 401 and the runner is not called", async () => {
    const before = echo.turns.length;
    const body = turnBody([userMessage(1, "hi")], { first: 1, last: 1, after: 0 });
    const refused: Record<string, string>[] = [
      {},
      { authorization: "Bearer nope" },
      { authorization: TOKEN },
    ];
    for (const headers of refused) {
      const response = await post(served.url, "run_model_step", body, { headers });
      assert.equal(response.status, 401);
      assert.equal(response.headers.get("www-authenticate")?.startsWith("Bearer"), true);
      assert.equal(
        ((await response.json()) as { error: { kind: string } }).error.kind,
        "unauthorized",
      );
    }
    const describe = await fetch(`${served.url}/describe`);
    assert.equal(describe.status, 401);
    assert.equal(echo.turns.length, before);
  });

  test("an unknown flow type or method is a 404 with a JSON error", async () => {
    const body = { ...turnBody([], { first: 1, last: 0, after: 0 }), flow_type: "Nope" };
    const response = await post(served.url, "run_model_step", body, { headers: auth });
    assert.equal(response.status, 404);
    const error = ((await response.json()) as { error: { kind: string; message: string } }).error;
    assert.equal(error.kind, "unknown_flow_type");
    assert.match(error.message, /Nope/);
    const method = await post(served.url, "poll_tool_task", toolBody({}), { headers: auth });
    assert.equal(method.status, 404);
    assert.equal(
      ((await method.json()) as { error: { kind: string } }).error.kind,
      "unsupported_method",
    );
    const bad = await fetch(`${served.url}/run_model_step`, {
      method: "POST",
      headers: auth,
      body: "{",
    });
    assert.equal(bad.status, 400);
    const noHistory = await post(
      served.url,
      "run_model_step",
      { flow_type: "Echo" },
      { headers: auth },
    );
    assert.equal(noHistory.status, 400);
    assert.equal(
      ((await noHistory.json()) as { error: { kind: string } }).error.kind,
      "bad_request",
    );
    const gap = turnBody(
      [userMessage(2, "x")],
      { first: 1, last: 2, after: 0 },
      { flow_id: "s-gap" },
    );
    const gapResponse = await post(served.url, "run_model_step", gap, { headers: auth });
    assert.equal(gapResponse.status, 400);
    assert.match(
      ((await gapResponse.json()) as { error: { message: string } }).error.message,
      /sequence 1/,
    );
  });

  test("run_model_step streams accepted, events and heartbeats in order, then the result", async () => {
    echo.mode = "stream";
    const body = turnBody(
      [userMessage(1, "hi")],
      { first: 1, last: 1, after: 0 },
      { flow_id: "s-stream" },
    );
    const response = await post(served.url, "run_model_step", body, { headers: auth });
    assert.equal(response.status, 200);
    assert.equal(response.headers.get("content-type"), "application/x-ndjson");
    const got = await lines(response);
    assert.deepEqual(got, [
      { accepted: true },
      // The payload's keys are the runner's own: not rewritten.
      { event: { type: "text_delta", payload: { delta: "Hel", nested_key: { a_b: 1 } } } },
      { heartbeat: true },
      { event: { type: "text_delta", payload: { delta: "lo" } } },
      {
        result: {
          kind: "turn_completed",
          new_messages: [
            {
              role: "assistant",
              framework_item: JSON.stringify({ said: "hi" }),
              text: "hi",
              tool_call_id: null,
              tool_name: null,
              tool_arguments: null,
              tool_output: null,
            },
          ],
          usage: {
            model_calls: 1,
            input_tokens: 3,
            output_tokens: 2,
            cached_input_tokens: 0,
            reasoning_tokens: 0,
          },
          model_call_metadata: {
            request_model: null,
            response_model: "echo-1",
            provider_name: null,
            response_id: null,
            finish_reasons: ["stop"],
          },
          turn_error: null,
        },
      },
    ]);
    const turn = echo.turns.at(-1);
    assert.ok(turn);
    // The user's text went through buildUserMessage; settings and policies arrive camelCase
    // at the top, with the user's own keys untouched.
    assert.deepEqual(turn.items, [{ from: "user", text: "hi" }]);
    assert.deepEqual(turn.sessionSettings, { user_name: "Ada", nested_key: { keep_me: 1 } });
    assert.deepEqual(turn.resolveToolPolicy("refund"), {
      effect: "non_idempotent_write",
      requiresApproval: true,
    });
    assert.deepEqual(turn.resolveToolPolicy("lookup", "read"), {
      effect: "read",
      requiresApproval: false,
    });
    assert.equal(turn.messages[0]?.turnId, "t1");
  });

  test("the Step's deadline (epoch ms on the wire) reaches the runner as a Date, else null", async () => {
    echo.mode = "stream";
    const deadline = Date.UTC(2030, 0, 2, 3, 4, 5, 678);
    for (const [flowId, sent, expected] of [
      ["s-deadline", deadline, new Date(deadline)],
      ["s-no-deadline", null, null],
    ] as const) {
      const body = turnBody(
        [userMessage(1, "hi")],
        { first: 1, last: 1, after: 0 },
        { flow_id: flowId, deadline: sent },
      );
      const got = await lines(await post(served.url, "run_model_step", body, { headers: auth }));
      assert.ok("result" in (got.at(-1) ?? {}));
      const turn = echo.turns.at(-1);
      assert.equal(turn?.flowId, flowId);
      assert.deepEqual(turn?.deadline, expected);
      assert.equal(turn?.cancellationSignal.aborted, false);
    }
  });

  test("a silent runner gets a heartbeat line after each silence of the interval", async () => {
    echo.mode = "silent";
    const body = turnBody(
      [userMessage(1, "wait")],
      { first: 1, last: 1, after: 0 },
      { flow_id: "s-silent" },
    );
    const got = await lines(await post(served.url, "run_model_step", body, { headers: auth }));
    assert.deepEqual(got[0], { accepted: true });
    const heartbeats = got.filter((line) => line.heartbeat === true).length;
    assert.ok(
      heartbeats >= 2,
      `expected at least 2 heartbeats in 250 ms at 60 ms, got ${heartbeats}`,
    );
    assert.ok("result" in (got.at(-1) ?? {}));
  });

  test("need_history when the cache lacks messages, then the delta only, parsed once", async () => {
    echo.mode = "reply";
    const flow = { flow_id: "s-history" };
    const all = [userMessage(1, "a"), assistantMessage(2, "b"), userMessage(3, "c")];
    // The engine believes this process holds 1..2 (e.g. it restarted): it must ask.
    let got = await lines(
      await post(
        served.url,
        "run_model_step",
        turnBody(all.slice(2), { first: 1, last: 3, after: 2 }, flow),
        {
          headers: auth,
        },
      ),
    );
    assert.deepEqual(got, [{ need_history: { after_sequence: 0 } }]);
    const turnsBefore = echo.turns.length;
    got = await lines(
      await post(
        served.url,
        "run_model_step",
        turnBody(all, { first: 1, last: 3, after: 0 }, flow),
        {
          headers: auth,
        },
      ),
    );
    assert.deepEqual(got[0], { accepted: true });
    assert.equal(echo.turns.length, turnsBefore + 1);
    const parsedBefore = echo.parsed.length;
    const builtBefore = echo.built.length;
    // The next Step sends only message 4 (and 5).
    const next = [assistantMessage(4, "d"), userMessage(5, "e")];
    got = await lines(
      await post(
        served.url,
        "run_model_step",
        turnBody(next, { first: 1, last: 5, after: 3 }, flow),
        {
          headers: auth,
        },
      ),
    );
    assert.deepEqual(got[0], { accepted: true });
    const turn = echo.turns.at(-1);
    assert.deepEqual(
      turn?.messages.map((m) => m.sequence),
      [1, 2, 3, 4, 5],
    );
    assert.equal(turn?.items.length, 5);
    assert.deepEqual(echo.parsed.slice(parsedBefore), [JSON.stringify({ said: "d" })]);
    assert.deepEqual(echo.built.slice(builtBefore), ["e"]);
    // Compaction's retention moves the first sequence: the older messages are gone.
    got = await lines(
      await post(
        served.url,
        "run_model_step",
        turnBody([], { first: 4, last: 5, after: 5 }, flow),
        {
          headers: auth,
        },
      ),
    );
    assert.deepEqual(got[0], { accepted: true });
    assert.deepEqual(
      echo.turns.at(-1)?.messages.map((m) => m.sequence),
      [4, 5],
    );
    got = await lines(
      await post(
        served.url,
        "run_model_step",
        turnBody([], { first: 1, last: 5, after: 5 }, flow),
        {
          headers: auth,
        },
      ),
    );
    assert.deepEqual(got, [{ need_history: { after_sequence: 0 } }]);
    assert.equal(echo.parsed.length, parsedBefore + 1);
    // A body that sends again what the cache holds (another Worker) is not parsed again.
    got = await lines(
      await post(
        served.url,
        "run_model_step",
        turnBody(next, { first: 4, last: 5, after: 0 }, flow),
        { headers: auth },
      ),
    );
    assert.deepEqual(got[0], { accepted: true });
    assert.equal(echo.parsed.length, parsedBefore + 1);
    assert.deepEqual(echo.built.slice(builtBefore), ["e"]);
  });

  test("a tool failure the model reads is tool_execution_error; a crash is runner_error", async () => {
    let got = await lines(
      await post(served.url, "execute_deferred_tool_call", toolBody({ fail: "card declined" }), {
        headers: auth,
      }),
    );
    assert.deepEqual(got, [
      { accepted: true },
      { error: { kind: "tool_execution_error", message: "card declined" } },
    ]);
    got = await lines(
      await post(served.url, "execute_deferred_tool_call", toolBody({ foreign: "other copy" }), {
        headers: auth,
      }),
    );
    assert.deepEqual(got[1], { error: { kind: "tool_execution_error", message: "other copy" } });
    got = await lines(
      await post(served.url, "execute_deferred_tool_call", toolBody({ crash: "boom" }), {
        headers: auth,
      }),
    );
    const error = got[1]?.error as { kind: string; message: string; stack: string };
    assert.equal(error.kind, "runner_error");
    assert.equal(error.message, "boom");
    assert.match(error.stack, /TypeError: boom\n\s+at /);
    assert.equal("status_code" in error, false);
    // A provider's HTTP error carries its status and retry headers, for RunModel's retries.
    got = await lines(
      await post(served.url, "execute_deferred_tool_call", toolBody({ status: 429 }), {
        headers: auth,
      }),
    );
    const http = got[1]?.error as Record<string, unknown>;
    assert.equal(http.message, "Failed after 3 attempts. Last error: provider said 429");
    assert.equal(http.status_code, 429);
    assert.deepEqual(http.response_headers, { "retry-after": "2" });
    echo.mode = "fail";
    const body = turnBody(
      [userMessage(1, "x")],
      { first: 1, last: 1, after: 0 },
      { flow_id: "s-fail" },
    );
    got = await lines(await post(served.url, "run_model_step", body, { headers: auth }));
    assert.deepEqual(got[0], { accepted: true });
    assert.equal((got[1]?.error as { kind?: string } | undefined)?.kind, "runner_error");
    assert.equal(got.length, 2);
  });

  test("a tool reads currentToolExecution; its checkpoint line comes before the result", async () => {
    const runsBefore = echo.toolRuns.length;
    const got = await lines(
      await post(served.url, "execute_deferred_tool_call", toolBody({ amount: 5 }, "s-tool"), {
        headers: auth,
      }),
    );
    assert.deepEqual(got, [
      { accepted: true },
      { checkpoint: "half-way" },
      { result: { kind: "tool_execution_result", output: '{"ok":true}', framework_data: null } },
    ]);
    assert.deepEqual(echo.toolRuns.slice(runsBefore), [
      { key: "s-tool/t1/call-1", args: '{"amount":5}' },
    ]);
    assert.equal(currentToolExecution(), undefined);
  });

  test("build_unfinished_turn_messages answers the runner's messages", async () => {
    const body = turnBody(
      [userMessage(1, "x")],
      { first: 1, last: 1, after: 0 },
      { flow_id: "s-unfinished" },
    );
    const got = await lines(
      await post(served.url, "build_unfinished_turn_messages", body, { headers: auth }),
    );
    assert.deepEqual(got.at(-1), {
      result: {
        messages: [
          {
            role: "assistant",
            framework_item: '{"said":"unfinished t1"}',
            text: null,
            tool_call_id: null,
            tool_name: null,
            tool_arguments: null,
            tool_output: null,
          },
        ],
      },
    });
  });

  test("the engine closing the connection aborts the runner's signal", async () => {
    echo.mode = "hang";
    const body = turnBody(
      [userMessage(1, "x")],
      { first: 1, last: 1, after: 0 },
      { flow_id: "s-abort" },
    );
    const controller = new AbortController();
    const response = await post(served.url, "run_model_step", body, {
      headers: auth,
      signal: controller.signal,
    });
    const reader = response.body?.getReader();
    const first = await reader?.read();
    assert.equal(new TextDecoder().decode(first?.value), '{"accepted":true}\n');
    controller.abort();
    const observed = await Promise.race([
      echo.sawAbort,
      new Promise<string>((resolve) => setTimeout(() => resolve("timed out"), 2000)),
    ]);
    assert.equal(observed, true);
  });
});

describe("serveRunners' fetch handler", () => {
  test("answers as the Node handler does, and cancelling its body aborts the runner", async () => {
    const echo = new EchoRunner();
    const handler = serveRunners({ Echo: echo });
    const describe = await handler.fetch(new Request("http://runner.local/any/mount/describe"));
    assert.equal(describe.status, 200);
    assert.equal(((await describe.json()) as { protocol_version: number }).protocol_version, 1);
    const served = await listen(handler);
    try {
      echo.mode = "stream";
      const body = turnBody([userMessage(1, "hi")], { first: 1, last: 1, after: 0 });
      const viaNode = await lines(await post(served.url, "run_model_step", body));
      const viaFetch = await lines(
        await handler.fetch(
          new Request("http://runner.local/dex/run_model_step", {
            method: "POST",
            body: JSON.stringify({ ...body, flow_id: "other" }),
          }),
        ),
      );
      assert.deepEqual(viaFetch, viaNode);
      assert.equal(viaFetch.length, 5);
    } finally {
      await served.close();
    }
    echo.mode = "hang";
    const response = await handler.fetch(
      new Request("http://runner.local/dex/run_model_step", {
        method: "POST",
        body: JSON.stringify(turnBody([userMessage(1, "x")], { first: 1, last: 1, after: 0 })),
      }),
    );
    const reader = response.body?.getReader();
    await reader?.read();
    await reader?.cancel();
    assert.equal(await echo.sawAbort, true);
  });

  test("the request's own signal aborting (a server that saw the client go) aborts the runner", async () => {
    const echo = new EchoRunner();
    echo.mode = "hang";
    const handler = serveRunners({ Echo: echo });
    const client = new AbortController();
    const response = await handler.fetch(
      new Request("http://runner.local/dex/run_model_step", {
        method: "POST",
        body: JSON.stringify(turnBody([userMessage(1, "x")], { first: 1, last: 1, after: 0 })),
        signal: client.signal,
      }),
    );
    const reader = response.body?.getReader();
    assert.equal(new TextDecoder().decode((await reader?.read())?.value), '{"accepted":true}\n');
    client.abort();
    assert.equal(await echo.sawAbort, true);
    // The body ends rather than hanging.
    assert.equal((await reader?.read())?.done, true);
  });
});

describe("serveRunners' history cache", () => {
  test("is bounded: the least recently used session is forgotten and asks again", async () => {
    const echo = new EchoRunner();
    const handler = serveRunners({ Echo: echo }, { historyCacheSessions: 2 });
    const run = async (flowId: string, after: number) => {
      const body = turnBody(
        after === 0 ? [userMessage(1, flowId)] : [],
        { first: 1, last: 1, after },
        {
          flow_id: flowId,
        },
      );
      const request = new Request("http://runner.local/dex/run_model_step", {
        method: "POST",
        body: JSON.stringify(body),
      });
      return (await lines(await handler.fetch(request)))[0];
    };
    for (const flowId of ["a", "b"]) assert.deepEqual(await run(flowId, 0), { accepted: true });
    assert.deepEqual(await run("a", 1), { accepted: true }); // a is now the most recent
    assert.deepEqual(await run("c", 0), { accepted: true }); // evicts b
    assert.deepEqual(await run("b", 1), { need_history: { after_sequence: 0 } });
    assert.deepEqual(await run("a", 1), { accepted: true });
    assert.deepEqual(echo.built, ["a", "b", "c"]);
  });
});
