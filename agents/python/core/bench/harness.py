"""What every benchmark here does to its own process so that its figures are the contenders'.

A benchmark that keeps growing histories in its own process (the frameworks alone, the
runners in memory, the scripted model server) pays Python's full collections over them: by
turn ~1,000 each such pass took 150-200 ms there (2026-12-07, measured with gc callbacks),
several times the overhead measured, landing in random turns of any contender. Freezing what
the harness holds before each timed turn keeps those passes out of the figures. A Worker
process (the product) keeps Python's collector as it is.
"""

from __future__ import annotations

import gc


def freeze_harness() -> None:
    """Moves everything this process holds now out of the collector's reach (`gc.freeze`);
    call it before each timed turn, outside the timing."""
    gc.freeze()
