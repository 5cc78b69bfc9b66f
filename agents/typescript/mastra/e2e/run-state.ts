/**
 * The run-state round trip's Node side (test_run_state.py drives it): one runner call per
 * process, its input as JSON on stdin and its outcome as JSON on stdout, so a turn paused at
 * its tool calls resumes in a fresh process from the serialized run state alone. `whole` runs
 * the same turn without a pause: model step, tool Steps, model step, in one process.
 *
 *   node dist-test/e2e/run-state.js model|tool|whole < input.json
 */
import { text } from "node:stream/consumers";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { Agent } from "@mastra/core/agent";
import { createTool } from "@mastra/core/tools";
import type { AgentToolCall } from "@superdurable/dex-agents";
import { z } from "zod";
import { MastraRunner } from "../src/index.js";
import { MemoryEvents, record, toolExecution, turnContext } from "../test/support.js";

const QUESTION = "Weather in Paris and Rome?";

const provider = createOpenAICompatible({
  name: "scripted",
  baseURL: process.env.DEX_AGENTS_SCRIPTED_MODEL_URL ?? "",
  apiKey: "test",
  includeUsage: true,
});
const runner = new MastraRunner({
  agent: new Agent({
    id: "weather",
    name: "Weather",
    instructions: "You report the weather.",
    model: provider.chatModel("gpt-test"),
    tools: {
      get_weather: createTool({
        id: "get_weather",
        description: "The weather in a city.",
        inputSchema: z.object({ city: z.string() }),
        execute: async ({ city }) => ({ city, sky: "sunny" }),
      }),
    },
  }),
});

interface Input {
  runState?: string | null;
  records?: AgentToolCall[];
  record?: AgentToolCall;
}

async function modelStep(input: Input): Promise<unknown> {
  const turn = turnContext(new MemoryEvents(), QUESTION, {
    frameworkRunState: input.runState ?? null,
    toolCalls: input.records ?? [],
  });
  return await runner.runModelStep(turn);
}

async function toolStep(call: AgentToolCall): Promise<AgentToolCall> {
  const outcome = await runner.executeDeferredToolCall(toolExecution(call));
  const output = outcome.kind === "tool_execution_result" ? outcome.output : null;
  return { ...call, status: "succeeded", output };
}

async function whole(): Promise<unknown> {
  const first = await runner.runModelStep(turnContext(new MemoryEvents(), QUESTION));
  if (first.kind !== "tool_calls_requested") {
    throw new Error(`expected tool calls, got ${first.kind}`);
  }
  const records: AgentToolCall[] = [];
  for (const call of first.toolCalls) {
    records.push(await toolStep(record(call.toolCallId, call.toolName, call.arguments, { status: "approved" })));
  }
  return await modelStep({ runState: first.frameworkRunState, records });
}

const mode = process.argv[2];
const input = JSON.parse((await text(process.stdin)) || "{}") as Input;
const outcome =
  mode === "whole"
    ? await whole()
    : mode === "tool" && input.record !== undefined
      ? await toolStep(input.record)
      : await modelStep(input);
process.stdout.write(`${JSON.stringify(outcome)}\n`);
