// Hash routes: `#/` the sessions, `#/sessions/<id>` one session, `#/sessions/<id>/chat` its chat.
import { useEffect, useState } from "react";

export type Route =
  | { page: "sessions" }
  | { page: "session"; sessionId: string }
  | { page: "chat"; sessionId: string };

export function parseRoute(hash: string): Route {
  const path = hash.replace(/^#/, "").split("?")[0] ?? "";
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  if (parts[0] === "sessions" && parts[1]) {
    return parts[2] === "chat"
      ? { page: "chat", sessionId: parts[1] }
      : { page: "session", sessionId: parts[1] };
  }
  return { page: "sessions" };
}

export const sessionHref = (id: string): string => `#/sessions/${encodeURIComponent(id)}`;
export const chatHref = (id: string): string => `${sessionHref(id)}/chat`;

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(window.location.hash));
  useEffect(() => {
    const update = () => setRoute(parseRoute(window.location.hash));
    window.addEventListener("hashchange", update);
    return () => window.removeEventListener("hashchange", update);
  }, []);
  return route;
}
