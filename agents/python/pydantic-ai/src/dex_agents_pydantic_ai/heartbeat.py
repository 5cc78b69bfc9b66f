"""Keeps a Step's heartbeat going while a model call or a tool call runs."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable

logger = logging.getLogger(__name__)


@contextlib.asynccontextmanager
async def heartbeat_every(beat: Callable[[], None], interval_seconds: float) -> AsyncIterator[None]:
    """Calls `beat` every interval until the block ends, so a long call is not taken for dead.

    A failing beat is logged, never raised: the call it guards decides the Step's outcome.
    """

    async def loop() -> None:
        while True:
            await asyncio.sleep(interval_seconds)
            try:
                beat()
            except Exception:
                logger.warning("dex-agents-pydantic-ai: heartbeat failed", exc_info=True)

    task = asyncio.create_task(loop())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
