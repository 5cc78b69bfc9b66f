// The session's Step history as a timeline: Step type, status, attempts, errors and times.
import { duration, formatTime } from "../format";
import type { StepExecution } from "../types";
import { StatusBadge } from "./Badge";

const INPUT_CHARS = 60;

/** The Step's input, cut short: the full text is in the tooltip. */
function shortInput(input: string): string {
  if (!input || input === "null") return "";
  return input.length > INPUT_CHARS ? ` · ${input.slice(0, INPUT_CHARS)}…` : ` · ${input}`;
}

function StepItem({ step }: { step: StepExecution }) {
  return (
    <li className={`step step-${step.status}`} data-step-type={step.step_type}>
      <div className="row">
        <strong>{step.step_type}</strong>
        <StatusBadge status={step.status} />
        {step.attempts > 1 ? <span className="attempts">{step.attempts} attempts</span> : null}
      </div>
      <div className="hint" title={step.input}>
        {formatTime(step.started_at ?? step.scheduled_at)}
        {step.ended_at ? ` · ${duration(step.started_at ?? step.scheduled_at, step.ended_at)}` : ""}
        {shortInput(step.input)}
      </div>
      {step.error ? <p className="error-text">{step.error}</p> : null}
    </li>
  );
}

export function StepTimeline({ steps }: { steps: StepExecution[] }) {
  if (steps.length === 0) return <p className="hint">No Steps yet.</p>;
  return (
    <ol className="timeline" aria-label="Step history">
      {steps.map((step) => (
        <StepItem key={step.step_execution_id} step={step} />
      ))}
    </ol>
  );
}
