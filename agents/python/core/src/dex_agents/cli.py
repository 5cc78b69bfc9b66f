"""The `dex-agents` command line."""

from __future__ import annotations

import asyncio
import logging
import signal

import click

from .worker import Worker, load_flows


@click.group()
def cli() -> None:
    """Durable agent sessions: run Workers, start sessions, inspect them."""


@cli.command()
@click.argument("target")
@click.option("--database-url", envvar="DEX_AGENTS_DATABASE_URL", default=None)
@click.option("--worker-id", envvar="DEX_AGENTS_WORKER_ID", default=None)
def worker(target: str, database_url: str | None, worker_id: str | None) -> None:
    """Run a Worker for the flows at TARGET (module:attribute)."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    flows = load_flows(target)
    runner = Worker(flows, database_url=database_url, worker_id=worker_id)

    async def run() -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, runner.stop)
        await runner.run()

    asyncio.run(run())


def main() -> None:
    cli()
