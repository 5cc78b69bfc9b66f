/**
 * The agent of the run-state round trip, built the same way by the test and by the fresh Node
 * process that finishes its turn (round-trip-child.ts): two agents with a handoff, each with a
 * tool, on the scripted model server.
 */
import { Agent, type AgentInputItem, handoff, type Model, tool } from "@openai/agents";
import { z } from "zod";

export const USER: AgentInputItem = { role: "user", content: "Refund order A1 if it shipped." };

export function supportAgent(model: Model): Agent {
  const lookup = tool({
    name: "lookup",
    description: "Looks an order up.",
    parameters: z.object({ order: z.string() }),
    execute: async ({ order }) => ({ order, status: "shipped" }),
  });
  const refund = tool({
    name: "refund",
    description: "Refunds an order.",
    parameters: z.object({ order: z.string(), amount: z.number() }),
    execute: async ({ order, amount }) => `refunded ${amount} on ${order}`,
  });
  const billing = new Agent({ name: "Billing", instructions: "You refund orders.", model, tools: [lookup, refund] });
  return new Agent({
    name: "Support",
    instructions: "You help customers; hand refunds to Billing.",
    model,
    tools: [lookup],
    handoffs: [handoff(billing)],
  });
}

/** The scripted replies: a handoff, then two tool calls of Billing, then the answer. */
export const SCRIPT = [
  { tool_calls: [{ id: "h1", name: "transfer_to_Billing", arguments: {} }] },
  {
    tool_calls: [
      { id: "c1", name: "lookup", arguments: { order: "A1" } },
      { id: "c2", name: "refund", arguments: { order: "A1", amount: 5 } },
    ],
  },
  { text: "Refunded 5 on A1." },
];
