/**
 * The one place this package imports the dex-agents runner contract from: the core package,
 * `@superdurable/dex-agents`.
 */
export {
  type AgentFrameworkRunner,
  type AgentMessage,
  type AgentToolCall,
  type AgentTurnContext,
  type AgentTurnOutcome,
  type AgentUsage,
  buildPlanNote,
  type DeferredToolCall,
  type DeferredToolExecution,
  type DeferredToolOutcome,
  type EventWriter,
  type FrameworkMessage,
  isFinal,
  modelVisibleResult,
  type ResolvedToolPolicy,
  type ToolEffect,
  ToolExecutionError,
  type ToolPolicy,
  texts,
  withToolExecution,
} from "@superdurable/dex-agents";
