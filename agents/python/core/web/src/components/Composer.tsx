// The message box, and Steer and Cancel while a turn runs.
import { useState, type FormEvent } from "react";
import { api } from "../api";
import type { AgentState } from "../types";
import { useAction } from "../useAction";
import { ErrorNote } from "./ErrorNote";

interface Props {
  sessionId: string;
  state: AgentState | null;
  onDone: () => void;
}

export function Composer({ sessionId, state, onDone }: Props) {
  const [text, setText] = useState("");
  const turn = state?.active_turn_id ?? null;
  const send = useAction(
    (value: string) => api.sendMessage(sessionId, value),
    "The message was not accepted (a blank message is refused).",
  );
  const steer = useAction(
    (value: string) => api.steer(sessionId, value),
    "Steering was refused: this turn does not accept steering.",
  );
  const cancel = useAction(
    () => api.cancel(sessionId, turn),
    "The turn could not be cancelled: it has ended, or it does not accept cancellation.",
  );

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    if (await send.run(text)) {
      setText("");
      onDone();
    }
  };
  const steerTurn = async () => {
    if (await steer.run(text)) {
      setText("");
      onDone();
    }
  };

  return (
    <form className="composer" onSubmit={(event) => void submit(event)}>
      <textarea
        name="message"
        aria-label="Message"
        rows={2}
        placeholder={turn ? "A message waits until the turn ends; Steer redirects it now" : "Message"}
        value={text}
        onChange={(event) => setText(event.target.value)}
        onKeyDown={(event) => {
          if (event.key === "Enter" && !event.shiftKey) {
            event.preventDefault();
            void submit(event);
          }
        }}
      />
      <div className="row">
        <button type="submit" disabled={send.busy || !text.trim()}>
          Send
        </button>
        {turn ? (
          <>
            <button
              type="button"
              className="secondary"
              disabled={steer.busy || !text.trim()}
              onClick={() => void steerTurn()}
            >
              Steer
            </button>
            <button
              type="button"
              className="danger"
              disabled={cancel.busy}
              onClick={() => void cancel.run().then((ok) => ok && onDone())}
            >
              Cancel turn
            </button>
          </>
        ) : null}
      </div>
      <ErrorNote message={send.error ?? steer.error ?? cancel.error} />
    </form>
  );
}
