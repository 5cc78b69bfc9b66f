/**
 * Stepwise: the core's own agent loop, for applications that use no agent framework, the
 * TypeScript twin of the Python core's `dex_agents.stepwise`.
 *
 *   const agent: AgentDefinition = {
 *     name: "Assistant",
 *     instructions: "You are helpful.",
 *     tools: [tool({ name: "get_weather", description: "...", parameters, effect: "read", execute })],
 *     model: aiSdkModelClientApi(openai("gpt-5-mini")),
 *   };
 *   serveRunners({ Assistant: new StepwiseRunner(agent) });
 */

export {
  type AiSdkCallSettings,
  type AiSdkModelClientOptions,
  aiSdkModelClientApi,
  toModelMessages,
} from "./ai-sdk.js";
export {
  BUILT_IN_TOOL_DEFINITIONS,
  BUILT_IN_TOOL_NAMES,
  type BuiltInToolName,
  buildPlanNote,
} from "./builtins.js";
export {
  cutPoints,
  earliestCutWithinBudget,
  messagesLeftOut,
  render as renderForSummary,
} from "./compaction.js";
export {
  type AgentDefinition,
  CONTINUATION_LIMIT_ERROR,
  continueTurn,
  type InstructionContext,
  type Instructions,
  MAX_CONSECUTIVE_CONTINUATIONS,
  type TurnContinuation,
  type TurnContinuationContext,
  type TurnContinuationDecision,
} from "./definition.js";
export { type ChatContentPart, type ChatItem, type ChatToolCall, RunState } from "./items.js";
export type { ModelClient, ModelReply, ModelRequest, ModelToolChoice } from "./model.js";
export { type StepwiseItem, StepwiseRunner } from "./runner.js";
export {
  type JsonSchema,
  type Tool,
  type ToolContext,
  type ToolSpec,
  tool,
  toolResult,
} from "./tools.js";
