/**
 * The runner's PreToolUse hook: a write call of the runner's in-process tools is deferred to a
 * tool Step.
 *
 * For a call whose effect is not `read` (explicit ToolPolicy, then the tool's MCP annotations,
 * then the session's default effect), or whose policy asks for approval, the hook answers
 * `defer` while no tool Step has recorded a result for its tool_use ID: the CLI run ends before
 * the tool runs. Once a result is recorded, the resumed run asks the hook again about the same
 * call: it answers `allow` and hands the recorded result to the run's server, which returns it
 * as the tool's own result. Every other call is left to the CLI's own permissions.
 */
import type { HookCallback, HookJSONOutput } from "@anthropic-ai/claude-agent-sdk";
import { type AgentTurnContext, type DeferredToolCall, isFinal, modelVisibleResult } from "./dex.js";
import { ONE_WRITE_AT_A_TIME } from "./texts.js";
import type { RecordedResult, RecordedResults, SdkTools } from "./tools.js";

/** One CLI run's hook; `deferred` is the call it stopped the run for. */
export class WriteGate {
  readonly deferred: DeferredToolCall[] = [];
  readonly #turn: AgentTurnContext;
  readonly #tools: SdkTools;
  readonly #handed: RecordedResults;
  readonly #recorded: Map<string, RecordedResult>;
  readonly #handedIds = new Set<string>();

  constructor(turn: AgentTurnContext, tools: SdkTools, handed: RecordedResults) {
    this.#turn = turn;
    this.#tools = tools;
    this.#handed = handed;
    this.#recorded = new Map(
      turn.toolCalls
        .filter(isFinal)
        .map((record) => [
          record.toolCallId,
          { text: modelVisibleResult(record), isError: record.status !== "succeeded" },
        ]),
    );
  }

  readonly hook: HookCallback = async (input, toolUseId) => {
    if (input.hook_event_name !== "PreToolUse" || toolUseId === undefined) return {};
    const effect = this.#tools.effect(input.tool_name);
    if (effect === undefined) return {};
    const policy = this.#turn.resolveToolPolicy(input.tool_name, effect);
    if (policy.effect === "read" && !policy.requiresApproval) return {};
    const recorded = this.#recorded.get(toolUseId);
    if (recorded !== undefined) {
      // The CLI may ask about the same call more than once: its result is handed over once.
      if (!this.#handedIds.has(toolUseId)) this.#handed.handOver(input.tool_name, input.tool_input, recorded);
      this.#handedIds.add(toolUseId);
      return decision("allow");
    }
    if (this.deferred.length > 0) return decision("deny", ONE_WRITE_AT_A_TIME);
    this.deferred.push({
      toolCallId: toolUseId,
      toolName: input.tool_name,
      arguments: JSON.stringify(input.tool_input ?? {}),
      policy,
    });
    return decision("defer");
  };
}

function decision(permissionDecision: "allow" | "deny" | "defer", reason?: string): HookJSONOutput {
  return {
    hookSpecificOutput: {
      hookEventName: "PreToolUse",
      permissionDecision,
      ...(reason === undefined ? {} : { permissionDecisionReason: reason }),
    },
  };
}
