"""Warm states: a turn's live framework objects kept between its Steps on one Worker.

Step mode commits a turn's state at every Step, and the next Step of the turn rebuilds the
framework's objects from it: a new run over the whole history, a run state parsed from
JSON. When that next Step runs on the same Worker, the objects the last Step left are
still there. A runner's warm path keeps them and goes on from them; its cold path, the
rebuild from the committed state, stays the only one that must exist and runs on every
miss (another Worker, a restart, a different committed state, an evicted entry).

What every runner's warm path shares lives here: the bookkeeping of the entries (one per
session; at most `max_entries` per runner, the least recently used closed first; none
older than `ttl`, by default the Worker's hot window, so a warm entry never outlives the
time a waiting Step stays in memory) and the fingerprint that says which committed state
an entry stands for. A runner decides what to keep and how to go on from it.
"""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from .parking import hot_window_setting
from .runner import AgentFrameworkRunner, AgentTurnContext

WARM_RUNS_ENV = "DEX_AGENTS_WARM_RUNS"
"""How many sessions' warm states each runner of a Worker keeps (0: off)."""
DEFAULT_WARM_RUNS = 64
"""Sessions in the middle of a turn whose next Step finds its state warm, per runner; the
others run cold. An entry lives only between two Steps of a turn (at most the hot window)."""

T = TypeVar("T")


def turn_fingerprint(turn: AgentTurnContext, run_state: str | None) -> str:
    """What a warm entry must stand for to be used: the turn, the committed run state, and
    every input of a model Step besides the tool calls' records (the stored messages, plan,
    summary, interaction mode, session settings and enabled built-ins)."""
    last = turn.messages[-1].sequence if turn.messages else -1
    parts = (
        turn.turn_id,
        hashlib.sha256((run_state or "").encode()).hexdigest(),
        str(len(turn.messages)),
        str(last),
        turn.interaction_mode,
        repr(turn.plan),
        repr(turn.context_summary),
        repr(sorted(turn.session_settings.items())),
        repr(turn.enabled_built_in_tools),
    )
    return "\x1f".join(parts)


@dataclass
class _Entry(Generic[T]):
    fingerprint: str
    value: T
    kept_at: float


class WarmStates(Generic[T]):
    """One runner's warm entries, one per session, the least recently used closed first."""

    def __init__(
        self, max_entries: int, ttl: float, close: Callable[[T], None] | None = None
    ) -> None:
        self._max_entries = max_entries
        self._ttl = ttl
        self._close = close
        self._entries: OrderedDict[str, _Entry[T]] = OrderedDict()
        self.hits = 0
        self.misses = 0
        self.lent = 0
        """Entries used by a Step between the two that take them (`lend`), such as a tool Step."""

    @property
    def enabled(self) -> bool:
        return self._max_entries > 0

    @property
    def ttl(self) -> float:
        """Seconds an entry is kept after the Step that kept it."""
        return self._ttl

    def __len__(self) -> int:
        return len(self._entries)

    def take(
        self, flow_id: str, wanted: Callable[[], str], usable: Callable[[T], bool] | None = None
    ) -> T | None:
        """The session's entry if it is fresh, `usable` and stands for `wanted()` (computed
        only when the session has one); it leaves the cache either way, closed if unused."""
        entry = self._entries.pop(flow_id, None)
        if entry is None:
            self.misses += 1
            return None
        fresh = time.monotonic() - entry.kept_at <= self._ttl
        alive = fresh and (usable is None or usable(entry.value))
        if not alive or entry.fingerprint != wanted():
            self._closing(entry.value)
            self.misses += 1
            return None
        self.hits += 1
        return entry.value

    def lend(self, flow_id: str, wanted: str, usable: Callable[[T], bool]) -> T | None:
        """The session's entry, left in the cache, if it is fresh, `usable` and stands for
        `wanted`: for a Step between the two that take it (a tool Step between a turn's model
        Steps), which `renew`s it when done. Counts no hit nor miss; a miss closes nothing."""
        entry = self._entries.get(flow_id)
        if entry is None or time.monotonic() - entry.kept_at > self._ttl:
            return None
        if entry.fingerprint != wanted or not usable(entry.value):
            return None
        self.lent += 1
        return entry.value

    def renew(self, flow_id: str, value: T) -> None:
        """Starts the session's entry's age again, if it is still `value`."""
        entry = self._entries.get(flow_id)
        if entry is not None and entry.value is value:
            entry.kept_at = time.monotonic()
            self._entries.move_to_end(flow_id)

    def keep(self, flow_id: str, fingerprint: str, value: T) -> None:
        """Keeps `value` as the session's entry, standing for `fingerprint`."""
        self.drop(flow_id)
        self._entries[flow_id] = _Entry(fingerprint, value, time.monotonic())
        while len(self._entries) > self._max_entries:
            _, oldest = self._entries.popitem(last=False)
            self._closing(oldest.value)

    def drop(self, flow_id: str) -> None:
        entry = self._entries.pop(flow_id, None)
        if entry is not None:
            self._closing(entry.value)

    def _closing(self, value: T) -> None:
        if self._close is not None:
            self._close(value)


def warm_runs_setting(explicit: int | None, environ: Mapping[str, str]) -> int:
    """`explicit`, else DEX_AGENTS_WARM_RUNS, else the default."""
    if explicit is None:
        text = environ.get(WARM_RUNS_ENV, "").strip()
        try:
            explicit = int(text) if text else DEFAULT_WARM_RUNS
        except ValueError:
            raise ValueError(f"{WARM_RUNS_ENV} must be a whole number, not {text!r}") from None
    if explicit < 0:
        raise ValueError("warm_runs must be 0 (off) or more")
    return explicit


def warm_ttl_setting(explicit: float | None, environ: Mapping[str, str]) -> float:
    """`explicit`, else the Worker's hot window as DEX_AGENTS_HOT_WINDOW_SECONDS sets it,
    else its default: an entry lives no longer than a waiting Step stays in memory."""
    return explicit if explicit is not None else hot_window_setting(None, environ)


class WarmRunner(AgentFrameworkRunner[Any], Protocol):
    """A runner with a warm path: its entries, hits and misses."""

    @property
    def warm_runs(self) -> WarmStates[Any]: ...
