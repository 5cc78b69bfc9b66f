import http from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { tool } from "@anthropic-ai/claude-agent-sdk";
import { serveRunners } from "@superdurable/dex-agents";
import { z } from "zod";
import { ClaudeAgentRunner } from "../src/index.js";

const orders: Record<string, string> = { "o-42": "paid" };

const getOrder = tool(
  "get_order",
  "Look up an order.",
  { order_id: z.string() },
  async ({ order_id }) => ({
    content: [{ type: "text", text: `order ${order_id}: ${orders[order_id] ?? "unknown"}` }],
  }),
  { annotations: { readOnlyHint: true } }, // a read: it runs inside the CLI run
);

const refund = tool("refund", "Refund an order.", { order_id: z.string() }, async ({ order_id }) => {
  orders[order_id] = "refunded";
  return { content: [{ type: "text", text: `refunded ${order_id}` }] };
}); // no annotation: unclassified, a single-attempt tool Step after approval

const runner = new ClaudeAgentRunner({
  options: {
    model: "claude-sonnet-4-5",
    systemPrompt: "You help customers.",
    cwd: tmpdir(),
    tools: [], // no built-in CLI tools (Bash, Write, Edit, ...)
    allowedTools: ["mcp__orders__get_order", "mcp__orders__refund"],
    maxTurns: 5,
    // The CLI reads its endpoint and credentials from here (or from process.env).
    env: { ANTHROPIC_BASE_URL: process.env.ANTHROPIC_BASE_URL ?? "", ANTHROPIC_AUTH_TOKEN: "scripted" },
  },
  toolServers: { orders: { tools: [getOrder, refund] } },
});

const server = http.createServer(serveRunners({ SupportAgent: runner }));
server.listen(Number(process.env.PORT ?? 3000), "127.0.0.1", () => {
  const { port } = server.address() as AddressInfo;
  console.log(`runners at http://127.0.0.1:${port}/dex`);
});
