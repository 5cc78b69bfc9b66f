export { modelVisibleResult } from "./dex.js";
export { buildUserMessage, parseItem, toFrameworkMessages } from "./messages.js";
export type { GenerateOptions } from "./model-step.js";
export { type DurableToolOptions, durableTool } from "./policy.js";
export { VercelAiRunner, type VercelAiRunnerOptions } from "./runner.js";
export { sourceTools } from "./tool-source.js";
