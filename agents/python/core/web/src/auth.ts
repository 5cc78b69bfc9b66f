// The API token: taken from the URL fragment `#token=...` (what `dex-agents serve` prints),
// kept in sessionStorage for this tab, and sent as a Bearer header on every request.

const STORAGE_KEY = "dex-agents-token";

/** Moves a `token=` parameter from the fragment into sessionStorage and removes it from the URL. */
export function captureTokenFromFragment(): void {
  const hash = window.location.hash.replace(/^#/, "");
  const [path, query] = hash.includes("?") ? hash.split("?", 2) : ["", hash];
  const params = new URLSearchParams(query);
  const token = params.get("token");
  if (token === null) return;
  sessionStorage.setItem(STORAGE_KEY, token);
  params.delete("token");
  const rest = params.toString();
  const route = path && path.startsWith("/") ? path : "/";
  const fragment = rest ? `${route}?${rest}` : route;
  history.replaceState(null, "", `${window.location.pathname}${window.location.search}#${fragment}`);
}

export function getToken(): string | null {
  return sessionStorage.getItem(STORAGE_KEY);
}

export function setToken(token: string): void {
  sessionStorage.setItem(STORAGE_KEY, token);
}

export function authHeaders(): Record<string, string> {
  const token = getToken();
  return token ? { Authorization: `Bearer ${token}` } : {};
}
