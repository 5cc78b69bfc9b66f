"""One model call per Step, for every agent of the tree.

A single `LlmAgent` pauses by itself after a model call that asks for tools (the gates), but
ADK runs a transfer (`transfer_to_agent`) and a workflow agent's next child in the same
invocation, which would make the next model call inside the same Step. The runner's plugin
counts the Step's model calls by branch (`InvocationContext.branch`: a `ParallelAgent` gives
each child its own, `<branch>.<parallel>.<child>`). A Step makes at most one model call per
branch, and only in branches that run side by side: a call in a branch that is, or is an
ancestor or a descendant of, a branch that already made one this Step (the next agent of a
`SequentialAgent` that follows a `ParallelAgent`, ...) raises `StepBoundary` before anything
of that call runs. ADK has already appended every event before it to the Step's session (the
transfer's function response, the agents' state events), so the next RunModel Step resumes
the invocation (`invocation_id`) from those events, with the agent ADK finds in them.
"""

from __future__ import annotations

from dataclasses import dataclass, field


class StepBoundary(Exception):
    """The Step has made its model call in this branch; the next one is the next Step's."""


@dataclass
class ModelCallCounter:
    """The model calls a Step has started, by branch."""

    branches: set[str | None] = field(default_factory=set)
    """The branches that made a model call in this Step."""
    crossed: bool = False
    """A model call was left to the next Step: the invocation goes on there."""

    def start(self, branch: str | None) -> None:
        """Counts a model call of `branch`; raises StepBoundary unless every branch that made
        one this Step runs side by side with `branch`."""
        if any(_nested(branch, other) for other in self.branches):
            self.crossed = True
            raise StepBoundary(f"the next model call of branch {branch!r} is the next Step's")
        self.branches.add(branch)


def _nested(one: str | None, other: str | None) -> bool:
    """Whether one branch is the other, or an ancestor or descendant of it (None is the
    invocation's root branch)."""
    if one is None or other is None or one == other:
        return True
    return one.startswith(f"{other}.") or other.startswith(f"{one}.")


def is_boundary(error: BaseException) -> bool:
    """Whether `error` is, or was caused by, a StepBoundary: ADK's plugin manager wraps a
    plugin's exception in a RuntimeError, and a ParallelAgent's task group in an
    ExceptionGroup."""
    seen: set[int] = set()
    pending: list[BaseException] = [error]
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, StepBoundary):
            return True
        if isinstance(current, BaseExceptionGroup):
            pending.extend(current.exceptions)
        pending.extend(e for e in (current.__cause__, current.__context__) if e is not None)
    return False
