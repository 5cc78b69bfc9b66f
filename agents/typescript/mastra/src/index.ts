export { buildUserMessage, type ModelMessage, parseItem, toFrameworkMessages } from "./messages.js";
export type { StreamOptions } from "./model-step.js";
export { type DurableToolOptions, durableTool } from "./policy.js";
export { MastraRunner, type MastraRunnerOptions } from "./runner.js";
export { sourceTools } from "./tool-source.js";
