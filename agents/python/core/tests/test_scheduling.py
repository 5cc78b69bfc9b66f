"""The one private pytest-xdist member the suite's scheduling overrides (tests/scheduling.py):
an xdist upgrade that renames it, changes its signature or stops calling it fails here, by name,
instead of quietly handing the modules out in xdist's own order."""

from __future__ import annotations

import inspect

from xdist.scheduler import LoadFileScheduling

from .scheduling import LONGEST, LongestFirst, _rank


def test_xdist_still_assigns_work_through_the_overridden_private_method() -> None:
    method = inspect.getattr_static(LoadFileScheduling, "_assign_work_unit", None)
    assert method is not None, "xdist's LoadFileScheduling has no _assign_work_unit any more"
    assert list(inspect.signature(method).parameters) == ["self", "node"]
    # Scheduling, and rescheduling as a process finishes its work, still go through it.
    for entry in ("schedule", "_reschedule"):
        assert "self._assign_work_unit(" in inspect.getsource(getattr(LoadFileScheduling, entry))
    assert LongestFirst._assign_work_unit is not method


def test_the_longest_modules_rank_first_in_their_order() -> None:
    assert [_rank(scope) for scope in LONGEST] == list(range(len(LONGEST)))
    assert _rank("tests/test_anything_else.py") == len(LONGEST)
