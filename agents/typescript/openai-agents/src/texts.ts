/**
 * Every text this package puts in front of the model or a person: the session contract's texts
 * and a tool Step's refusals from the TypeScript core (word for word the Python core's), and
 * this adapter's own errors, which say what to do.
 */
import { texts } from "./dex.js";

export const {
  TOOL_CALL_FAILED_PREFIX,
  OUTCOME_UNKNOWN_TEXT,
  DEFAULT_REJECTION_TEXT,
  unknownToolText,
  argumentsNotJsonText,
  notExecutableText,
} = texts;

/** Two agents of the graph share a name: a restored run state could not tell them apart. */
export function duplicateAgentNameText(name: string): string {
  return (
    `two agents reachable from the runner's agent are named ${JSON.stringify(name)}; ` +
    "give every agent of the graph (handoff targets included) a unique name, because a stored run state " +
    "names its current agent and a tool call names the agent that owns its tool"
  );
}

/** The run stopped for an approval that is not a function tool's: no tool Step can run it. */
export function unsupportedInterruptionText(agentName: string, itemType: string): string {
  return (
    `agent ${JSON.stringify(agentName)} asked for approval of a ${itemType} item: only function tools run as ` +
    "tool Steps; give the tool no needsApproval, or make it a function tool"
  );
}

/** A resumed run asked for the result of a call the session has no final record of. */
export function noFinalRecordText(callId: string): string {
  return `no final tool call record for deferred call ${JSON.stringify(callId)}`;
}

/** The run state was written by another adapter or version. */
export const BAD_RUN_STATE =
  "the framework run state is not an OpenAI Agents run state of this adapter (a turn started by another " +
  "runner or version): cancel the turn and send the message again";

/** A tool guardrail's `throwException`: the call failed, before or after its tool ran. */
export function guardrailTrippedText(kind: "input" | "output", name: string): string {
  return `tool ${kind} guardrail ${JSON.stringify(name)} tripped`;
}
