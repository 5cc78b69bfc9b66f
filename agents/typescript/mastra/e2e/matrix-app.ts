/**
 * The matrix app served to a Python Worker (`e2e/flows.py` starts it): one Mastra Agent with the
 * contract's four tools on the scripted model server, in the matrix's three flow types. Each
 * tool records its runs to the JSON-lines tool log at $TOOL_LOG, as the Python matrix apps do,
 * and returns exactly the text the matrix expects.
 *
 *   node dist-test/e2e/matrix-app.js   # prints "runners at <url>" once it listens
 */
import { appendFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { Agent } from "@mastra/core/agent";
import { createTool } from "@mastra/core/tools";
import { currentToolExecution, serveRunners } from "@superdurable/dex-agents";
import { z } from "zod";
import { MastraRunner } from "../src/index.js";

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

const tools = {
  get_weather: createTool({
    id: "get_weather",
    description: "The weather in a city.",
    inputSchema: z.object({ city: z.string() }),
    execute: async ({ city }) => {
      record("get_weather", { city, phase: "started" });
      await sleep(300);
      record("get_weather", { city, phase: "finished" });
      return `Sunny in ${city}`;
    },
  }),
  send_email: createTool({
    id: "send_email",
    description: "Send an email.",
    inputSchema: z.object({ to: z.string(), body: z.string() }),
    execute: async ({ to }) => {
      record("send_email", { to, key: key() });
      return `email sent to ${to}`;
    },
  }),
  update_ticket: createTool({
    id: "update_ticket",
    description: "Set a ticket's status.",
    inputSchema: z.object({ ticket_id: z.string(), status: z.string() }),
    execute: async ({ ticket_id, status }) => {
      record("update_ticket", { ticket_id, key: key() });
      return `ticket ${ticket_id} is ${status}`;
    },
  }),
  charge_card: createTool({
    id: "charge_card",
    description: "Charge the customer's card.",
    inputSchema: z.object({ amount: z.number().int(), seconds: z.number() }),
    execute: async ({ amount, seconds }, context) => {
      record("charge_card", { phase: "started", key: key() });
      await sleep(seconds * 1000, undefined, { signal: context.abortSignal });
      record("charge_card", { phase: "finished" });
      return `charged ${amount}`;
    },
  }),
};

const provider = createOpenAICompatible({
  name: "scripted",
  baseURL: env("DEX_AGENTS_SCRIPTED_MODEL_URL"),
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
const server = createServer(handler);
server.listen(Number(process.env.PORT ?? 0), "127.0.0.1", () => {
  const { port } = server.address() as AddressInfo;
  process.stdout.write(`runners at http://127.0.0.1:${port}/dex\n`);
});
