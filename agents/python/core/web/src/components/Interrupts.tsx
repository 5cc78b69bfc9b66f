// Pending approvals and questions: Approve, Reject with a reason, or Answer.
import { useState } from "react";
import { api } from "../api";
import { prettyJson } from "../format";
import type { AgentInterrupt } from "../types";
import { useAction } from "../useAction";
import { ErrorNote } from "./ErrorNote";

interface Props {
  sessionId: string;
  interrupt: AgentInterrupt;
  onDone: () => void;
}

const GONE = "This request is no longer pending (answered elsewhere, or past its deadline).";

function Approval({ sessionId, interrupt, onDone }: Props) {
  const [reason, setReason] = useState("");
  const resolve = useAction(
    (approved: boolean) =>
      api.resolve(sessionId, interrupt.interrupt_id, approved, approved ? null : reason || null),
    GONE,
  );
  const act = async (approved: boolean) => {
    if (await resolve.run(approved)) onDone();
  };
  return (
    <>
      <p>
        <strong>{interrupt.tool_name}</strong> needs your approval:
      </p>
      <pre className="output">{prettyJson(interrupt.arguments)}</pre>
      <div className="row">
        <button type="button" disabled={resolve.busy} onClick={() => void act(true)}>
          Approve
        </button>
        <input
          aria-label="Reason for rejecting"
          placeholder="Reason (optional)"
          value={reason}
          onChange={(event) => setReason(event.target.value)}
        />
        <button
          type="button"
          className="danger"
          disabled={resolve.busy}
          onClick={() => void act(false)}
        >
          Reject
        </button>
      </div>
      <ErrorNote message={resolve.error} />
    </>
  );
}

function Question({ sessionId, interrupt, onDone }: Props) {
  const [text, setText] = useState("");
  const answer = useAction(
    (value: string) => api.answer(sessionId, interrupt.interrupt_id, value),
    "The answer was not accepted: it may be blank, not one of the choices, or too late.",
  );
  const decline = useAction(
    () => api.resolve(sessionId, interrupt.interrupt_id, false, text || null),
    GONE,
  );
  const send = async (value: string) => {
    if (await answer.run(value)) onDone();
  };
  return (
    <>
      <p>
        <strong>{interrupt.tool_name}</strong> asks: {interrupt.question}
      </p>
      {interrupt.choices.length > 0 ? (
        <div className="row">
          {interrupt.choices.map((choice) => (
            <button
              key={choice}
              type="button"
              className="secondary"
              disabled={answer.busy}
              onClick={() => void send(choice)}
            >
              {choice}
            </button>
          ))}
        </div>
      ) : null}
      <div className="row">
        {interrupt.allows_free_text ? (
          <>
            <input
              aria-label="Answer"
              placeholder="Your answer"
              value={text}
              onChange={(event) => setText(event.target.value)}
            />
            <button type="button" disabled={answer.busy} onClick={() => void send(text)}>
              Answer
            </button>
          </>
        ) : null}
        <button
          type="button"
          className="danger"
          disabled={decline.busy}
          onClick={() => void decline.run().then((ok) => ok && onDone())}
        >
          Decline
        </button>
      </div>
      <ErrorNote message={answer.error ?? decline.error} />
    </>
  );
}

export function Interrupts({
  sessionId,
  interrupts,
  onDone,
}: {
  sessionId: string;
  interrupts: AgentInterrupt[];
  onDone: () => void;
}) {
  if (interrupts.length === 0) return null;
  return (
    <ul className="interrupts">
      {interrupts.map((interrupt) => (
        <li
          key={interrupt.interrupt_id}
          className={`interrupt ${interrupt.kind}`}
          data-interrupt-id={interrupt.interrupt_id}
        >
          {interrupt.deadline ? <p className="hint">Deadline: {interrupt.deadline}</p> : null}
          {interrupt.kind === "tool_approval" ? (
            <Approval sessionId={sessionId} interrupt={interrupt} onDone={onDone} />
          ) : (
            <Question sessionId={sessionId} interrupt={interrupt} onDone={onDone} />
          )}
        </li>
      ))}
    </ul>
  );
}
