/**
 * The traced runner of `test_traces.py` (`traced_flows.py` starts it beside a traced Worker):
 * the OpenTelemetry Node SDK exporting every span at once through the OTLP/protobuf exporter to
 * $OTEL_EXPORTER_OTLP_ENDPOINT, then a Stepwise agent, `Traced`, on the scripted model server,
 * with one tool, `lookup`, that starts a span of the app's own. `serveRunners` finds
 * `@opentelemetry/api` and runs each call in a `dex.runner <method>` span under the Worker's Step
 * span; the tool's span is that span's child.
 *
 *   node build/e2e/traced-app.js   # prints "runners at <url>" once it listens
 */
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { trace } from "@opentelemetry/api";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { NodeTracerProvider, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-node";
import { aiSdkModelClientApi, StepwiseRunner, serveRunners, tool } from "../src/index.js";
import { requiredEnv, serveForWorker } from "../src/testing.js";

// register(): the AsyncLocalStorage context manager and the W3C trace context propagator.
new NodeTracerProvider({
  spanProcessors: [new SimpleSpanProcessor(new OTLPTraceExporter())],
}).register();

const provider = createOpenAICompatible({
  name: "scripted",
  baseURL: requiredEnv("DEX_AGENTS_SCRIPTED_MODEL_URL"),
  apiKey: "test",
});

const lookup = tool<{ topic: string }>({
  name: "lookup",
  description: "Look a topic up.",
  parameters: {
    type: "object",
    properties: { topic: { type: "string" } },
    required: ["topic"],
    additionalProperties: false,
  },
  effect: "read",
  execute: ({ topic }, { execution }) => {
    const span = trace.getTracer("traced-app").startSpan("app.lookup", {
      attributes: { "dex.flow.id": execution.flowId, "app.topic": topic },
    });
    span.end();
    return `found ${topic}`;
  },
});

const handler = serveRunners({
  Traced: new StepwiseRunner({
    name: "Traced",
    instructions: "Look things up.",
    tools: [lookup],
    model: aiSdkModelClientApi(provider.chatModel("scripted-model")),
  }),
});
serveForWorker(handler);
