/**
 * The end-to-end app served to a Python Worker (`e2e/flows.py` starts it): Stepwise agents on
 * the scripted model server, through the AI SDK's OpenAI-compatible provider, in the flow
 * types of the shared matrix (`Matrix`, `MatrixDeadline`, `MatrixClientRetries`: the four
 * matrix tools) and of the shared features suite (`Features`, `FeaturesCompaction`:
 * `get_weather`, the model and the instructions from the session settings; `FeaturesMcp`: the
 * tool source over the Python core's stdio MCP server `dex_agents.testing.mcp_server`, as
 * `feature_mcp_source()` configures it), and `Continuing` (turn continuations, no tools). The
 * matrix tools are the core's `matrixTools` (`testing.ts`) as Stepwise tools: each records its
 * runs to the tool log at $TOOL_LOG and returns the text the suites expect.
 *
 *   node build/e2e/matrix-app.js   # prints "runners at <url>" once it listens
 */
import { join } from "node:path";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import {
  aiSdkModelClientApi,
  continueTurn,
  StepwiseRunner,
  serveRunners,
  type Tool,
  tool,
} from "../src/index.js";
import { McpToolSource, stdioServer } from "../src/mcp.js";
import { matrixTools as matrixToolRuns, requiredEnv, serveForWorker } from "../src/testing.js";

function object(properties: Record<string, string>): Record<string, unknown> {
  const schema = Object.fromEntries(Object.entries(properties).map(([k, type]) => [k, { type }]));
  return {
    type: "object",
    properties: schema,
    required: Object.keys(properties),
    additionalProperties: false,
  };
}

// The effects come from the session's tool policies (MATRIX_TOOL_POLICIES), as in every app.
const { get_weather, send_email, update_ticket, charge_card } = matrixToolRuns;
const getWeather = tool<{ city: string }>({
  name: "get_weather",
  description: get_weather.description,
  parameters: object({ city: "string" }),
  execute: (input) => get_weather.run(input),
});
const matrixTools: Tool[] = [
  getWeather,
  tool<{ to: string; body: string }>({
    name: "send_email",
    description: send_email.description,
    parameters: object({ to: "string", body: "string" }),
    execute: (input, { idempotencyKey }) => send_email.run(input, { idempotencyKey }),
  }),
  tool<{ ticket_id: string; status: string }>({
    name: "update_ticket",
    description: update_ticket.description,
    parameters: object({ ticket_id: "string", status: "string" }),
    execute: (input, { idempotencyKey }) => update_ticket.run(input, { idempotencyKey }),
  }),
  tool<{ amount: number; seconds: number }>({
    name: "charge_card",
    description: charge_card.description,
    parameters: object({ amount: "integer", seconds: "number" }),
    execute: (input, { idempotencyKey, cancellationSignal }) =>
      charge_card.run(input, { idempotencyKey, signal: cancellationSignal }),
  }),
];

const provider = createOpenAICompatible({
  name: "scripted",
  baseURL: requiredEnv("DEX_AGENTS_SCRIPTED_MODEL_URL"),
  apiKey: "test",
  // Usage of a streamed call comes only when asked for (`stream_options.include_usage`).
  includeUsage: true,
});

function matrix(maxRetries?: number): StepwiseRunner {
  const options = maxRetries === undefined ? {} : { maxRetries };
  return new StepwiseRunner({
    name: "Matrix",
    instructions: "You help customers.",
    tools: matrixTools,
    model: aiSdkModelClientApi(provider.chatModel("gpt-test"), options),
  });
}

// dex_agents.testing.features: DEFAULT_MODEL and FEATURE_INSTRUCTIONS.
const DEFAULT_MODEL = "scripted-model";
const FEATURE_INSTRUCTIONS = "You are a helpful assistant. Use the tools when they help.";

function features(): StepwiseRunner {
  return new StepwiseRunner({
    name: "Features",
    instructions: ({ sessionSettings }) =>
      String(sessionSettings.instructions ?? FEATURE_INSTRUCTIONS),
    tools: [getWeather],
    resolveModel: (settings) =>
      aiSdkModelClientApi(provider.chatModel(String(settings.model ?? DEFAULT_MODEL))),
  });
}

/** `FeaturesMcp`: `get_weather` and the tools of the features suite's MCP server (the Python
 *  core's, over stdio, from the core's environment), which records each run with the
 *  idempotency key it finds in `_meta`; the refund needs approval (`feature_mcp_source()`). */
function featuresMcp(): StepwiseRunner {
  const venv =
    process.env.VIRTUAL_ENV ?? join(import.meta.dirname, "../../../../python/core/.venv");
  const orders = stdioServer({
    name: "orders",
    command: join(venv, "bin", "python"),
    args: ["-m", "dex_agents.testing.mcp_server"],
    env: { TOOL_LOG: requiredEnv("TOOL_LOG") },
  });
  const refund = { effect: "non_idempotent_write", requiresApproval: true } as const;
  const source = new McpToolSource([orders], { policies: { orders__refund_order: refund } });
  return new StepwiseRunner({
    name: "FeaturesMcp",
    instructions: FEATURE_INSTRUCTIONS,
    tools: [getWeather, source],
    model: aiSdkModelClientApi(provider.chatModel(DEFAULT_MODEL)),
  });
}

/** `Continuing`: an answer that starts with "Again" continues the turn. */
function continuing(): StepwiseRunner {
  return new StepwiseRunner({
    name: "Continuing",
    instructions: "Check your work.",
    model: aiSdkModelClientApi(provider.chatModel(DEFAULT_MODEL)),
    decideTurnContinuation: ({ after, answer }) =>
      after === "answer" && answer?.startsWith("Again") ? continueTurn("Check it again.") : null,
  });
}

const handler = serveRunners({
  Matrix: matrix(),
  MatrixDeadline: matrix(),
  // The SDK's own retries kept (its default, 2), as `framework_retries=True`.
  MatrixClientRetries: matrix(2),
  Features: features(),
  FeaturesCompaction: features(),
  FeaturesMcp: featuresMcp(),
  Continuing: continuing(),
});
serveForWorker(handler);
