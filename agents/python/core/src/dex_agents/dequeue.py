"""Takes a flow type's enqueued Steps at once, when a commit says they are there.

DBOS dequeues by polling each queue. A client that starts a session (or cancels a turn)
enqueues its first Step and wakes the Workers that host the flow type through the same
commit-driven feed as every other wake-up; a woken Worker claims the queue's workflows at
once, exactly as DBOS's queue thread does on its poll (one atomic ENQUEUED -> PENDING claim,
then dispatch). So the poll is only a safety net and can be slow: it costs CPU on every
Worker for every queue, all the time.

The claim uses DBOS internals (the same calls as DBOS's queue thread), behind
dbos_internals.py.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from dbos import Queue

from .dbos_internals import claim_and_start, running_workflow_count
from .store import queue_wake_key as queue_wake_key

log = logging.getLogger("dex_agents")

# A woken Worker waits this long per workflow it runs before it claims, at most the maximum,
# so that new sessions go to the less busy Workers.
CLAIM_DELAY_PER_WORKFLOW = 0.001
MAX_CLAIM_DELAY = 0.05


class Dequeuer:
    """Claims and starts the enqueued Steps of the hosted flow types when woken."""

    def __init__(self, queues: dict[str, Queue]) -> None:
        """Made in the Worker's event loop; `queues` is filled once DBOS launched."""
        self._queues = queues
        # How many more workflows this Worker runs than the least busy other Worker of a
        # flow type (the balancer's count); until it is set, every claim waits as if alone.
        self.excess: Callable[[str, int], int] = _alone
        self._running: dict[str, asyncio.Task[None]] = {}
        self._again: set[str] = set()
        self._loop = asyncio.get_running_loop()

    def on_wake(self, keys: set[str]) -> None:
        """A Waker listener: dequeues each hosted flow type whose queue key is among `keys`."""
        for flow_type in self._queues:
            if queue_wake_key(flow_type) in keys:
                self.kick(flow_type)

    def kick_all(self) -> None:
        for flow_type in self._queues:
            self.kick(flow_type)

    def kick_threadsafe(self, flow_types: set[str]) -> None:
        """Claims the hosted ones of these flow types' queues, from any thread."""
        hosted = [flow_type for flow_type in flow_types if flow_type in self._queues]
        if hosted and not self._loop.is_closed():
            for flow_type in hosted:
                self._loop.call_soon_threadsafe(self.kick, flow_type)

    def kick_all_threadsafe(self) -> None:
        if not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self.kick_all)

    def kick(self, flow_type: str) -> None:
        if flow_type in self._running:
            self._again.add(flow_type)  # one more claim once this one is done
            return
        self._running[flow_type] = self._loop.create_task(self._dequeue(flow_type))

    async def _dequeue(self, flow_type: str) -> None:
        try:
            while True:
                self._again.discard(flow_type)
                # Every Worker of the flow type is woken at once: the less busy claims first.
                await asyncio.sleep(self._claim_delay(flow_type))
                try:
                    await asyncio.to_thread(claim_and_start, self._queues[flow_type])
                except Exception as error:  # the queue's poll takes them instead
                    log.debug("could not dequeue %s at once: %s", flow_type, error)
                if flow_type not in self._again:
                    return
        finally:
            del self._running[flow_type]

    async def close(self) -> None:
        tasks = list(self._running.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def _claim_delay(self, flow_type: str) -> float:
        """How long this Worker lets the others claim first: longer the more workflows
        (each running or hot session holds one) it runs beyond the least busy other Worker
        of the flow type; no time at all when it is the least busy, or alone."""
        running = running_workflow_count()
        return min(CLAIM_DELAY_PER_WORKFLOW * self.excess(flow_type, running), MAX_CLAIM_DELAY)


def _alone(flow_type: str, running: int) -> int:
    return 0
