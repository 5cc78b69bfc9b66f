// Messages that wait for the running turn to end, each deletable.
import { api } from "../api";
import type { PendingUserMessage } from "../types";
import { useAction } from "../useAction";
import { ErrorNote } from "./ErrorNote";

interface Props {
  sessionId: string;
  queued: PendingUserMessage[];
  steered: PendingUserMessage[];
  onDone: () => void;
}

export function QueuedMessages({ sessionId, queued, steered, onDone }: Props) {
  const remove = useAction(
    (messageId: string) => api.deleteQueued(sessionId, messageId),
    "That message is no longer queued.",
  );
  if (queued.length === 0 && steered.length === 0) return null;
  return (
    <div className="queued">
      {steered.map((item) => (
        <div key={item.message_id} className="message user pending">
          <div className="meta">steering the turn</div>
          <div className="text">{item.message.text}</div>
        </div>
      ))}
      {queued.map((item) => (
        <div key={item.message_id} className="message user pending">
          <div className="meta row spread">
            queued after the turn
            <button
              type="button"
              className="link"
              onClick={() => void remove.run(item.message_id).then((ok) => ok && onDone())}
            >
              delete
            </button>
          </div>
          <div className="text">{item.message.text}</div>
        </div>
      ))}
      <ErrorNote message={remove.error} />
    </div>
  );
}
