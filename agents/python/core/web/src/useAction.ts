// Runs an API call for a button or form: busy while it runs, the API's error message after.
import { useCallback, useState } from "react";
import { messageOf } from "./api";

export interface Action<A extends unknown[]> {
  run: (...args: A) => Promise<boolean>;
  busy: boolean;
  error: string | null;
  setError: (message: string | null) => void;
}

/** `call` returns false when the API answered `{"result": false}`: `refused` is shown then. */
export function useAction<A extends unknown[]>(
  call: (...args: A) => Promise<{ result: boolean } | unknown>,
  refused = "The session did not accept this now.",
): Action<A> {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const run = useCallback(
    async (...args: A): Promise<boolean> => {
      setBusy(true);
      setError(null);
      try {
        const answer = await call(...args);
        const rejected =
          typeof answer === "object" && answer !== null && "result" in answer && !answer.result;
        if (rejected) setError(refused);
        return !rejected;
      } catch (caught) {
        setError(messageOf(caught));
        return false;
      } finally {
        setBusy(false);
      }
    },
    [call, refused],
  );
  return { run, busy, error, setError };
}
