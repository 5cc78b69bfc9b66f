export { currentToolExecution, ToolExecutionError } from "./dex.js";
export { buildUserMessage, parseItem, toFrameworkMessages } from "./items.js";
export { type DurableToolOptions, durableTool } from "./policy.js";
export { OpenAIAgentsRunner, type OpenAIAgentsRunnerOptions, type RunContextRequest } from "./runner.js";
export { HANDOFF_EVENT } from "./stream.js";
export { sourceTools } from "./tool-source.js";
