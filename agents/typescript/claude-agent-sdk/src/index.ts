export {
  ClaudeAgentRunner,
  type ClaudeAgentRunnerOptions,
  HarnessTurnError,
  type OptionsFor,
  QUIET_CLI_ENV,
} from "./runner.js";
export { RecordSessionStore } from "./store.js";
export * as texts from "./texts.js";
export type { ToolResult, ToolServer } from "./tools.js";
export { parseTurn, type TurnTranscript } from "./transcript.js";
