"""Every model-visible text the adapter writes, in one place."""

from __future__ import annotations

ONE_WRITE_AT_A_TIME = (
    "Not run: only one write tool call of a response runs at a time. Call this tool again, "
    "with the same arguments, once the other call's result is in."
)
"""The refusal a second write call of the same model response gets (the CLI keeps only one
deferred call per run); the CLI shows it to the model as the hook's error result."""

RESUME_PROMPT = " "
"""The prompt of a run that resumes a deferred call: blank, so the CLI sends nothing to the
model for it (it finishes the deferred call with its own "Continue from where you left off.")."""
