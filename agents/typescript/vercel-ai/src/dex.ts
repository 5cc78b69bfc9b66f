/**
 * The one place this package imports the dex-agents runner contract from, so that pointing it
 * at another module is a one-line change.
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
  type ModelCallMetadata,
  type ToolEffect,
  ToolExecutionError,
  type ToolPolicy,
} from "./runner-interface.js";
