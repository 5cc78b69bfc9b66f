/**
 * The end-to-end app served to a Python Worker (`e2e/flows.py` starts it): Stepwise agents
 * whose tools are Pi `AgentTool`s (through `piTools`) and whose model is pi-ai's
 * OpenAI-compatible provider (through `piModelClient`) on the scripted model server, in the
 * flow types of the shared matrix (`Matrix`, `MatrixDeadline`, `MatrixClientRetries`: the
 * four matrix tools) and of the shared features suite (`Features`, `FeaturesCompaction`:
 * `get_weather`, the model and the instructions from the session settings; `FeaturesMcp`: the
 * core's McpToolSource over the Python core's stdio MCP server, as `feature_mcp_source()`
 * configures it). Each tool records
 * its runs to the JSON-lines tool log at $TOOL_LOG, as the Python apps do, and returns exactly
 * the text the suites expect.
 *
 *   node dist-test/e2e/matrix-app.js   # prints "runners at <url>" once it listens
 */
import { appendFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import type { AgentTool } from "@mariozechner/pi-agent-core";
import { type Model, type TSchema, Type } from "@mariozechner/pi-ai";
import { StepwiseRunner, serveRunners } from "@superdurable/dex-agents";
import { McpToolSource, stdioServer } from "@superdurable/dex-agents/mcp";
import { currentToolExecution, piModelClient, piTools } from "../src/index.js";

function env(name: string): string {
  const value = process.env[name];
  if (value === undefined || value === "") throw new Error(`$${name} is not set`);
  return value;
}

function record(toolName: string, fields: Record<string, unknown>): void {
  const line = JSON.stringify({ tool: toolName, pid: process.pid, ...fields });
  appendFileSync(env("TOOL_LOG"), `${line}\n`);
}

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
const getWeather = piTool(
  "get_weather",
  "The weather in a city.",
  Type.Object({ city: Type.String() }),
  async ({ city }) => {
    record("get_weather", { city, phase: "started" });
    await sleep(300);
    record("get_weather", { city, phase: "finished" });
    return `Sunny in ${String(city)}`;
  },
);

// A write's idempotency key: Pi's execute gets the call's ID, currentToolExecution() the rest.
const matrixTools = piTools([
  getWeather,
  piTool("send_email", "Send an email.", Type.Object({ to: Type.String(), body: Type.String() }), ({ to }, _s, id) => {
    record("send_email", { to, key: keyOf(id) });
    return `email sent to ${String(to)}`;
  }),
  piTool(
    "update_ticket",
    "Set a ticket's status.",
    Type.Object({ ticket_id: Type.String(), status: Type.String() }),
    ({ ticket_id, status }, _s, id) => {
      record("update_ticket", { ticket_id, key: keyOf(id) });
      return `ticket ${String(ticket_id)} is ${String(status)}`;
    },
  ),
  piTool(
    "charge_card",
    "Charge the customer's card.",
    Type.Object({ amount: Type.Integer(), seconds: Type.Number() }),
    async ({ amount, seconds }, signal, id) => {
      record("charge_card", { phase: "started", key: keyOf(id) });
      await sleep(Number(seconds) * 1000, undefined, { signal });
      record("charge_card", { phase: "finished" });
      return `charged ${String(amount)}`;
    },
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
    baseUrl: env("DEX_AGENTS_SCRIPTED_MODEL_URL"),
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
const server = createServer(handler);
server.listen(Number(process.env.PORT ?? 0), "127.0.0.1", () => {
  const { port } = server.address() as AddressInfo;
  process.stdout.write(`runners at http://127.0.0.1:${port}/dex\n`);
});
