"""Every model-visible text the adapter writes, in one place."""

from __future__ import annotations

ONE_WRITE_AT_A_TIME = (
    "Not run: only one call of a response to a write tool, ask_user, durable_wait or "
    "write_todos runs at a time. Call this tool again, with the same arguments, once the "
    "other call's result is in."
)
"""The refusal a second deferred call (a write or a built-in) of the same model response gets
(the CLI keeps only one deferred call per run); the CLI shows it to the model as the hook's
error result."""

BUILT_IN_NOT_DEFERRED = (
    "Not run: this tool runs outside this run and has no result yet. Call it again."
)
"""The result of a built-in call that reached the built-ins' server without a recorded result
(the runner's hook defers every built-in call, so only a hook that answered "allow" first
gets it)."""

RESUME_PROMPT = " "
"""The prompt of a run that resumes a deferred call: blank, so the CLI sends nothing to the
model for it (it finishes the deferred call with its own "Continue from where you left off.")."""

NOT_RUNNER_TOOL = "{tool_name} is not a tool of the runner's tool servers or tool sources"
"""The error result of a call a run's tool source server does not list (the TypeScript runner's
`notRunnerTool`)."""
