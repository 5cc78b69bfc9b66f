"""The order in which pytest-xdist hands test modules to its processes (`--dist loadfile`).

A module runs whole in one process, and the run ends when the last process ends. xdist hands
out the modules with the most tests first, but a test's length varies a hundredfold here (a
Worker's start and kill, an outage, a CLI process), and a module of a few long tests handed out
last keeps one process running after the others stopped. `LongestFirst` hands out the modules
of `LONGEST` first, in that order (longest first), then the others in xdist's own order: the
processes then end within one short module of each other. It overrides xdist's private
`_assign_work_unit`: `tests/test_scheduling.py` fails, by name, when an upgrade changes it.

`LONGEST` lists the modules that took some 100 s or more in a run of the suite on the shared
2-core CI machine (3 processes, 2026-12-06), longest first. A module missing from it, or a list
out of date, costs only time, never a test.
"""

from __future__ import annotations

from xdist.scheduler import LoadFileScheduling
from xdist.workermanage import WorkerController

LONGEST = (
    "tests/mcp/test_worker.py",
    "tests/test_parking.py",
    "tests/mcp/conformance/test_conformance.py",
    "tests/test_database_outage.py",
    "tests/stepwise/test_features.py",
    "tests/mcp/test_tasks_worker.py",
    "tests/test_cli.py",
    "tests/test_install.py",
    "tests/test_takeover.py",
    "tests/mcp/test_tasks_source.py",
    "tests/test_readme_commands.py",
    "tests/test_routing.py",
    "tests/test_steering.py",
    "tests/web/test_ui_stream.py",
    "tests/web/test_api.py",
    # Under a minute or two, but of one or two tests: xdist's own order hands them out last.
    "tests/mcp/test_everything.py",
    "tests/test_examples.py",
    "tests/web/test_openapi.py",
    "tests/test_chat.py",
    "tests/test_balance.py",
    "tests/test_rolling_deploy.py",
)


def _rank(scope: str) -> int:
    return LONGEST.index(scope) if scope in LONGEST else len(LONGEST)


class LongestFirst(LoadFileScheduling):
    """`--dist loadfile`, handing out the modules of `LONGEST` first."""

    def _assign_work_unit(self, node: WorkerController) -> None:
        # min() keeps the first of equal ranks: the others stay in xdist's order.
        scope = min(self.workqueue, key=_rank)
        self.workqueue.move_to_end(scope, last=False)
        super()._assign_work_unit(node)
