/**
 * The runner's PreToolUse hook: a write call of the runner's in-process tools is deferred to a
 * tool Step.
 *
 * For a call of a `toolServers` tool or a tool source's tool whose effect is not `read` (the
 * session's ToolPolicy, then what the tool declares: its MCP annotations, or for a source's tool
 * the source's explicit policy first, then the session's default effect), or whose policy asks for approval, the hook answers
 * `defer` while no tool Step has recorded a result for its tool_use ID: the CLI run ends before
 * the tool runs. Once a result is recorded, the resumed run asks the hook again about the same
 * call: it answers `allow` and hands the recorded result to the run's server, which returns it
 * as the tool's own result. Every other call is left to the CLI's own permissions.
 *
 * A call of a built-in the run offers (`mcp__dex__<name>`) is deferred the same way, reported
 * under the built-in's own name. In a planning turn every call but `write_todos` is denied with
 * the contract's planning-turn rejection (the run offers no other tool; this is the backstop).
 */
import type { HookCallback, HookJSONOutput } from "@anthropic-ai/claude-agent-sdk";
import { builtInOf, POLICY } from "./builtins.js";
import {
  type AgentTurnContext,
  type DeferredToolCall,
  isFinal,
  modelVisibleResult,
  type ResolvedToolPolicy,
  type ToolEffect,
  texts,
} from "./dex.js";
import { ONE_WRITE_AT_A_TIME } from "./texts.js";
import type { RecordedResult, RecordedResults } from "./tools.js";

/** What a tool the runner serves declares, by the name the model sees: its effect (null: left
 *  to the session's policies and default) and approval (null: the effect's default); undefined
 *  for a tool the runner does not serve. */
export type Declared = (
  toolName: string,
) => { effect?: ToolEffect | null; requiresApproval?: boolean | null } | undefined;

/** One CLI run's hook; `deferred` is the call it stopped the run for (a write call, or a call of
 *  one of the built-ins the run offers). */
export class WriteGate {
  readonly deferred: DeferredToolCall[] = [];
  readonly #turn: AgentTurnContext;
  readonly #declared: Declared;
  readonly #handed: RecordedResults;
  readonly #recorded: Map<string, RecordedResult>;
  readonly #handedIds = new Set<string>();
  readonly #builtIns: readonly string[];
  readonly #planning: boolean;

  constructor(turn: AgentTurnContext, declared: Declared, handed: RecordedResults, builtIns: readonly string[] = []) {
    this.#turn = turn;
    this.#builtIns = builtIns;
    this.#planning = turn.interactionMode === "planning";
    this.#declared = declared;
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
    if (input.hook_event_name !== "PreToolUse") return {};
    const builtIn = builtInOf(input.tool_name, this.#builtIns);
    if (this.#planning && builtIn !== "write_todos") return decision("deny", texts.PLANNING_TURN_REJECTION);
    if (toolUseId === undefined) return {};
    if (builtIn !== null) return this.#gate(toolUseId, input.tool_name, builtIn, input.tool_input, POLICY);
    const declared = this.#declared(input.tool_name);
    if (declared === undefined) return {};
    const policy = this.#turn.resolveToolPolicy(input.tool_name, declared.effect, declared.requiresApproval);
    if (policy.effect === "read" && !policy.requiresApproval) return {};
    return this.#gate(toolUseId, input.tool_name, input.tool_name, input.tool_input, policy);
  };

  /** Allows a call whose result a Step recorded (handing the result over), else defers it under
   *  `reportedName`: one deferred call per run. */
  #gate(
    toolUseId: string,
    toolName: string,
    reportedName: string,
    toolInput: unknown,
    policy: ResolvedToolPolicy,
  ): HookJSONOutput {
    const recorded = this.#recorded.get(toolUseId);
    if (recorded !== undefined) {
      // The CLI may ask about the same call more than once: its result is handed over once.
      if (!this.#handedIds.has(toolUseId)) this.#handed.handOver(toolName, toolInput, recorded);
      this.#handedIds.add(toolUseId);
      return decision("allow");
    }
    if (this.deferred.length > 0) return decision("deny", ONE_WRITE_AT_A_TIME);
    this.deferred.push({
      toolCallId: toolUseId,
      toolName: reportedName,
      arguments: JSON.stringify(toolInput ?? {}),
      policy,
    });
    return decision("defer");
  }
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
