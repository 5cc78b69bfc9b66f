/**
 * A fresh Node process that finishes a paused turn: it reads the stored run state and the
 * final records on stdin, restores the run with a runner it builds itself, makes the model
 * Step, and prints the outcome and the request bodies it sent as one JSON line.
 *
 *   node dist-test/test/round-trip-child.js <model url>   < {"frameworkRunState", "toolCalls"}
 */
import { text } from "node:stream/consumers";
import { OpenAIChatCompletionsModel, setTracingDisabled } from "@openai/agents";
import OpenAI from "openai";
import type { AgentToolCall } from "../src/dex.js";
import { OpenAIAgentsRunner } from "../src/index.js";
import { supportAgent, USER } from "./round-trip-app.js";
import { MemoryEvents, storedMessage, turnContext } from "./support.js";

setTracingDisabled(true);
const [baseURL] = process.argv.slice(2);
const input = JSON.parse(await text(process.stdin)) as { frameworkRunState: string; toolCalls: AgentToolCall[] };
const requests: unknown[] = [];
const client = new OpenAI({
  baseURL,
  apiKey: "scripted",
  fetch: async (url, init) => {
    if (typeof init?.body === "string") {
      requests.push(JSON.parse(init.body));
    }
    return await fetch(url, init);
  },
});
const runner = new OpenAIAgentsRunner(supportAgent(new OpenAIChatCompletionsModel(client, "scripted-model")));
const history = [{ message: storedMessage(1, "turn-1", USER, "Refund order A1 if it shipped."), item: USER }];
const outcome = await runner.runModelStep(
  turnContext(new MemoryEvents(), { history, frameworkRunState: input.frameworkRunState, toolCalls: input.toolCalls }),
);
process.stdout.write(`${JSON.stringify({ outcome, requests })}\n`);
