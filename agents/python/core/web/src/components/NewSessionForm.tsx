// Starts a session: a flow type (those the running Workers host are offered) and a first message.
import { useState, type FormEvent } from "react";
import { api } from "../api";
import { rememberStart } from "../pending";
import { sessionHref } from "../router";
import { useAction } from "../useAction";
import { ErrorNote } from "./ErrorNote";

export function NewSessionForm({ flowTypes }: { flowTypes: string[] }) {
  const [flowType, setFlowType] = useState("");
  const [message, setMessage] = useState("");
  const start = useAction(async (type: string, text: string) => {
    const message = text.trim() ? text : null;
    const { session_id, warning } = await api.startSession(type, message);
    rememberStart(session_id, message, warning ?? null);
    window.location.hash = sessionHref(session_id);
  });

  const submit = (event: FormEvent) => {
    event.preventDefault();
    void start.run(flowType.trim(), message);
  };

  return (
    <form className="new-session" onSubmit={submit}>
      <label>
        Flow type
        <input
          name="flow_type"
          list="flow-types"
          value={flowType}
          placeholder={flowTypes[0] ?? "Assistant"}
          onChange={(event) => setFlowType(event.target.value)}
          required
        />
        <datalist id="flow-types">
          {flowTypes.map((type) => (
            <option key={type} value={type} />
          ))}
        </datalist>
      </label>
      <label className="grow">
        First message
        <input
          name="message"
          value={message}
          placeholder="Optional: the session waits for a message without one"
          onChange={(event) => setMessage(event.target.value)}
        />
      </label>
      <button type="submit" disabled={start.busy}>
        Start session
      </button>
      <ErrorNote message={start.error} />
    </form>
  );
}
