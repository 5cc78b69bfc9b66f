/**
 * The end-to-end app served to a Python Worker (`e2e/flows.py` starts it): Stepwise agents
 * whose tools are Pi `AgentTool`s (through `piTools`) and whose model is pi-ai's
 * OpenAI-compatible provider (through `piModelClient`) on the scripted model server, in the
 * flow types of the shared matrix (`Matrix`, `MatrixDeadline`, `MatrixClientRetries`: the
 * four matrix tools) and of the shared features suite (`Features`, `FeaturesCompaction`:
 * `get_weather`, the model and the instructions from the session settings; `FeaturesMcp`: the
 * core's McpToolSource over the Python core's stdio MCP server, as `feature_mcp_source()`
 * configures it). The matrix tools are the core's `matrixTools` as Pi tools: each records its
 * runs to the tool log at $TOOL_LOG and returns the text the suites expect.
 *
 *   node dist-test/e2e/matrix-app.js   # prints "runners at <url>" once it listens
 */
import { join } from "node:path";
import type { AgentTool } from "@mariozechner/pi-agent-core";
import { type Model, type TSchema, Type } from "@mariozechner/pi-ai";
import { StepwiseRunner, serveRunners } from "@superdurable/dex-agents";
import { McpToolSource, stdioServer } from "@superdurable/dex-agents/mcp";
import { matrixTools as matrixToolRuns, requiredEnv, serveForWorker } from "@superdurable/dex-agents/testing";
import { currentToolExecution, piModelClient, piTools } from "../src/index.js";

/** A Pi tool answering `text`, with no details. */
function piTool<T extends TSchema>(
  name: string,
  description: string,
  parameters: T,
  run: (params: Record<string, unknown>, signal: AbortSignal | undefined, id: string) => Promise<string> | string,
): AgentTool<T> {
  return {
    name,
    label: name,
    description,
    parameters,
    execute: async (id, params, signal) => ({
      content: [{ type: "text", text: await run(params as Record<string, unknown>, signal, id) }],
      details: undefined,
    }),
  };
}

// The effects come from the session's tool policies (MATRIX_TOOL_POLICIES), as in every app.
const { get_weather, send_email, update_ticket, charge_card } = matrixToolRuns;
const getWeather = piTool("get_weather", get_weather.description, Type.Object({ city: Type.String() }), (params) =>
  get_weather.run(params as { city: string }),
);

// A write's idempotency key: Pi's execute gets the call's ID, currentToolExecution() the rest.
const matrixTools = piTools([
  getWeather,
  piTool(
    "send_email",
    send_email.description,
    Type.Object({ to: Type.String(), body: Type.String() }),
    (params, _s, id) => send_email.run(params as { to: string; body: string }, { idempotencyKey: keyOf(id) }),
  ),
  piTool(
    "update_ticket",
    update_ticket.description,
    Type.Object({ ticket_id: Type.String(), status: Type.String() }),
    (params, _s, id) =>
      update_ticket.run(params as { ticket_id: string; status: string }, { idempotencyKey: keyOf(id) }),
  ),
  piTool(
    "charge_card",
    charge_card.description,
    Type.Object({ amount: Type.Integer(), seconds: Type.Number() }),
    (params, signal, id) =>
      charge_card.run(params as { amount: number; seconds: number }, { idempotencyKey: keyOf(id), signal }),
  ),
]);

function keyOf(id: string): string {
  const execution = currentToolExecution();
  if (execution === null || execution.toolCall.toolCallId !== id) throw new Error(`no tool Step runs call ${id}`);
  return execution.idempotencyKey;
}

/** The scripted model server as a pi-ai OpenAI-compatible model. */
function scriptedModel(id: string): Model<"openai-completions"> {
  return {
    id,
    name: id,
    api: "openai-completions",
    provider: "scripted",
    baseUrl: requiredEnv("DEX_AGENTS_SCRIPTED_MODEL_URL"),
    reasoning: false,
    input: ["text"],
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
    contextWindow: 128_000,
    maxTokens: 4_096,
    compat: { supportsStore: false, supportsDeveloperRole: false, supportsReasoningEffort: false },
  };
}

const apiKey = { apiKey: "test" };

function matrix(maxRetries?: number): StepwiseRunner {
  return new StepwiseRunner({
    name: "Matrix",
    instructions: "You help customers.",
    tools: matrixTools,
    model: piModelClient(scriptedModel("gpt-test"), {
      options: apiKey,
      ...(maxRetries === undefined ? {} : { maxRetries }),
    }),
  });
}

// dex_agents.testing.features: DEFAULT_MODEL and FEATURE_INSTRUCTIONS.
const DEFAULT_MODEL = "scripted-model";
const FEATURE_INSTRUCTIONS = "You are a helpful assistant. Use the tools when they help.";

function features(): StepwiseRunner {
  return new StepwiseRunner({
    name: "Features",
    instructions: ({ sessionSettings }) => String(sessionSettings.instructions ?? FEATURE_INSTRUCTIONS),
    tools: piTools([getWeather]),
    resolveModel: (settings) =>
      piModelClient(scriptedModel(String(settings.model ?? DEFAULT_MODEL)), { options: apiKey }),
  });
}

/** `FeaturesMcp`: `get_weather` and the tools of the features suite's MCP server (the Python
 *  core's, over stdio, from the core's environment), which records each run with the
 *  idempotency key it finds in `_meta`; the refund needs approval (`feature_mcp_source()`). */
function featuresMcp(): StepwiseRunner {
  const venv = process.env.VIRTUAL_ENV ?? join(import.meta.dirname, "../../../../python/core/.venv");
  const orders = stdioServer({
    name: "orders",
    command: join(venv, "bin", "python"),
    args: ["-m", "dex_agents.testing.mcp_server"],
    env: { TOOL_LOG: String(process.env.TOOL_LOG) },
  });
  const refund = { effect: "non_idempotent_write", requiresApproval: true } as const;
  const source = new McpToolSource([orders], { policies: { orders__refund_order: refund } });
  return new StepwiseRunner({
    name: "FeaturesMcp",
    instructions: FEATURE_INSTRUCTIONS,
    tools: [...piTools([getWeather]), source],
    model: piModelClient(scriptedModel(DEFAULT_MODEL), { options: apiKey }),
  });
}

const handler = serveRunners({
  Matrix: matrix(),
  MatrixDeadline: matrix(),
  // The OpenAI SDK's own retries kept (its default, 2), as `framework_retries=True`.
  MatrixClientRetries: matrix(2),
  Features: features(),
  FeaturesCompaction: features(),
  FeaturesMcp: featuresMcp(),
});
serveForWorker(handler);
