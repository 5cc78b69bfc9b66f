/** Every model-visible text this package writes, in one place. */

/** The refusal a second deferred call (a write or a built-in) of the same model response gets:
 *  the CLI keeps only one deferred call per run, and shows this to the model as the hook's error
 *  result. */
export const ONE_WRITE_AT_A_TIME =
  "Not run: only one call of a response to a write tool, ask_user, durable_wait or " +
  "write_todos runs at a time. Call this tool again, with the same arguments, once the " +
  "other call's result is in.";

/** The result of a built-in call that reached the built-ins' server without a recorded result
 *  (the runner's hook defers every built-in call, so only a hook that answered "allow" first
 *  gets it). */
export const BUILT_IN_NOT_DEFERRED = "Not run: this tool runs outside this run and has no result yet. Call it again.";

/** A tool Step for a call of a tool that is not one of the runner's in-process tools (of its
 *  tool servers or its tool sources). */
export const notRunnerTool = (toolName: string): string =>
  `${toolName} is not a tool of the runner's tool servers or tool sources`;

/** The prompt of a CLI run that resumes a deferred call: an empty input fails to resume, so the
 *  run sends this text; the model sees it right after the call's result, in the same request. */
export const RESUME_PROMPT = "Continue.";
