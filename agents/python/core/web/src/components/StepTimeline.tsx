// The session's Step history as a timeline, in the order the Steps were scheduled: Step type,
// status, attempts, errors and times. A Step that waits started when it began waiting, so its
// duration is its wait; one still waiting shows how long so far.
import { useEffect, useState } from "react";
import { duration, formatTime } from "../format";
import type { StepExecution } from "../types";
import { StatusBadge } from "./Badge";

const INPUT_CHARS = 60;
const TICK_MS = 1000;

/** The Step's input, cut short: the full text is in the tooltip. */
function shortInput(input: string): string {
  if (!input || input === "null") return "";
  return input.length > INPUT_CHARS ? ` · ${input.slice(0, INPUT_CHARS)}…` : ` · ${input}`;
}

const WAITS = new Set(["waiting", "parked"]);

/** What each Step type that waits waits for. */
const WAITS_FOR: Record<string, string> = {
  AwaitUserMessage: "a message",
  AwaitToolApproval: "an approval",
  AwaitQuestionAnswer: "an answer",
  AwaitTimer: "its timer",
  PollToolTask: "the task's next poll",
  ResumeTurn: "the turn's tool results",
};

function times(step: StepExecution): string {
  const start = step.started_at ?? step.scheduled_at;
  if (step.ended_at) return `${formatTime(start)} · ${duration(start, step.ended_at)}`;
  if (WAITS.has(step.status) && step.started_at) {
    const now = new Date(Math.max(Date.now(), Date.parse(start))).toISOString();
    const what = WAITS_FOR[step.step_type];
    const waiting = what ? `waiting for ${what}` : "waiting";
    return `${waiting} since ${formatTime(start)} · ${duration(step.started_at, now)} so far`;
  }
  return formatTime(start);
}

function StepItem({ step }: { step: StepExecution }) {
  // The failure a failure route (RecordTurnFailure, ...) handles.
  const recovery = step.recovery ?? null;
  return (
    <li className={`step step-${step.status}`} data-step-type={step.step_type}>
      <div className="row">
        <strong>{step.step_type}</strong>
        <StatusBadge status={step.status} />
        {step.attempts > 1 ? <span className="attempts">{step.attempts} attempts</span> : null}
      </div>
      <div className="hint" title={step.input}>
        {times(step)}
        {shortInput(step.input)}
      </div>
      {recovery ? (
        <p className="error-text" data-recovery>
          After {recovery.error_type}: {recovery.detail}
        </p>
      ) : null}
      {step.error ? <p className="error-text">{step.error}</p> : null}
    </li>
  );
}

export function StepTimeline({ steps }: { steps: StepExecution[] }) {
  const [, setTick] = useState(0); // re-renders the waits under way each second
  const waiting = steps.some((step) => WAITS.has(step.status));
  useEffect(() => {
    if (!waiting) return;
    const timer = window.setInterval(() => setTick((count) => count + 1), TICK_MS);
    return () => window.clearInterval(timer);
  }, [waiting]);
  if (steps.length === 0) return <p className="hint">No Steps yet.</p>;
  return (
    <ol className="timeline" aria-label="Step history">
      {steps.map((step) => (
        <StepItem key={step.step_execution_id} step={step} />
      ))}
    </ol>
  );
}
