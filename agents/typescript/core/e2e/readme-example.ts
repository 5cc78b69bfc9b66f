// agent.ts: a Stepwise agent, served to the engine by serveRunners.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { aiSdkModelClientApi, StepwiseRunner, serveRunners, tool } from "../src/index.js";

// Offline: the engine's scripted model server. Any AI SDK LanguageModel works the same way,
// such as openai("gpt-5-mini") of @ai-sdk/openai.
const provider = createOpenAICompatible({
  name: "scripted",
  baseURL: process.env.DEX_AGENTS_SCRIPTED_MODEL_URL ?? "http://127.0.0.1:8901/v1",
  apiKey: "offline",
  includeUsage: true,
});

const getWeather = tool<{ city: string }>({
  name: "get_weather",
  description: "Today's weather in a city.",
  parameters: {
    type: "object",
    properties: { city: { type: "string", description: "The city's name." } },
    required: ["city"],
    additionalProperties: false,
  },
  effect: "read",
  execute: ({ city }) => ({ city, sky: "sunny" }),
});

const sendMessage = tool<{ to: string; text: string }>({
  name: "send_message",
  description: "Send a message.",
  parameters: {
    type: "object",
    properties: { to: { type: "string" }, text: { type: "string" } },
    required: ["to", "text"],
    additionalProperties: false,
  },
  effect: "non_idempotent_write", // needs approval, runs at most once
  execute: ({ to }, { idempotencyKey }) => `sent to ${to} (key ${idempotencyKey})`,
});

const assistant = new StepwiseRunner({
  name: "Assistant",
  instructions: ({ sessionSettings }) => String(sessionSettings.instructions ?? "Be concise."),
  tools: [getWeather, sendMessage],
  resolveModel: (settings) =>
    aiSdkModelClientApi(provider.chatModel(String(settings.model ?? "scripted-model"))),
});

const server = http.createServer(serveRunners({ Assistant: assistant }));
server.listen(Number(process.env.PORT ?? 3000), "127.0.0.1", () => {
  const { port } = server.address() as AddressInfo;
  console.log(`runners at http://127.0.0.1:${port}/dex`);
});
