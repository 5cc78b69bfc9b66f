/**
 * The matrix app served to a Python Worker (`e2e/flows.py` starts it): one Claude Agent SDK
 * runner with the contract's four tools as in-process SDK MCP tools (server key `matrix`: the
 * model sees `mcp__matrix__<tool>`), the real Claude Code CLI talking to the scripted Anthropic
 * server at $DEX_AGENTS_SCRIPTED_MODEL_URL, in the matrix's three flow types. The tools are the
 * core's `matrixTools`: each records its runs to the tool log at $TOOL_LOG and returns the text
 * the matrix expects. It serves the features suite's `Features` and `FeaturesMcp` flow types too
 * (e2e/test_features.py): `FeaturesMcp` adds the core's McpToolSource over the Python core's
 * stdio MCP server, as `feature_mcp_source()` (source key `orders`: the model sees
 * `mcp__orders__orders__<tool>`).
 *
 *   node dist-test/e2e/matrix-app.js   # prints "runners at <url>" once it listens
 */
import { devNull, tmpdir } from "node:os";
import { join } from "node:path";
import { type Options, tool } from "@anthropic-ai/claude-agent-sdk";
import { currentToolExecution, serveRunners } from "@superdurable/dex-agents";
import { McpToolSource, stdioServer } from "@superdurable/dex-agents/mcp";
import { matrixTools, requiredEnv, serveForWorker } from "@superdurable/dex-agents/testing";
import { z } from "zod";
import { ClaudeAgentRunner } from "../src/index.js";

/** The tool Step's idempotency key (null for a read, which runs inside the CLI run). */
const key = (): string | null => currentToolExecution()?.idempotencyKey ?? null;

const text = (value: string) => ({ content: [{ type: "text" as const, text: value }] });

const { get_weather, send_email, update_ticket, charge_card } = matrixTools;
const tools = [
  tool(
    "get_weather",
    get_weather.description,
    { city: z.string() },
    async (input) => text(await get_weather.run(input)),
    { annotations: { readOnlyHint: true } },
  ),
  tool("send_email", send_email.description, { to: z.string(), body: z.string() }, async (input) =>
    text(await send_email.run(input, { idempotencyKey: key() })),
  ),
  tool(
    "update_ticket",
    update_ticket.description,
    { ticket_id: z.string(), status: z.string() },
    async (input) => text(await update_ticket.run(input, { idempotencyKey: key() })),
    { annotations: { idempotentHint: true } },
  ),
  tool("charge_card", charge_card.description, { amount: z.number().int(), seconds: z.number() }, async (input) =>
    text(await charge_card.run(input, { idempotencyKey: key() })),
  ),
];

const options: Options = {
  model: "claude-sonnet-4-5",
  systemPrompt: "You help customers.",
  cwd: tmpdir(),
  tools: [],
  allowedTools: tools.map((t) => `mcp__matrix__${t.name}`),
  maxTurns: 10,
  env: { ANTHROPIC_BASE_URL: requiredEnv("DEX_AGENTS_SCRIPTED_MODEL_URL"), ANTHROPIC_AUTH_TOKEN: "scripted" },
};

function runner(frameworkRetries: boolean): ClaudeAgentRunner {
  return new ClaudeAgentRunner({ options, toolServers: { matrix: { tools } }, frameworkRetries });
}

/** The features suite's app (`dex_agents.testing.features`): the model and the system prompt
 *  from the session settings, else the suite's defaults. */
function featuresRunner(): ClaudeAgentRunner {
  return new ClaudeAgentRunner({
    options: { ...options, model: FEATURES_MODEL, systemPrompt: FEATURES_INSTRUCTIONS },
    toolServers: { matrix: { tools } },
    optionsFor: (given, settings) => ({
      ...given,
      model: String(settings.model ?? FEATURES_MODEL),
      systemPrompt: String(settings.instructions ?? FEATURES_INSTRUCTIONS),
    }),
  });
}

/** `FeaturesMcp`: the features app with the tools of the features suite's MCP server (the
 *  Python core's, over stdio, from the core's environment), which records each run with the
 *  idempotency key it finds in `_meta`; the refund needs approval (`feature_mcp_source()`). */
function featuresMcp(): ClaudeAgentRunner {
  const venv = process.env.VIRTUAL_ENV ?? join(import.meta.dirname, "../../../../python/core/.venv");
  const orders = stdioServer({
    name: "orders",
    command: join(venv, "bin", "python"),
    args: ["-m", "dex_agents.testing.mcp_server"],
    env: { TOOL_LOG: process.env.TOOL_LOG ?? devNull },
  });
  const refund = { effect: "non_idempotent_write", requiresApproval: true } as const;
  const source = new McpToolSource([orders], { policies: { orders__refund_order: refund } });
  const sourceTools = ["orders__lookup_order", "orders__refund_order"].map((name) => `mcp__orders__${name}`);
  return new ClaudeAgentRunner({
    options: {
      ...options,
      model: FEATURES_MODEL,
      systemPrompt: FEATURES_INSTRUCTIONS,
      allowedTools: [...(options.allowedTools ?? []), ...sourceTools],
    },
    toolServers: { matrix: { tools } },
    toolSources: { orders: source },
  });
}

/** `dex_agents.testing.features.DEFAULT_MODEL` and `FEATURE_INSTRUCTIONS`. */
const FEATURES_MODEL = "scripted-model";
const FEATURES_INSTRUCTIONS = "You are a helpful assistant. Use the tools when they help.";

const handler = serveRunners({
  Matrix: runner(false),
  MatrixDeadline: runner(false),
  MatrixClientRetries: runner(true),
  Features: featuresRunner(),
  FeaturesMcp: featuresMcp(),
});
serveForWorker(handler);
