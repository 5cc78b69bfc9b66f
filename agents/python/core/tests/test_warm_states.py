"""warm_states.py: one entry per session, bounded in number and age, used only when it stands
for what the Step wants; everything else is closed and counted as a miss."""

from __future__ import annotations

import pytest

from dex_agents.errors import WorkerError
from dex_agents.testing.driver import RunnerDriver
from dex_agents.testing.instant_runner import InstantRunner
from dex_agents.warm_states import (
    WARM_RUNS_ENV,
    WarmStates,
    turn_fingerprint,
    warm_runs_setting,
    warm_ttl_setting,
)


def _states(max_entries: int = 2, ttl: float = 60.0) -> tuple[WarmStates[str], list[str]]:
    closed: list[str] = []
    return WarmStates(max_entries, ttl, close=closed.append), closed


def test_an_entry_is_taken_once_when_it_stands_for_what_is_wanted() -> None:
    states, closed = _states()
    states.keep("s-1", "f1", "run-1")
    assert states.take("s-1", lambda: "f1") == "run-1"
    assert states.take("s-1", lambda: "f1") is None  # taken: gone
    assert (states.hits, states.misses, closed) == (1, 1, [])


def test_another_fingerprint_a_stale_or_unusable_entry_is_closed_and_missed() -> None:
    states, closed = _states()
    states.keep("s-1", "f1", "run-1")
    assert states.take("s-1", lambda: "f2") is None
    states.keep("s-1", "f1", "run-2")
    assert states.take("s-1", lambda: "f1", usable=lambda run: run != "run-2") is None
    stale, stale_closed = _states(ttl=0.0)
    stale.keep("s-1", "f1", "run-3")
    assert stale.take("s-1", lambda: "f1") is None
    assert (closed, stale_closed, states.misses) == (["run-1", "run-2"], ["run-3"], 2)


def test_a_lent_entry_stays_for_the_next_take_and_a_refused_one_is_not_closed() -> None:
    states, closed = _states(max_entries=2)
    states.keep("s-1", "f1", "run-1")
    states.keep("s-2", "f1", "run-2")
    assert states.lend("s-1", "f2", usable=lambda run: True) is None
    assert states.lend("s-1", "f1", usable=lambda run: False) is None
    assert states.lend("s-1", "f1", usable=lambda run: True) == "run-1"
    states.renew("s-1", "run-1")  # now the most recently kept: s-2's entry goes first
    states.keep("s-3", "f1", "run-3")
    assert closed == ["run-2"]
    assert states.take("s-1", lambda: "f1") == "run-1"
    assert (states.lent, states.hits, states.misses) == (1, 1, 0)
    stale, stale_closed = _states(ttl=0.0)
    stale.keep("s-1", "f1", "run-4")
    assert stale.lend("s-1", "f1", usable=lambda run: True) is None
    assert stale_closed == []  # the next take closes it


def test_one_entry_per_session_and_the_least_recently_kept_closed_first() -> None:
    states, closed = _states(max_entries=2)
    states.keep("s-1", "f", "a")
    states.keep("s-1", "f", "b")  # the session's new entry closes its old one
    states.keep("s-2", "f", "c")
    states.keep("s-3", "f", "d")
    assert closed == ["a", "b"]
    assert len(states) == 2
    states.drop("s-2")
    assert closed == ["a", "b", "c"]


def test_the_fingerprint_changes_with_the_run_state_and_the_stored_messages() -> None:
    driver = RunnerDriver(InstantRunner())
    turn_id = driver.start_turn("Hi")
    before = turn_fingerprint(driver.context(turn_id, "state-1"), "state-1")
    assert turn_fingerprint(driver.context(turn_id, "state-1"), "state-1") == before
    assert turn_fingerprint(driver.context(turn_id, "state-1"), "state-2") != before
    driver.append(turn_id, driver.runner.build_user_message("And this."))
    assert turn_fingerprint(driver.context(turn_id, "state-1"), "state-1") != before


def test_the_settings_read_the_environment_and_refuse_nonsense() -> None:
    assert warm_runs_setting(None, {}) == 64
    assert warm_runs_setting(None, {WARM_RUNS_ENV: "0"}) == 0
    assert warm_runs_setting(3, {WARM_RUNS_ENV: "0"}) == 3
    with pytest.raises(ValueError, match=WARM_RUNS_ENV):
        warm_runs_setting(None, {WARM_RUNS_ENV: "many"})
    with pytest.raises(ValueError, match="0 \\(off\\) or more"):
        warm_runs_setting(-1, {})
    assert warm_ttl_setting(None, {"DEX_AGENTS_HOT_WINDOW_SECONDS": "30"}) == 30.0
    assert warm_ttl_setting(None, {}) == 10.0
    assert warm_ttl_setting(2.5, {}) == 2.5
    # The Worker's own reading of its hot window, which refuses what the Worker refuses.
    with pytest.raises(WorkerError, match="must be a number of seconds"):
        warm_ttl_setting(None, {"DEX_AGENTS_HOT_WINDOW_SECONDS": "soon"})
