/**
 * Traces of runner calls, through the optional peer `@opentelemetry/api`.
 *
 * A traced Python Worker sends each call's Step attempt span as the W3C `traceparent` (and
 * `tracestate`) header. When `@opentelemetry/api` resolves, `serveRunners` runs every accepted
 * call inside a `dex.runner <method>` SERVER span, a child of the context those headers name
 * (extracted with the app's registered propagator), so whatever spans the runner and its
 * framework start (the AI SDK's `experimental_telemetry`, the app's own) are children of the
 * Worker's `chat` or `execute_tool` span, in its trace. The package is imported dynamically,
 * once: without it nothing of OpenTelemetry is loaded and calls run as they are. Only the types
 * come from it here, which the compiled JavaScript does not import.
 */

import type * as OtelApi from "@opentelemetry/api";

type Api = typeof OtelApi;

/** The trace context headers of a request, lower-case names as HTTP gives them. */
export interface TraceHeaders {
  traceparent?: string;
  tracestate?: string;
}

/** What a traced call is: its method, its headers, and the body's identifying fields. */
export interface TracedCall {
  method: string;
  headers: TraceHeaders;
  body: Record<string, unknown>;
}

/** The running call's span, as the call sees it: told of a failure the engine will see. */
export interface CallSpan {
  failed(error: unknown): void;
}

/** Runs runner calls inside their spans; null from `loadTracing` when tracing is off. */
export interface RunnerTracing {
  inCall<T>(call: TracedCall, run: (span: CallSpan) => Promise<T>): Promise<T>;
}

/** The name of this package's tracer. */
export const TRACER_NAME = "@superdurable/dex-agents";

let loading: Promise<RunnerTracing | null> | undefined;

/** Imports `@opentelemetry/api` once: the call tracing, or null when it does not resolve. */
export function loadTracing(): Promise<RunnerTracing | null> {
  loading ??= import("@opentelemetry/api").then(
    (api: Api) => new OtelRunnerTracing(api),
    () => null,
  );
  return loading;
}

// The body fields a span carries, as the Worker's spans name them (no GenAI attributes: the
// Worker's `chat` and `execute_tool` spans carry those).
const BODY_ATTRIBUTES: ReadonlyArray<[string, string]> = [
  ["flow_type", "dex.flow.type"],
  ["flow_id", "dex.flow.id"],
  ["flow_id", "session.id"],
  ["step_execution_id", "dex.step.execution_id"],
  ["attempt", "dex.step.attempt"],
  ["turn_id", "dex.agent.turn.id"],
];

class OtelRunnerTracing implements RunnerTracing {
  constructor(private readonly api: Api) {}

  async inCall<T>(call: TracedCall, run: (span: CallSpan) => Promise<T>): Promise<T> {
    const { api } = this;
    const parent = api.propagation.extract(api.ROOT_CONTEXT, call.headers);
    const span = api.trace
      .getTracer(TRACER_NAME)
      .startSpan(
        `dex.runner ${call.method}`,
        { kind: api.SpanKind.SERVER, attributes: attributesOf(call) },
        parent,
      );
    const failed = (error: unknown): void => {
      const type = error instanceof Error ? error.name || error.constructor.name : typeof error;
      span.setAttribute("error.type", type);
      if (error instanceof Error) span.recordException(error);
      const message = error instanceof Error ? error.message : String(error);
      span.setStatus({ code: api.SpanStatusCode.ERROR, message });
    };
    try {
      return await api.context.with(api.trace.setSpan(parent, span), () => run({ failed }));
    } catch (error) {
      failed(error);
      throw error;
    } finally {
      span.end();
    }
  }
}

function attributesOf(call: TracedCall): OtelApi.Attributes {
  const attributes: OtelApi.Attributes = { "dex.runner.method": call.method };
  for (const [field, name] of BODY_ATTRIBUTES) {
    const value = call.body[field];
    if (typeof value === "string" || typeof value === "number") attributes[name] = value;
  }
  const toolCall = call.body.tool_call;
  if (typeof toolCall === "object" && toolCall !== null) {
    const id = (toolCall as { tool_call_id?: unknown }).tool_call_id;
    if (typeof id === "string") attributes["dex.tool_call.id"] = id;
  }
  return attributes;
}
