/** Every model-visible text this package writes, in one place. */

/** The refusal a second write call of the same model response gets: the CLI keeps only one
 *  deferred call per run, and shows this to the model as the hook's error result. */
export const ONE_WRITE_AT_A_TIME =
  "Not run: only one write call of a response runs at a time. Call this tool again, with the " +
  "same arguments, once the other call's result is in.";

/** A tool Step for a call of a tool that is not one of the runner's in-process tools. */
export const notRunnerTool = (toolName: string): string =>
  `${toolName} is not a tool of the runner's in-process tool servers`;

/** The prompt of a CLI run that resumes a deferred call: an empty input fails to resume, so the
 *  run sends this text; the model sees it right after the call's result, in the same request. */
export const RESUME_PROMPT = "Continue.";
