/** Runner calls' traces: with `@opentelemetry/api` and the SDK's NodeTracerProvider registered,
 *  each accepted call runs in a `dex.runner <method>` span under the context its `traceparent`
 *  names, and the runner's own spans are its children; and, in a Node process where the
 *  package cannot be resolved, serveRunners answers calls without loading any of it. */

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath, pathToFileURL } from "node:url";
import { SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import {
  InMemorySpanExporter,
  NodeTracerProvider,
  type ReadableSpan,
  SimpleSpanProcessor,
} from "@opentelemetry/sdk-trace-node";
import type {
  AgentTurnContext,
  AgentTurnOutcome,
  DeferredToolExecution,
  DeferredToolOutcome,
} from "../src/runner.js";
import { serveRunners } from "../src/serve.js";
import { type EchoItem, EchoRunner } from "./echo-runner.js";
import {
  lines,
  listen,
  post,
  type Served,
  toolCallRecord,
  turnBody,
  userMessage,
} from "./helpers.js";

const TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736";
const STEP_SPAN_ID = "00f067aa0ba902b7";
const TRACEPARENT = `00-${TRACE_ID}-${STEP_SPAN_ID}-01`;

/** The Echo runner, whose model call and tool call each start a span of the app's own. */
class SpanningRunner extends EchoRunner {
  override runModelStep(turn: AgentTurnContext<EchoItem>): Promise<AgentTurnOutcome> {
    return trace.getTracer("app").startActiveSpan("app.model_call", async (span) => {
      try {
        return await super.runModelStep(turn);
      } finally {
        span.end();
      }
    });
  }

  override executeDeferredToolCall(
    call: DeferredToolExecution<EchoItem>,
  ): Promise<DeferredToolOutcome> {
    trace.getTracer("app").startSpan("app.tool").end();
    return super.executeDeferredToolCall(call);
  }
}

function toolBody(args: unknown) {
  return {
    flow_type: "Echo",
    flow_id: "session-traced",
    turn_id: "t1",
    step_execution_id: "step-7",
    tool_call: toolCallRecord("refund", args),
    idempotency_key: "session-traced/t1/call-1",
    attempt: 2,
    heartbeat_checkpoint: null,
    input_answers: [],
    supports_tool_tasks: false,
    turn: null,
  };
}

function hexParent(span: ReadableSpan): string | undefined {
  return span.parentSpanContext?.spanId;
}

describe("serveRunners with @opentelemetry/api and a registered tracer provider", () => {
  const exporter = new InMemorySpanExporter();
  const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  provider.register();
  const runner = new SpanningRunner();
  let served: Served;
  let untraced: Served;
  before(async () => {
    served = await listen(serveRunners({ Echo: runner }));
    untraced = await listen(serveRunners({ Echo: runner }, { tracing: false }));
  });
  after(async () => {
    await served.close();
    await untraced.close();
    await provider.shutdown();
  });

  const finished = (name: string): ReadableSpan[] =>
    exporter.getFinishedSpans().filter((s) => s.name === name);

  test("a model call's span is the child of the Worker's Step span, the runner's of it", async () => {
    exporter.reset();
    const body = turnBody([userMessage(1, "Hi")], { first: 1, last: 1, after: 0 });
    const response = await post(served.url, "run_model_step", body, {
      headers: { traceparent: TRACEPARENT, tracestate: "vendor=1" },
    });
    assert.equal((await lines(response)).at(-1)?.result !== undefined, true);

    const [call] = finished("dex.runner run_model_step");
    const [model] = finished("app.model_call");
    assert.ok(
      call && model,
      exporter
        .getFinishedSpans()
        .map((s) => s.name)
        .join(", "),
    );
    assert.equal(call.spanContext().traceId, TRACE_ID);
    assert.equal(hexParent(call), STEP_SPAN_ID);
    assert.equal(call.parentSpanContext?.isRemote, true);
    assert.equal(call.spanContext().traceState?.get("vendor"), "1");
    assert.equal(call.kind, SpanKind.SERVER);
    assert.deepEqual(call.attributes, {
      "dex.runner.method": "run_model_step",
      "dex.flow.type": "Echo",
      "dex.flow.id": "session-1",
      "session.id": "session-1",
      "dex.step.execution_id": "step-1",
      "dex.step.attempt": 1,
      "dex.agent.turn.id": "t1",
    });
    assert.equal(call.status.code, SpanStatusCode.UNSET);
    assert.equal(model.spanContext().traceId, TRACE_ID);
    assert.equal(hexParent(model), call.spanContext().spanId);
  });

  test("a tool call's span names its tool call; a failure the model sees is an error", async () => {
    exporter.reset();
    const response = await post(
      served.url,
      "execute_deferred_tool_call",
      toolBody({ fail: "no refund" }),
      {
        headers: { traceparent: TRACEPARENT },
      },
    );
    const answer = await lines(response);
    assert.equal((answer.at(-1)?.error as { kind?: string })?.kind, "tool_execution_error");

    const [call] = finished("dex.runner execute_deferred_tool_call");
    const [tool] = finished("app.tool");
    assert.ok(call && tool);
    assert.equal(hexParent(call), STEP_SPAN_ID);
    assert.equal(call.attributes["dex.tool_call.id"], "call-1");
    assert.equal(call.attributes["dex.step.attempt"], 2);
    assert.equal(call.attributes["error.type"], "ToolExecutionError");
    assert.equal(call.status.code, SpanStatusCode.ERROR);
    assert.equal(hexParent(tool), call.spanContext().spanId);
  });

  test("without a traceparent a call starts a trace; need_history and tracing: false make no span", async () => {
    exporter.reset();
    const body = turnBody([userMessage(1, "Hi")], { first: 1, last: 1, after: 0 });
    await lines(await post(served.url, "run_model_step", { ...body, flow_id: "fresh" }));
    const [call] = finished("dex.runner run_model_step");
    assert.ok(call);
    assert.equal(call.parentSpanContext, undefined);

    exporter.reset();
    const lacking = turnBody([userMessage(2, "Again")], { first: 1, last: 2, after: 1 });
    const asked = await lines(
      await post(
        served.url,
        "run_model_step",
        { ...lacking, flow_id: "unknown-session" },
        {
          headers: { traceparent: TRACEPARENT },
        },
      ),
    );
    assert.deepEqual(asked, [{ need_history: { after_sequence: 0 } }]);
    const quiet = await lines(
      await post(untraced.url, "run_model_step", body, { headers: { traceparent: TRACEPARENT } }),
    );
    assert.ok(quiet.at(-1)?.result);
    // The untraced handler's runner still starts its own span, a root: no call span is its parent.
    assert.deepEqual(
      exporter.getFinishedSpans().map((s) => [s.name, hexParent(s)]),
      [["app.model_call", undefined]],
    );
  });
});

// A Node process in which `@opentelemetry/*` cannot be resolved ---------------------------------

const HOOKS = `
import { appendFileSync } from "node:fs";
export async function resolve(specifier, context, next) {
  if (specifier.startsWith("@opentelemetry/")) {
    appendFileSync(process.env.ATTEMPTS_FILE, specifier + "\\n");
    const error = new Error("Cannot find package '" + specifier + "'");
    error.code = "ERR_MODULE_NOT_FOUND";
    throw error;
  }
  return next(specifier, context);
}
export async function load(url, context, next) {
  if (url.includes("opentelemetry")) appendFileSync(process.env.ATTEMPTS_FILE, "loaded " + url + "\\n");
  return next(url, context);
}
`;

const REGISTER = (hooks: string) => `
import { register } from "node:module";
register(${JSON.stringify(hooks)});
`;

const CALL = (build: string) => `
import { serveRunners } from ${JSON.stringify(`${build}/src/serve.js`)};
import { EchoRunner } from ${JSON.stringify(`${build}/test/echo-runner.js`)};
import { turnBody, userMessage } from ${JSON.stringify(`${build}/test/helpers.js`)};
const handler = serveRunners({ Echo: new EchoRunner() });
const body = turnBody([userMessage(1, "Hi")], { first: 1, last: 1, after: 0 });
const response = await handler.fetch(new Request("http://runner/dex/run_model_step", {
  method: "POST",
  headers: { "content-type": "application/json", traceparent: ${JSON.stringify(TRACEPARENT)} },
  body: JSON.stringify(body),
}));
process.stdout.write(await response.text());
`;

test("without @opentelemetry/api serveRunners loads none of it and answers calls", () => {
  const build = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
  const dir = mkdtempSync(path.join(tmpdir(), "dex-no-otel-"));
  const write = (name: string, text: string): string => {
    writeFileSync(path.join(dir, name), text);
    return path.join(dir, name);
  };
  const hooks = pathToFileURL(write("hooks.mjs", HOOKS)).href;
  const register = write("register.mjs", REGISTER(hooks));
  const main = write("call.mjs", CALL(pathToFileURL(build).href));
  const attempts = write("attempts.txt", "");
  const done = spawnSync(process.execPath, ["--import", register, main], {
    env: { ...process.env, ATTEMPTS_FILE: attempts },
    encoding: "utf8",
    timeout: 60_000,
  });
  assert.equal(done.status, 0, done.stderr);
  const answer = done.stdout
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line) as object);
  assert.deepEqual(answer[0], { accepted: true });
  assert.ok("result" in (answer.at(-1) ?? {}), done.stdout);
  // serveRunners asked for the package once (dynamically) and, refused, loaded nothing of it.
  assert.deepEqual(readFileSync(attempts, "utf8").split("\n").filter(Boolean), [
    "@opentelemetry/api",
  ]);
});
