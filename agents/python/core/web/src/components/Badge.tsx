// Status badges: one color per kind of status, and a warning for an unknown outcome.
import type { WaitingFor } from "../types";

const TONES: Record<string, string> = {
  succeeded: "ok",
  completed: "ok",
  waiting_for_user_message: "idle",
  approved: "info",
  running: "info",
  running_model: "info",
  running_tools: "info",
  compacting_context: "info",
  requested: "info",
  scheduled: "idle",
  waiting: "wait",
  parked: "wait",
  awaiting_approval: "wait",
  awaiting_answer: "wait",
  waiting_for_timer: "wait",
  waiting_for_task: "wait",
  rejected: "muted",
  cancelled: "muted",
  failed: "bad",
  outcome_unknown: "warn",
};

export function StatusBadge({ status }: { status: string | null | undefined }) {
  const value = status ?? "starting";
  const tone = TONES[value] ?? "idle";
  const label = value === "outcome_unknown" ? "⚠ outcome unknown" : value.replaceAll("_", " ");
  return (
    <span className={`badge badge-${tone}`} data-status={value}>
      {label}
    </span>
  );
}

const WAITING_TEXT: Record<WaitingFor, string> = {
  approval: "waiting for approval",
  answer: "waiting for an answer",
};

/** A session's status: what it waits on a person for when it does (its status stays
 *  `running_tools`, which the tooltip shows), else its status. */
export function SessionBadge({
  status,
  waitingFor,
}: {
  status: string | null | undefined;
  waitingFor: WaitingFor | null | undefined;
}) {
  if (!waitingFor) return <StatusBadge status={status} />;
  return (
    <span
      className="badge badge-attention"
      data-status={status ?? "starting"}
      data-waiting-for={waitingFor}
      title={`status: ${status ?? "starting"}`}
    >
      {WAITING_TEXT[waitingFor]}
    </span>
  );
}

export function EffectBadge({ effect }: { effect: string | null }) {
  if (!effect) return null;
  return <span className={`effect effect-${effect}`}>{effect.replaceAll("_", " ")}</span>;
}

export const OUTCOME_UNKNOWN_TEXT =
  "The tool may or may not have taken effect (its Step ended without a result). " +
  "It will not run again: check the target system before you retry it.";
