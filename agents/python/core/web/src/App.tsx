import { useState, type FormEvent } from "react";
import { getToken, setToken } from "./auth";
import { ChatPage } from "./components/ChatPage";
import { SessionList } from "./components/SessionList";
import { SessionView } from "./components/SessionView";
import { useRoute, type Route } from "./router";

function TokenForm() {
  const [value, setValue] = useState("");
  const [saved, setSaved] = useState(getToken() !== null);
  const submit = (event: FormEvent) => {
    event.preventDefault();
    setToken(value.trim());
    setSaved(true);
    window.location.reload();
  };
  if (saved) return null;
  return (
    <form className="token-form" onSubmit={submit}>
      <span className="hint">
        No token: open the link <code>dex-agents serve</code> printed, or paste its token
      </span>
      <input
        aria-label="Token"
        value={value}
        onChange={(event) => setValue(event.target.value)}
        type="password"
      />
      <button type="submit" className="secondary" disabled={!value.trim()}>
        Use token
      </button>
    </form>
  );
}

function Page({ route }: { route: Route }) {
  switch (route.page) {
    case "session":
      return <SessionView key={route.sessionId} sessionId={route.sessionId} />;
    case "chat":
      return <ChatPage key={route.sessionId} sessionId={route.sessionId} />;
    default:
      return <SessionList />;
  }
}

export function App() {
  const route = useRoute();
  return (
    <>
      <nav className="topbar">
        <a href="#/" className="brand">
          dex-agents
        </a>
        <a href="#/">Sessions</a>
        <TokenForm />
      </nav>
      <Page route={route} />
    </>
  );
}
