/**
 * The end-to-end app served to a Python Worker (`e2e/flows.py` starts it): Stepwise agents on
 * the scripted model server, through the AI SDK's OpenAI-compatible provider, in the flow
 * types of the shared matrix (`Matrix`, `MatrixDeadline`, `MatrixClientRetries`: the four
 * matrix tools) and of the shared features suite (`Features`, `FeaturesCompaction`:
 * `get_weather`, the model and the instructions from the session settings; `FeaturesMcp`: the
 * tool source over the Python core's stdio MCP server `dex_agents.testing.mcp_server`, as
 * `feature_mcp_source()` configures it), and `Continuing` (turn continuations, no tools). Each tool records
 * its runs to the JSON-lines tool log at $TOOL_LOG, as the Python apps do, and returns exactly
 * the text the suites expect.
 *
 *   node build/e2e/matrix-app.js   # prints "runners at <url>" once it listens
 */
import { appendFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
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

function env(name: string): string {
  const value = process.env[name];
  if (value === undefined || value === "") throw new Error(`$${name} is not set`);
  return value;
}

function record(toolName: string, fields: Record<string, unknown>): void {
  const line = JSON.stringify({ tool: toolName, pid: process.pid, ...fields });
  appendFileSync(env("TOOL_LOG"), `${line}\n`);
}

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
const getWeather = tool<{ city: string }>({
  name: "get_weather",
  description: "The weather in a city.",
  parameters: object({ city: "string" }),
  execute: async ({ city }) => {
    record("get_weather", { city, phase: "started" });
    await sleep(300);
    record("get_weather", { city, phase: "finished" });
    return `Sunny in ${city}`;
  },
});
const matrixTools: Tool[] = [
  getWeather,
  tool<{ to: string; body: string }>({
    name: "send_email",
    description: "Send an email.",
    parameters: object({ to: "string", body: "string" }),
    execute: ({ to }, { idempotencyKey }) => {
      record("send_email", { to, key: idempotencyKey });
      return `email sent to ${to}`;
    },
  }),
  tool<{ ticket_id: string; status: string }>({
    name: "update_ticket",
    description: "Set a ticket's status.",
    parameters: object({ ticket_id: "string", status: "string" }),
    execute: ({ ticket_id, status }, { idempotencyKey }) => {
      record("update_ticket", { ticket_id, key: idempotencyKey });
      return `ticket ${ticket_id} is ${status}`;
    },
  }),
  tool<{ amount: number; seconds: number }>({
    name: "charge_card",
    description: "Charge the customer's card.",
    parameters: object({ amount: "integer", seconds: "number" }),
    execute: async ({ amount, seconds }, { idempotencyKey, cancellationSignal }) => {
      record("charge_card", { phase: "started", key: idempotencyKey });
      await sleep(seconds * 1000, undefined, { signal: cancellationSignal });
      record("charge_card", { phase: "finished" });
      return `charged ${amount}`;
    },
  }),
];

const provider = createOpenAICompatible({
  name: "scripted",
  baseURL: env("DEX_AGENTS_SCRIPTED_MODEL_URL"),
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
    env: { TOOL_LOG: env("TOOL_LOG") },
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
const server = createServer(handler);
server.listen(Number(process.env.PORT ?? 0), "127.0.0.1", () => {
  const { port } = server.address() as AddressInfo;
  process.stdout.write(`runners at http://127.0.0.1:${port}/dex\n`);
});
