/**
 * The matrix app served to a Python Worker (`e2e/flows.py` starts it): one AI SDK agent with
 * the contract's four tools on the scripted model server, in the matrix's three flow types.
 * The tools are the core's `matrixTools` as AI SDK tools: each records its runs to the tool log
 * at $TOOL_LOG and returns the text the matrix expects.
 *
 *   node dist-test/e2e/matrix-app.js   # prints "runners at <url>" once it listens
 */
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { serveRunners } from "@superdurable/dex-agents";
import { matrixTools, requiredEnv, serveForWorker } from "@superdurable/dex-agents/testing";
import { tool } from "ai";
import { z } from "zod";
import { VercelAiRunner } from "../src/index.js";

const { get_weather, send_email, update_ticket, charge_card } = matrixTools;
const tools = {
  get_weather: tool({
    description: get_weather.description,
    inputSchema: z.object({ city: z.string() }),
    execute: (input) => get_weather.run(input),
  }),
  send_email: tool({
    description: send_email.description,
    inputSchema: z.object({ to: z.string(), body: z.string() }),
    execute: (input) => send_email.run(input),
  }),
  update_ticket: tool({
    description: update_ticket.description,
    inputSchema: z.object({ ticket_id: z.string(), status: z.string() }),
    execute: (input) => update_ticket.run(input),
  }),
  charge_card: tool({
    description: charge_card.description,
    inputSchema: z.object({ amount: z.number().int(), seconds: z.number() }),
    execute: (input, { abortSignal }) => charge_card.run(input, { signal: abortSignal }),
  }),
};

const provider = createOpenAICompatible({
  name: "scripted",
  baseURL: requiredEnv("DEX_AGENTS_SCRIPTED_MODEL_URL"),
  apiKey: "test",
  // Usage of a streamed call comes only when asked for (`stream_options.include_usage`).
  includeUsage: true,
});

function runner(frameworkRetries: boolean): VercelAiRunner {
  return new VercelAiRunner({
    model: provider.chatModel("gpt-test"),
    instructions: "You help customers.",
    tools,
    frameworkRetries,
  });
}

const handler = serveRunners({
  Matrix: runner(false),
  MatrixDeadline: runner(false),
  MatrixClientRetries: runner(true),
});
serveForWorker(handler);
