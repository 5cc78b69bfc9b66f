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

A model call that reaches the boundary ends the Step without cancelling a call already in
flight beside it. Under a `ParallelAgent` each child runs in its own task, and the Step ends
by unwinding ADK's task group of the children, which cancels them all: a sibling's model call
cut there would be made again in the next Step. So the call at the boundary first waits until
every task that started a model call in a branch side by side with its own is settled: done
(its agent's run over, every event of it in the session), or stopped at a boundary of its
own. Only then does it raise. Once a call has reached the boundary, every later model call of
the Step (a sibling's first included) stops there too and is the next Step's, so no call
starts that the unwinding would cut. Each model call of the Step is thus made once and
recorded, and no branch makes two.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field


class StepBoundary(Exception):
    """The Step has made its model call in this branch; the next one is the next Step's."""


@dataclass
class ModelCallCounter:
    """The model calls a Step has started, by branch, and the tasks whose calls are not
    settled yet."""

    branches: set[str | None] = field(default_factory=set)
    """The branches that made a model call in this Step."""
    crossed: bool = False
    """A model call was left to the next Step: the invocation goes on there."""
    busy: dict[asyncio.Task[object], str | None] = field(default_factory=dict)
    """The tasks that started a model call this Step and are not settled, with its branch."""
    settled: asyncio.Event = field(default_factory=asyncio.Event)
    """Set whenever a task leaves `busy`."""

    async def start(self, branch: str | None) -> None:
        """Counts a model call of `branch`. Raises StepBoundary, once no call beside it is
        unsettled, when a branch that made one this Step does not run side by side with
        `branch`, or when another call already reached the boundary."""
        task = asyncio.current_task()
        if self.crossed or any(_nested(branch, other) for other in self.branches):
            self.crossed = True
            await self._settle(task, branch)
            raise StepBoundary(f"the next model call of branch {branch!r} is the next Step's")
        self.branches.add(branch)
        if task is not None and task not in self.busy:
            self.busy[task] = branch
            task.add_done_callback(self._done)

    async def _settle(self, task: asyncio.Task[object] | None, branch: str | None) -> None:
        """Marks `task` settled, then waits until no task beside `branch` is busy."""
        if task is not None:
            self._done(task)
        while any(not _nested(branch, other) for other in self.busy.values()):
            self.settled.clear()
            await self.settled.wait()

    def _done(self, task: asyncio.Task[object]) -> None:
        if task in self.busy:
            del self.busy[task]
            self.settled.set()


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
