/**
 * The HTTP status and retry headers of a failed pi-ai call, so the Worker judges it as any
 * model error (a 400 is not tried again, a 429's Retry-After is waited for).
 *
 * pi-ai ends a failed call with `stopReason: "error"` and a message only: its `onResponse`
 * hook sees the response of a call that succeeded, never that of one the provider's SDK
 * rejected (the SDK throws before the hook runs, and pi-ai keeps only the error's message).
 * So the model client observes the responses of its own call: a pass-through wrapper of the
 * global `fetch` (the providers' SDKs read `fetch` when pi-ai builds their client, on every
 * call) records each response's status and retry headers into the AsyncLocalStorage of the
 * call that made it, and nothing else. Without it (`observeHttp: false`, or a `fetch`
 * replaced after), the status is read from the message the SDKs write ("429 ...").
 */

import { AsyncLocalStorage } from "node:async_hooks";

/** What one call saw of its provider's HTTP responses. */
export interface HttpObservation {
  status: number | null;
  headers: Record<string, string>;
}

const RETRY_HEADERS = ["retry-after", "retry-after-ms"];
const calls = new AsyncLocalStorage<HttpObservation>();
let installed = false;

/** Wraps the global fetch once; outside an observed call the wrapper only passes through. */
export function installFetchObserver(): void {
  if (installed) return;
  installed = true;
  const original = globalThis.fetch;
  const observed: typeof fetch = async (input, init) => {
    const response = await original(input, init);
    const observation = calls.getStore();
    if (observation !== undefined) record(observation, response.status, response.headers);
    return response;
  };
  globalThis.fetch = observed;
}

/** Runs `call` (which starts the provider's request) with a fresh observation. */
export function observe<T>(call: () => T): { result: T; observation: HttpObservation } {
  const observation: HttpObservation = { status: null, headers: {} };
  const result = calls.run(observation, call);
  return { result, observation };
}

/** Records one response (also what pi-ai's `onResponse` reports). */
export function record(observation: HttpObservation, status: number, headers: Headers | Record<string, string>): void {
  observation.status = status;
  observation.headers = retryHeaders(headers);
}

function retryHeaders(headers: Headers | Record<string, string>): Record<string, string> {
  const entries = headers instanceof Headers ? [...headers] : Object.entries(headers);
  const found: Record<string, string> = {};
  for (const [name, value] of entries) {
    if (RETRY_HEADERS.includes(name.toLowerCase())) found[name.toLowerCase()] = String(value);
  }
  return found;
}

const STATUS_PREFIX = /^([1-5]\d\d)\b/;

/** A failed model call: `statusCode` and `responseHeaders` are what the core's `serveRunners`
 *  reports to the Worker, as it does for the AI SDK's `APICallError`. */
export class PiModelError extends Error {
  override name = "PiModelError";

  constructor(
    message: string,
    readonly statusCode: number | undefined,
    readonly responseHeaders: Record<string, string>,
  ) {
    super(message);
  }
}

/** The error of a call that ended with `stopReason: "error"`: the failed response's status
 *  (an error status observed, else the one the message starts with) and retry headers. */
export function modelError(message: string, observation: HttpObservation): PiModelError {
  if (observation.status !== null && observation.status >= 400) {
    return new PiModelError(message, observation.status, observation.headers);
  }
  const match = STATUS_PREFIX.exec(message);
  const status = match?.[1] === undefined ? undefined : Number(match[1]);
  return new PiModelError(message, status !== undefined && status >= 400 ? status : undefined, {});
}
