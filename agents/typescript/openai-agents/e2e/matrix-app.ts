/**
 * The matrix app served to a Python Worker (`e2e/flows.py` starts it): one OpenAI Agents SDK
 * agent with the contract's four tools on the scripted model server (Chat Completions, through
 * the SDK's `OpenAIChatCompletionsModel` and a real OpenAI client that keeps its own retries),
 * in the matrix's three flow types. Each tool records its runs to the JSON-lines tool log at
 * $TOOL_LOG, as the Python matrix apps do, and returns exactly the text the matrix expects.
 *
 *   node dist-test/e2e/matrix-app.js   # prints "runners at <url>" once it listens
 */
import { appendFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { Agent, OpenAIChatCompletionsModel, setTracingDisabled, tool } from "@openai/agents";
import { currentToolExecution, serveRunners } from "@superdurable/dex-agents";
import OpenAI from "openai";
import { z } from "zod";
import { OpenAIAgentsRunner } from "../src/index.js";

setTracingDisabled(true);

function env(name: string): string {
  const value = process.env[name];
  if (value === undefined || value === "") {
    throw new Error(`$${name} is not set`);
  }
  return value;
}

function record(toolName: string, fields: Record<string, unknown>): void {
  appendFileSync(env("TOOL_LOG"), `${JSON.stringify({ tool: toolName, pid: process.pid, ...fields })}\n`);
}

function key(): string {
  const execution = currentToolExecution();
  if (execution === undefined) {
    throw new Error("a tool ran outside a tool Step");
  }
  return execution.idempotencyKey;
}

const tools = [
  tool({
    name: "get_weather",
    description: "The weather in a city.",
    parameters: z.object({ city: z.string() }),
    execute: async ({ city }) => {
      record("get_weather", { city, phase: "started" });
      await sleep(300);
      record("get_weather", { city, phase: "finished" });
      return `Sunny in ${city}`;
    },
  }),
  tool({
    name: "send_email",
    description: "Send an email.",
    parameters: z.object({ to: z.string(), body: z.string() }),
    execute: async ({ to }) => {
      record("send_email", { to, key: key() });
      return `email sent to ${to}`;
    },
  }),
  tool({
    name: "update_ticket",
    description: "Set a ticket's status.",
    parameters: z.object({ ticket_id: z.string(), status: z.string() }),
    execute: async ({ ticket_id, status }) => {
      record("update_ticket", { ticket_id, key: key() });
      return `ticket ${ticket_id} is ${status}`;
    },
  }),
  tool({
    name: "charge_card",
    description: "Charge the customer's card.",
    parameters: z.object({ amount: z.number().int(), seconds: z.number() }),
    execute: async ({ amount, seconds }, _context, details) => {
      record("charge_card", { phase: "started", key: key() });
      await sleep(seconds * 1000, undefined, details?.signal === undefined ? {} : { signal: details.signal });
      record("charge_card", { phase: "finished" });
      return `charged ${amount}`;
    },
  }),
];

// The client keeps the OpenAI library's own retries (2 by default): the runner turns them off.
const client = new OpenAI({ baseURL: env("DEX_AGENTS_SCRIPTED_MODEL_URL"), apiKey: "test" });
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
const server = createServer(handler);
server.listen(Number(process.env.PORT ?? 0), "127.0.0.1", () => {
  const { port } = server.address() as AddressInfo;
  process.stdout.write(`runners at http://127.0.0.1:${port}/dex\n`);
});
