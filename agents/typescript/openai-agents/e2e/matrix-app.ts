/**
 * The matrix app served to a Python Worker (`e2e/flows.py` starts it): one OpenAI Agents SDK
 * agent with the contract's four tools on the scripted model server (Chat Completions, through
 * the SDK's `OpenAIChatCompletionsModel` and a real OpenAI client that keeps its own retries),
 * in the matrix's three flow types. The tools are the core's `matrixTools` in the SDK's tool type:
 * each records its runs to the tool log at $TOOL_LOG and returns the text the matrix expects.
 *
 *   node dist-test/e2e/matrix-app.js   # prints "runners at <url>" once it listens
 */
import { Agent, OpenAIChatCompletionsModel, setTracingDisabled, tool } from "@openai/agents";
import { serveRunners } from "@superdurable/dex-agents";
import { matrixTools, requiredEnv, serveForWorker } from "@superdurable/dex-agents/testing";
import OpenAI from "openai";
import { z } from "zod";
import { OpenAIAgentsRunner } from "../src/index.js";

setTracingDisabled(true);

const { get_weather, send_email, update_ticket, charge_card } = matrixTools;
const tools = [
  tool({
    name: "get_weather",
    description: get_weather.description,
    parameters: z.object({ city: z.string() }),
    execute: (input) => get_weather.run(input),
  }),
  tool({
    name: "send_email",
    description: send_email.description,
    parameters: z.object({ to: z.string(), body: z.string() }),
    execute: (input) => send_email.run(input),
  }),
  tool({
    name: "update_ticket",
    description: update_ticket.description,
    parameters: z.object({ ticket_id: z.string(), status: z.string() }),
    execute: (input) => update_ticket.run(input),
  }),
  tool({
    name: "charge_card",
    description: charge_card.description,
    parameters: z.object({ amount: z.number().int(), seconds: z.number() }),
    execute: (input, _context, details) => charge_card.run(input, { signal: details?.signal }),
  }),
];

// The client keeps the OpenAI library's own retries (2 by default): the runner turns them off.
const client = new OpenAI({ baseURL: requiredEnv("DEX_AGENTS_SCRIPTED_MODEL_URL"), apiKey: "test" });
const agent = new Agent({
  name: "Assistant",
  instructions: "You help customers.",
  model: new OpenAIChatCompletionsModel(client, "gpt-test"),
  tools,
});

const handler = serveRunners({
  Matrix: new OpenAIAgentsRunner(agent),
  MatrixDeadline: new OpenAIAgentsRunner(agent),
  MatrixClientRetries: new OpenAIAgentsRunner(agent, { frameworkRetries: true }),
});
serveForWorker(handler);
