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
  type DeferredToolCall,
  type DeferredToolExecution,
  type DeferredToolOutcome,
  type EventWriter,
  type FrameworkMessage,
  type MessageRole,
  type ModelCallMetadata,
  type ToolEffect,
  ToolExecutionError,
  type ToolPolicy,
} from "@superdurable/dex-agents";
