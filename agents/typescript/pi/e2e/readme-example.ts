// agent.ts: pi-ai and Pi's own file tools on Stepwise, served to the engine by serveRunners.
import http from "node:http";
import type { AddressInfo } from "node:net";
import type { Model } from "@mariozechner/pi-ai";
import { createReadTool, createWriteTool } from "@mariozechner/pi-coding-agent";
import { StepwiseRunner, serveRunners } from "@superdurable/dex-agents";
import { piModelClient, piTools } from "../src/index.js";

// Offline: the engine's scripted model server, as an OpenAI-compatible pi-ai model. Any pi-ai
// model works the same way, such as getModel("anthropic", "claude-sonnet-4-5").
function scripted(id: string): Model<"openai-completions"> {
  return {
    id,
    name: id,
    api: "openai-completions",
    provider: "scripted",
    baseUrl: process.env.DEX_AGENTS_SCRIPTED_MODEL_URL ?? "http://127.0.0.1:8901/v1",
    reasoning: false,
    input: ["text"],
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
    contextWindow: 128_000,
    maxTokens: 4_096,
    compat: { supportsStore: false, supportsDeveloperRole: false },
  };
}

// Pi's read tool is a read (runs at once, tried again if it fails); its write tool needs
// approval and runs at most once (the effect table).
const workspace = process.env.WORKSPACE ?? process.cwd();
const assistant = new StepwiseRunner({
  name: "Assistant",
  instructions: ({ sessionSettings }) => String(sessionSettings.instructions ?? "Be concise."),
  tools: piTools([createReadTool(workspace), createWriteTool(workspace)]),
  resolveModel: (settings) =>
    piModelClient(scripted(String(settings.model ?? "scripted-model")), { options: { apiKey: "offline" } }),
});

const server = http.createServer(serveRunners({ Assistant: assistant }));
server.listen(Number(process.env.PORT ?? 3000), "127.0.0.1", () => {
  const { port } = server.address() as AddressInfo;
  console.log(`runners at http://127.0.0.1:${port}/dex`);
});
