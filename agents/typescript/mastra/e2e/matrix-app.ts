/**
 * The matrix app served to a Python Worker (`e2e/flows.py` starts it): one Mastra Agent with the
 * contract's four tools on the scripted model server, in the matrix's three flow types. The
 * tools are the core's `matrixTools` as Mastra tools: each records its runs to the tool log at
 * $TOOL_LOG and returns the text the matrix expects.
 *
 *   node dist-test/e2e/matrix-app.js   # prints "runners at <url>" once it listens
 */
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { Agent } from "@mastra/core/agent";
import { createTool } from "@mastra/core/tools";
import { serveRunners } from "@superdurable/dex-agents";
import { matrixTools, requiredEnv, serveForWorker } from "@superdurable/dex-agents/testing";
import { z } from "zod";
import { MastraRunner } from "../src/index.js";

const { get_weather, send_email, update_ticket, charge_card } = matrixTools;
const tools = {
  get_weather: createTool({
    id: "get_weather",
    description: get_weather.description,
    inputSchema: z.object({ city: z.string() }),
    execute: (input) => get_weather.run(input),
  }),
  send_email: createTool({
    id: "send_email",
    description: send_email.description,
    inputSchema: z.object({ to: z.string(), body: z.string() }),
    execute: (input) => send_email.run(input),
  }),
  update_ticket: createTool({
    id: "update_ticket",
    description: update_ticket.description,
    inputSchema: z.object({ ticket_id: z.string(), status: z.string() }),
    execute: (input) => update_ticket.run(input),
  }),
  charge_card: createTool({
    id: "charge_card",
    description: charge_card.description,
    inputSchema: z.object({ amount: z.number().int(), seconds: z.number() }),
    execute: (input, context) => charge_card.run(input, { signal: context.abortSignal }),
  }),
};

const provider = createOpenAICompatible({
  name: "scripted",
  baseURL: requiredEnv("DEX_AGENTS_SCRIPTED_MODEL_URL"),
  apiKey: "test",
  // Usage of a streamed call comes only when asked for (`stream_options.include_usage`).
  includeUsage: true,
});

function agent(maxRetries?: number): Agent {
  return new Agent({
    id: "matrix",
    name: "Matrix",
    instructions: "You help customers.",
    model: provider.chatModel("gpt-test"),
    tools,
    ...(maxRetries === undefined ? {} : { maxRetries }),
  });
}

const handler = serveRunners({
  Matrix: new MastraRunner({ agent: agent() }),
  MatrixDeadline: new MastraRunner({ agent: agent() }),
  // Mastra's own retries (the Agent's maxRetries; 0 unless set), kept inside one attempt.
  MatrixClientRetries: new MastraRunner({ agent: agent(2), frameworkRetries: true }),
});
serveForWorker(handler);
