/**
 * What the model reads for a tool call's final record: the same text whichever runner, in
 * either language, sends it back (the Python core's `dex_agents.texts`). Every TypeScript
 * adapter turns records into its framework's tool results through these two functions.
 */

import type { AgentToolCallRecord } from "./runner.js";
import {
  DEFAULT_REJECTION_TEXT,
  OUTCOME_UNKNOWN_TEXT,
  TOOL_CALL_FAILED_PREFIX,
  TOOL_CALL_NOT_RUN_ERROR_PREFIX,
} from "./texts.js";

/** The start of a failed record's error when the tool never ran (a single-attempt tool Step
 *  that recovered before the call), so the model may call it again. */
export const toolCallNotRunErrorPrefix = TOOL_CALL_NOT_RUN_ERROR_PREFIX;

const FINAL_STATUSES: ReadonlySet<string> = new Set([
  "rejected",
  "succeeded",
  "failed",
  "outcome_unknown",
]);

/** Whether the record is final: the call ran, failed, was rejected or may have run. */
export function isFinal(record: Pick<AgentToolCallRecord, "status">): boolean {
  return FINAL_STATUSES.has(record.status);
}

/** What the model sees for a final record; throws for one that is not final. */
export function modelVisibleResult(
  record: Pick<
    AgentToolCallRecord,
    "status" | "output" | "error" | "rejectionMessage" | "toolCallId"
  >,
): string {
  switch (record.status) {
    case "succeeded":
      return record.output ?? "";
    case "failed":
      return `${TOOL_CALL_FAILED_PREFIX}${record.error ?? ""}`;
    case "rejected":
      return record.rejectionMessage || DEFAULT_REJECTION_TEXT;
    case "outcome_unknown":
      return OUTCOME_UNKNOWN_TEXT;
    default:
      throw new Error(`tool call ${record.toolCallId} is not final: ${record.status}`);
  }
}
