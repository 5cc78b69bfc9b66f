"""End-to-end overhead of dex-agents per turn, against each framework alone and durable peers.

    cd agents/python/core/bench && uv sync --locked && uv run python bench_e2e.py [--turns N]
        [--json PATH] [--postgres URL] [--profile-worker PATH] [--frameworks pydantic_ai,...]
        [--before-src PATH] [--warm] [--embedded] [--only NAME ...]

One session of N turns (default 1,000) per contender, all interleaved turn by turn in one run:
turn k of every contender runs before turn k+1 of any (in an order rotated each turn), so
machine noise hits all alike. Each turn is the same conversation: a user message, one read tool
call, a text answer, from a scripted OpenAI-compatible model server on loopback (no latency)
that runs in a process of its own, so it costs none of the CPU measured here.

Contenders:
- dex-agents + Pydantic AI and dex-agents + OpenAI Agents: the real adapters in a Worker
  process (`dex-agents worker`), driven from this process by an AgentClient, as deployed; each
  on its own SQLite file (or, with --postgres, also on Postgres);
- Pydantic AI's DBOSAgent on SQLite (in this process, as DBOS runs);
- LangGraph via langchain `create_agent` with a SqliteSaver checkpointer (in this process),
  once invoked and once streaming the model's tokens (`stream_mode="messages"`, as a UI needs
  and as dex-agents does), both over LangGraph alone invoked;
- the baselines: each framework alone, in-process, no durability, same model server, the
  caller keeping the history: Pydantic AI, OpenAI Agents, LangGraph without a checkpointer;
  and Pydantic AI and OpenAI Agents alone streaming their model calls, as dex-agents does for
  its `text_delta` events;
- with --warm, dex-agents + each adapter and its runner in memory again with the adapter's
  warm path on (`warm_runs=8`: Pydantic AI's run kept open between a turn's model steps, the
  OpenAI Agents SDK's `RunState` kept instead of parsed again), so warm and cold compare within
  one run; and dex-agents + Pydantic AI, warm, with its model calls not streamed
  (`stream=False`: no `text_delta` events), like for like against the frameworks alone and
  LangGraph + `SqliteSaver` invoked;
- with --embedded, each dex-agents contender again with its Worker and its AgentClient in one
  process of their own (`async with Worker(flows), AgentClient()`, as an application embeds
  one), driven turn by turn over a pipe and timed in that process: no process boundary within
  the turn, as with LangGraph;
- with --before-src PATH, dex-agents + Pydantic AI (with --warm, warm) again with its Worker on
  the code in PATH (put first on its PYTHONPATH: another checkout's `dex_agents` and, to compare
  an adapter change, `dex_agents_pydantic_ai`), so a change and the code before it compare
  within one run;
- a breakdown, not a contender: each adapter's runner alone, driven in this process by
  `RunnerDriver` as the session Flow calls it (no engine, no database, no second process).
  Its overhead is what Step mode and the adapter cost over the framework alone; the rest of
  dex-agents' overhead is the engine's and the process boundary's.

Overhead of a turn = contender's turn time - its framework-alone time at the same turn. For
dex-agents, "vs stream" is the overhead over its framework alone streaming: the durability's
own cost, without streaming's. CPU of
a turn = CPU of this process (client) + of the contender's Worker process during the turn.
Bytes of a turn, over a window divided by its turns: "stored", growth of the pages in use of
the contender's SQLite database as a reader sees it (WAL included; on Postgres,
pg_database_size); "files", growth of the main file + WAL on disk (the WAL grows to its
checkpoint size, then is reused, so early windows count WAL writes). Figures are given for
windows around turns 10, 100 and 1,000 (those at most N) and at N. The client runs each turn
with `AgentClient.run_turn`, which sends the message and is woken by the commit that ends the
turn (on SQLite a Unix datagram from the committing Worker, on Postgres LISTEN/NOTIFY), then
reads the turn's events; that wait's latency and CPU count in dex-agents' figures.

Nothing here is a test: it prints figures for the README.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import importlib.metadata
import json
import multiprocessing
import multiprocessing.connection
import multiprocessing.process
import os
import platform
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import e2e_app  # noqa: E402
from harness import freeze_harness  # noqa: E402

# -- the scripted model server, in its own process ---------------------------------------------


def _serve_model(conn: multiprocessing.connection.Connection) -> None:
    from dex_agents.testing import ScriptedModelServer, reply_text, reply_tools

    server = ScriptedModelServer().start()
    conn.send(server.base_url)
    while True:
        call_id = conn.recv()
        if call_id is None:
            break
        left = server.pending
        with server._lock:  # the recorded requests would grow as the square of the turns
            server._requests.clear()
        freeze_harness()
        server.enqueue(reply_tools((call_id, "lookup", {"key": "k"})), reply_text(e2e_app.ANSWER))
        conn.send(left)
    server.stop()


def _spawn(
    target: Callable[..., None], *args: object
) -> tuple[multiprocessing.connection.Connection, multiprocessing.process.BaseProcess]:
    """Starts `target(child_end, *args)` in a fresh (spawned) process; returns this end of the
    pipe and the process."""
    context = multiprocessing.get_context("spawn")
    conn, child = context.Pipe()
    process = context.Process(target=target, args=(child, *args), daemon=True)
    process.start()
    return conn, process


class ModelServer:
    def __init__(self) -> None:
        self.conn, self.process = _spawn(_serve_model)
        self.base_url: str = self.conn.recv()

    def script_turn(self, call_id: str) -> None:
        """Enqueue one turn's replies: a tool call, then the answer."""
        self.conn.send(call_id)
        left = self.conn.recv()
        if left:
            raise RuntimeError(f"{left} scripted replies of the previous turn were not consumed")

    def stop(self) -> None:
        self.conn.send(None)
        self.process.join(5)


# -- contenders ---------------------------------------------------------------------------------


def _stored_bytes(path: Path) -> int:
    """Pages in use, as a reader sees the database (its WAL included): what is kept."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        free = conn.execute("PRAGMA freelist_count").fetchone()[0]
        size = conn.execute("PRAGMA page_size").fetchone()[0]
        return int((pages - free) * size)
    finally:
        conn.close()


def _file_bytes(path: Path) -> int:
    total = 0
    for suffix in ("", "-wal"):
        p = Path(str(path) + suffix)
        if p.exists():
            total += p.stat().st_size
    return total


@dataclass
class Contender:
    name: str
    baseline: str | None = None  # the name of its framework alone
    # dex-agents streams every model call (for text_delta events): its framework alone,
    # streaming too, is a second baseline that leaves only the durability's cost.
    streaming_baseline: str | None = None
    peer_of: str | None = None  # for a peer: the framework it stands on
    # The adapter's runner alone: a part of dex-agents' cost, not a contender to compare.
    in_memory: bool = False
    times: list[float] = field(default_factory=list)
    cpus: list[float] = field(default_factory=list)
    worker_cpus: list[float] = field(default_factory=list)  # the Worker's share of cpus
    sizes: list[int] = field(default_factory=list)  # database files' bytes after each turn
    stored: list[int] = field(default_factory=list)  # bytes in use after each turn

    async def setup(self, model: ModelServer) -> None: ...

    async def turn(self, k: int) -> None: ...

    def turn_time(self, outside: float) -> float:
        """The turn's time: as this process measured it, unless the contender timed it where
        it ran."""
        return outside

    def worker_cpu(self) -> float:
        return 0.0

    def db_bytes(self) -> int:
        return 0

    def stored_bytes(self) -> int:
        return 0

    async def close(self) -> None: ...


class PydanticAiAlone(Contender):
    async def setup(self, model: ModelServer) -> None:
        self.agent = e2e_app.pydantic_ai_agent(model.base_url)
        self.history: list[Any] = []

    async def turn(self, k: int) -> None:
        result = await self.agent.run(f"question {k}", message_history=self.history)
        assert result.output == e2e_app.ANSWER, result.output
        self.history = result.all_messages()


class PydanticAiAloneStreaming(PydanticAiAlone):
    async def turn(self, k: int) -> None:
        async def consume(_ctx: Any, events: Any) -> None:
            async for _ in events:
                pass

        result = await self.agent.run(
            f"question {k}", message_history=self.history, event_stream_handler=consume
        )
        assert result.output == e2e_app.ANSWER, result.output
        self.history = result.all_messages()


class OpenAIAgentsAlone(Contender):
    async def setup(self, model: ModelServer) -> None:
        self.agent = e2e_app.openai_agents_agent()
        self.run_config = e2e_app.openai_agents_run_config(model.base_url)
        self.items: list[Any] = []

    async def turn(self, k: int) -> None:
        from agents import Runner

        items = [*self.items, {"role": "user", "content": f"question {k}"}]
        result = await Runner.run(self.agent, items, run_config=self.run_config)
        assert result.final_output == e2e_app.ANSWER, result.final_output
        self.items = result.to_input_list()


class OpenAIAgentsAloneStreaming(OpenAIAgentsAlone):
    async def turn(self, k: int) -> None:
        from agents import Runner

        items = [*self.items, {"role": "user", "content": f"question {k}"}]
        result = Runner.run_streamed(self.agent, items, run_config=self.run_config)
        async for _ in result.stream_events():
            pass
        assert result.final_output == e2e_app.ANSWER, result.final_output
        self.items = result.to_input_list()


def _langchain_agent(base_url: str, checkpointer: Any = None) -> Any:
    from langchain.agents import create_agent
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from pydantic import SecretStr

    @tool
    def lookup(key: str) -> str:
        """Look up a value."""
        return e2e_app.lookup_value(key)

    model = ChatOpenAI(
        model="gpt-test", base_url=base_url, api_key=SecretStr("test"), max_retries=0
    )
    return create_agent(
        model, tools=[lookup], system_prompt=e2e_app.INSTRUCTIONS, checkpointer=checkpointer
    )


class LangGraphAlone(Contender):
    async def setup(self, model: ModelServer) -> None:
        self.agent = _langchain_agent(model.base_url)
        self.messages: list[Any] = []

    async def turn(self, k: int) -> None:
        from langchain_core.messages import HumanMessage

        messages = [*self.messages, HumanMessage(f"question {k}")]
        result = self.agent.invoke({"messages": messages})
        assert result["messages"][-1].content == e2e_app.ANSWER
        self.messages = result["messages"]


class LangGraphSqlite(Contender):
    def __init__(self, name: str, path: Path, **kw: Any) -> None:
        super().__init__(name, **kw)
        self.path = path

    async def setup(self, model: ModelServer) -> None:
        from langgraph.checkpoint.sqlite import SqliteSaver

        self.conn = sqlite3.connect(self.path, check_same_thread=False)
        self.agent = _langchain_agent(model.base_url, SqliteSaver(self.conn))
        self.config = {"configurable": {"thread_id": "bench-thread"}}

    async def turn(self, k: int) -> None:
        from langchain_core.messages import HumanMessage

        result = self.agent.invoke({"messages": [HumanMessage(f"question {k}")]}, self.config)
        assert result["messages"][-1].content == e2e_app.ANSWER

    def db_bytes(self) -> int:
        return _file_bytes(self.path)

    def stored_bytes(self) -> int:
        return _stored_bytes(self.path)

    async def close(self) -> None:
        self.conn.close()


class LangGraphSqliteStreaming(LangGraphSqlite):
    """LangGraph + SqliteSaver streaming the model's tokens (`stream_mode="messages"`), as a UI
    needs and as dex-agents always does for its `text_delta` events."""

    async def turn(self, k: int) -> None:
        from langchain_core.messages import HumanMessage

        state: dict[str, Any] = {}
        tokens = 0
        stream = self.agent.stream(
            {"messages": [HumanMessage(f"question {k}")]},
            self.config,
            stream_mode=["messages", "values"],
        )
        for mode, chunk in stream:
            if mode == "messages":
                tokens += 1
            else:
                state = chunk
        assert tokens, "no token streamed"
        assert state["messages"][-1].content == e2e_app.ANSWER


class DBOSAgentPeer(Contender):
    """Pydantic AI's DBOSAgent: each turn is a DBOS workflow, model and tool calls its steps."""

    def __init__(self, name: str, path: Path, **kw: Any) -> None:
        super().__init__(name, **kw)
        self.path = path

    async def setup(self, model: ModelServer) -> None:
        from dbos import DBOS

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from pydantic_ai.durable_exec.dbos import DBOSAgent

            DBOS(
                config={
                    "name": "bench-dbos-agent",
                    "system_database_url": f"sqlite:///{self.path}",
                    "log_level": "WARNING",
                }
            )
            self.agent = DBOSAgent(e2e_app.pydantic_ai_agent(model.base_url, name="bench_dbos"))
        DBOS.launch()
        self.history: list[Any] = []

    async def turn(self, k: int) -> None:
        result = await self.agent.run(f"question {k}", message_history=self.history)
        assert result.output == e2e_app.ANSWER, result.output
        self.history = result.all_messages()

    def db_bytes(self) -> int:
        return _file_bytes(self.path)

    def stored_bytes(self) -> int:
        return _stored_bytes(self.path)

    async def close(self) -> None:
        from dbos import DBOS

        DBOS.destroy()


class RunnerInMemory(Contender):
    """The adapter's runner driven in this process by `RunnerDriver`, as the session Flow
    calls it, with no engine, database or second process: what Step mode and the adapter cost
    over the framework alone, apart from the engine's share."""

    def __init__(self, name: str, flows: str, **kw: Any) -> None:
        super().__init__(name, in_memory=True, **kw)
        self.flows = flows

    async def setup(self, model: ModelServer) -> None:
        from dex_agents.testing import MODEL_URL_ENV
        from dex_agents.testing.driver import RunnerDriver

        os.environ[MODEL_URL_ENV] = model.base_url
        (flow,) = getattr(e2e_app, self.flows)
        self.driver = RunnerDriver(flow.runner, tool_policies=dict(flow.options.tool_policies))

    async def turn(self, k: int) -> None:
        result = await self.driver.turn(f"question {k}")
        text = result.final.new_messages[-1].text
        assert text == e2e_app.ANSWER, text


class DexAgents(Contender):
    """A Worker process hosting the Flow; this process drives the session with an AgentClient."""

    def __init__(
        self,
        name: str,
        target: str,
        flow_type: str,
        url: str,
        worker_env: dict[str, str] | None = None,
        **kw: Any,
    ) -> None:
        super().__init__(name, **kw)
        self.target, self.flow_type, self.url = target, flow_type, url
        self.worker_env = worker_env or {}

    async def setup(self, model: ModelServer) -> None:
        from dex_agents import AgentClient
        from dex_agents.testing import MODEL_URL_ENV, WorkerProcess

        self.worker = WorkerProcess(
            self.target,
            database_url=self.url,
            env={
                MODEL_URL_ENV: model.base_url,
                "DEX_AGENTS_WORKER_ID": f"bench-{uuid.uuid4().hex[:6]}",
                **self.worker_env,
            },
            cwd=HERE,
        ).start()
        assert self.worker.process is not None
        self.proc = psutil.Process(self.worker.process.pid)
        self.client = AgentClient(self.url)
        self.session = await self.client.start_session(self.flow_type)
        await self.client.wait_for(self.session, lambda s: s.state is not None, timeout=60)

    async def turn(self, k: int) -> None:
        result = await self.client.run_turn(self.session, f"question {k}", timeout=120)
        if result.status != "completed":
            raise RuntimeError(f"{self.name}: turn {k} {result.status}: {result.error}")

    def worker_cpu(self) -> float:
        times = self.proc.cpu_times()
        return float(times.user + times.system + times.children_user + times.children_system)

    def stored_bytes(self) -> int:
        if self.url.startswith("sqlite:///"):
            return _stored_bytes(Path(self.url.removeprefix("sqlite:///")))
        return self.db_bytes()

    def db_bytes(self) -> int:
        if self.url.startswith("sqlite:///"):
            return _file_bytes(Path(self.url.removeprefix("sqlite:///")))
        import sqlalchemy as sa

        if not hasattr(self, "_pg"):
            self._pg = sa.create_engine(self.url)
        with self._pg.connect() as conn:
            return int(
                conn.execute(sa.text("select pg_database_size(current_database())")).scalar_one()
            )

    async def close(self) -> None:
        await self.client.close()
        self.worker.stop()


def _serve_embedded(conn: multiprocessing.connection.Connection, target: str, url: str) -> None:
    asyncio.run(_embedded(conn, target, url))


async def _embedded(conn: multiprocessing.connection.Connection, target: str, url: str) -> None:
    """A Worker hosting the flows of `target` (`e2e_app:<name>`) inside the process that drives
    the session, as `async with Worker(flows)` runs one in an application: each turn timed
    here, where it runs."""
    from dex_agents import AgentClient, Worker

    (flow,) = getattr(e2e_app, target.partition(":")[2])
    loop = asyncio.get_running_loop()
    async with Worker([flow], database_url=url), AgentClient(url) as client:
        session = await client.start_session(flow.flow_type)
        await client.wait_for(session, lambda s: s.state is not None, timeout=60)
        conn.send(os.getpid())
        # Waits on a thread, so the Worker's loop runs between turns as in an application.
        while (k := await loop.run_in_executor(None, conn.recv)) is not None:
            started = time.perf_counter()
            result = await client.run_turn(session, f"question {k}", timeout=120)
            conn.send((time.perf_counter() - started, result.status, result.error))


class Embedded(DexAgents):
    """The Worker and the AgentClient in one process of their own (`async with Worker(flows),
    AgentClient()`, the README's embedded form), driven turn by turn over a pipe: the
    configuration that, like LangGraph's, keeps the turn in the caller's process."""

    async def setup(self, model: ModelServer) -> None:
        from dex_agents.testing import MODEL_URL_ENV

        os.environ[MODEL_URL_ENV] = model.base_url  # inherited by the spawned process
        self.conn, self.process = _spawn(_serve_embedded, self.target, self.url)
        self.proc = psutil.Process(self.conn.recv())
        self.inside = 0.0

    async def turn(self, k: int) -> None:
        self.conn.send(k)
        self.inside, status, error = self.conn.recv()
        if status != "completed":
            raise RuntimeError(f"{self.name}: turn {k} {status}: {error}")

    def turn_time(self, outside: float) -> float:
        return float(self.inside)

    async def close(self) -> None:
        self.conn.send(None)
        self.process.join(timeout=30)


# -- the run --------------------------------------------------------------------------------


def _own_cpu() -> float:
    t = os.times()
    return t.user + t.system


async def run(args: argparse.Namespace) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix="dex-bench-e2e-"))
    contenders: list[Contender] = [
        PydanticAiAlone("Pydantic AI alone"),
        OpenAIAgentsAlone("OpenAI Agents alone"),
        LangGraphAlone("LangGraph alone"),
        PydanticAiAloneStreaming("Pydantic AI alone, streaming"),
        OpenAIAgentsAloneStreaming("OpenAI Agents alone, streaming"),
        DexAgents(
            "dex-agents + Pydantic AI",
            "e2e_app:pydantic_ai_flows",
            "BenchPydanticAi",
            f"sqlite:///{tmp / 'dex-pydantic-ai.sqlite'}",
            baseline="Pydantic AI alone",
            streaming_baseline="Pydantic AI alone, streaming",
        ),
        DexAgents(
            "dex-agents + OpenAI Agents",
            "e2e_app:openai_agents_flows",
            "BenchOpenAIAgents",
            f"sqlite:///{tmp / 'dex-openai-agents.sqlite'}",
            baseline="OpenAI Agents alone",
            streaming_baseline="OpenAI Agents alone, streaming",
        ),
        RunnerInMemory(
            "Pydantic AI runner in memory",
            "pydantic_ai_flows",
            baseline="Pydantic AI alone",
            streaming_baseline="Pydantic AI alone, streaming",
        ),
        RunnerInMemory(
            "OpenAI Agents runner in memory",
            "openai_agents_flows",
            baseline="OpenAI Agents alone",
            streaming_baseline="OpenAI Agents alone, streaming",
        ),
        DBOSAgentPeer(
            "Pydantic AI DBOSAgent",
            tmp / "dbos-agent.sqlite",
            baseline="Pydantic AI alone",
            peer_of="Pydantic AI",
        ),
        LangGraphSqlite(
            "LangGraph + SqliteSaver",
            tmp / "langgraph.sqlite",
            baseline="LangGraph alone",
            peer_of="LangGraph",
        ),
        LangGraphSqliteStreaming(
            "LangGraph + SqliteSaver, streaming",
            tmp / "langgraph-streaming.sqlite",
            baseline="LangGraph alone",
            peer_of="LangGraph",
        ),
    ]
    if args.warm:
        contenders[6:6] = [
            DexAgents(
                "dex-agents + Pydantic AI, warm",
                "e2e_app:pydantic_ai_warm_flows",
                "BenchPydanticAiWarm",
                f"sqlite:///{tmp / 'dex-pydantic-ai-warm.sqlite'}",
                baseline="Pydantic AI alone",
                streaming_baseline="Pydantic AI alone, streaming",
            ),
            RunnerInMemory(
                "Pydantic AI runner in memory, warm",
                "pydantic_ai_warm_flows",
                baseline="Pydantic AI alone",
                streaming_baseline="Pydantic AI alone, streaming",
            ),
            DexAgents(
                "dex-agents + Pydantic AI, warm, unstreamed",
                "e2e_app:pydantic_ai_warm_unstreamed_flows",
                "BenchPydanticAiWarmUnstreamed",
                f"sqlite:///{tmp / 'dex-pydantic-ai-warm-unstreamed.sqlite'}",
                baseline="Pydantic AI alone",
            ),
            DexAgents(
                "dex-agents + OpenAI Agents, warm",
                "e2e_app:openai_agents_warm_flows",
                "BenchOpenAIAgentsWarm",
                f"sqlite:///{tmp / 'dex-openai-agents-warm.sqlite'}",
                baseline="OpenAI Agents alone",
                streaming_baseline="OpenAI Agents alone, streaming",
            ),
            RunnerInMemory(
                "OpenAI Agents runner in memory, warm",
                "openai_agents_warm_flows",
                baseline="OpenAI Agents alone",
                streaming_baseline="OpenAI Agents alone, streaming",
            ),
        ]
    if args.embedded:
        # Each dex-agents contender on SQLite again, its Worker in the driving process.
        contenders += [
            Embedded(
                f"{c.name}, embedded",
                c.target,
                c.flow_type,
                f"sqlite:///{tmp / (c.flow_type + '-embedded.sqlite')}",
                baseline=c.baseline,
                streaming_baseline=c.streaming_baseline,
            )
            for c in contenders
            if type(c) is DexAgents
        ]
    if args.before_src:
        # The same contender, its Worker on another checkout's engine (the client is ours);
        # with --warm, the warm one.
        warm = "_warm" if args.warm else ""
        contenders.insert(
            6,
            DexAgents(
                f"dex-agents + Pydantic AI{', warm' if args.warm else ''}, before",
                f"e2e_app:pydantic_ai{warm}_flows",
                f"BenchPydanticAi{'Warm' if args.warm else ''}",
                f"sqlite:///{tmp / 'dex-pydantic-ai-before.sqlite'}",
                worker_env={"PYTHONPATH": str(Path(args.before_src).resolve())},
                baseline="Pydantic AI alone",
                streaming_baseline="Pydantic AI alone, streaming",
            ),
        )
    contenders = [c for c in contenders if _framework(c.name) in args.frameworks]
    if args.only:
        contenders = _only(contenders, args.only)
    if args.postgres and "pydantic_ai" in args.frameworks:
        contenders.insert(
            7,
            DexAgents(
                "dex-agents + Pydantic AI (Postgres)",
                "e2e_app:pydantic_ai_flows",
                "BenchPydanticAi",
                args.postgres,
                baseline="Pydantic AI alone",
                streaming_baseline="Pydantic AI alone, streaming",
            ),
        )
    model = ModelServer()
    profiler: subprocess.Popen[bytes] | None = None
    try:
        for c in contenders:
            await c.setup(model)
        if args.profile_worker:
            target = next(c for c in contenders if isinstance(c, DexAgents))
            profiler = subprocess.Popen(
                [
                    str(Path(sys.executable).with_name("py-spy")),
                    "record",
                    "--pid",
                    str(target.proc.pid),
                    "--format",
                    "raw",
                    "--rate",
                    "200",
                    "--nonblocking",
                    "-o",
                    args.profile_worker,
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            await asyncio.sleep(1.0)
        started = time.monotonic()
        n = len(contenders)
        for k in range(1, args.turns + 1):
            for i in range(n):
                c = contenders[(i + k) % n]
                model.script_turn(f"call_{k}")
                freeze_harness()
                cpu0, wcpu0 = _own_cpu(), c.worker_cpu()
                t0 = time.perf_counter()
                await c.turn(k)
                elapsed = c.turn_time(time.perf_counter() - t0)
                c.times.append(elapsed)
                worker_cpu = c.worker_cpu() - wcpu0
                c.cpus.append(_own_cpu() - cpu0 + worker_cpu)
                c.worker_cpus.append(worker_cpu)
                c.sizes.append(c.db_bytes())
                c.stored.append(c.stored_bytes())
            if k % max(1, args.turns // 20) == 0 or k == args.turns:
                print(
                    f"  turn {k}/{args.turns} ({time.monotonic() - started:.0f} s)", file=sys.stderr
                )
        if profiler is not None:
            profiler.send_signal(2)
            profiler.wait(60)
    finally:
        for c in contenders:
            try:
                await c.close()
            except Exception as exc:
                print(f"closing {c.name}: {exc}", file=sys.stderr)
        model.stop()
    return report(contenders, args, time.monotonic() - started)


FRAMEWORKS = ("pydantic_ai", "openai_agents", "langgraph")


def _framework(name: str) -> str:
    """The framework a contender stands on, by its name (peers with their framework)."""
    if "Pydantic AI" in name:
        return "pydantic_ai"
    if "OpenAI Agents" in name:
        return "openai_agents"
    return "langgraph"


def _frameworks(text: str) -> tuple[str, ...]:
    chosen = tuple(part.strip() for part in text.split(",") if part.strip())
    unknown = sorted(set(chosen) - set(FRAMEWORKS))
    if unknown or not chosen:
        raise argparse.ArgumentTypeError(
            f"expected a comma-separated subset of {', '.join(FRAMEWORKS)}, not {text!r}"
        )
    return chosen


def _only(contenders: list[Contender], names: list[str]) -> list[Contender]:
    """The named contenders and their frameworks alone (not streaming, unless named)."""
    known = {c.name for c in contenders}
    unknown = sorted(set(names) - known)
    if unknown:
        raise SystemExit(
            f"--only: no contender named {', '.join(map(repr, unknown))} with these options; "
            f"there are: {', '.join(sorted(known))}"
        )
    kept = {c.baseline for c in contenders if c.name in names} | set(names)
    chosen = [c for c in contenders if c.name in kept]
    for c in chosen:
        if c.streaming_baseline not in kept:
            c.streaming_baseline = None
    return chosen


def _windows(turns: int) -> list[tuple[str, int, int]]:
    out: list[tuple[str, int, int]] = []
    for target, half in ((10, 5), (100, 10), (1000, 10), (10000, 10)):
        if target > turns:
            break
        lo, hi = target - half + 1, min(turns, target + half)
        if hi - lo + 1 < 2 * half:
            lo = max(1, hi - 2 * half + 1)
        out.append((f"~{target}", lo, hi))
    if not out or out[-1][2] < turns:
        out.append((f"~{turns}", max(1, turns - 19), turns))
    return out


def _pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(q * (len(s) - 1))))]


def report(contenders: list[Contender], args: argparse.Namespace, seconds: float) -> dict[str, Any]:
    by_name = {c.name: c for c in contenders}
    windows = _windows(args.turns)
    result: dict[str, Any] = {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "turns": args.turns,
        "seconds": round(seconds, 1),
        "machine": (
            f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}"
        ),
        "versions": {
            p: importlib.metadata.version(p)
            for p in (
                "dex-agents",
                "pydantic-ai-slim",
                "openai-agents",
                "dbos",
                "langgraph",
                "langchain",
                "langgraph-checkpoint-sqlite",
                "openai",
            )
        },
        "windows": {},
    }
    for label, lo, hi in windows:
        rows: dict[str, Any] = {}
        for c in contenders:
            sl = slice(lo - 1, hi)
            times = c.times[sl]
            row: dict[str, Any] = {
                "turn_ms_median": statistics.median(times) * 1000,
                "cpu_ms_per_turn": statistics.mean(c.cpus[sl]) * 1000,
                "worker_cpu_ms_per_turn": statistics.mean(c.worker_cpus[sl]) * 1000,
            }
            if c.baseline:
                base = by_name[c.baseline].times[sl]
                over = [a - b for a, b in zip(times, base, strict=True)]
                row["overhead_ms_median"] = statistics.median(over) * 1000
                row["overhead_ms_p95"] = _pct(over, 0.95) * 1000
                if c.streaming_baseline:
                    streamed = by_name[c.streaming_baseline].times[sl]
                    row["overhead_vs_streaming_ms_median"] = (
                        statistics.median(a - b for a, b in zip(times, streamed, strict=True))
                        * 1000
                    )
                base_cpu = by_name[c.baseline].cpus[sl]
                row["cpu_overhead_ms_per_turn"] = (
                    statistics.mean(c.cpus[sl]) - statistics.mean(base_cpu)
                ) * 1000
                before = c.sizes[lo - 2] if lo >= 2 else 0
                row["file_bytes_per_turn"] = (c.sizes[hi - 1] - before) / (hi - lo + 1)
                before = c.stored[lo - 2] if lo >= 2 else 0
                row["bytes_per_turn"] = (c.stored[hi - 1] - before) / (hi - lo + 1)
            rows[c.name] = row
        result["windows"][f"{label} (turns {lo}-{hi})"] = rows
    print_table(result, contenders)
    return result


def print_table(result: dict[str, Any], contenders: list[Contender]) -> None:
    print(
        f"\nEnd-to-end, one session of {result['turns']} turns per contender, interleaved "
        f"({result['seconds']} s; {result['machine']})"
    )
    print("versions: " + ", ".join(f"{k} {v}" for k, v in result["versions"].items()))
    durable = [c for c in contenders if c.baseline]
    peers = [c for c in durable if c.peer_of]
    head = (
        f"{'contender':44} {'turn ms':>8} {'overhead ms':>12} {'p95 ms':>8} {'vs stream':>9} "
        f"{'CPU ms':>8} {'Worker':>7} {'CPU over':>9} {'stored B':>10} {'files B':>10}"
    )
    for window, rows in result["windows"].items():
        print(f"\n-- turns {window}")
        print(head)
        for c in contenders:
            r = rows[c.name]
            if c.baseline:
                streamed = r.get("overhead_vs_streaming_ms_median")
                print(
                    f"{c.name:44} {r['turn_ms_median']:8.1f} {r['overhead_ms_median']:12.1f} "
                    f"{r['overhead_ms_p95']:8.1f} "
                    f"{'' if streamed is None else f'{streamed:.1f}':>9} "
                    f"{r['cpu_ms_per_turn']:8.1f} "
                    f"{r['worker_cpu_ms_per_turn']:7.1f} "
                    f"{r['cpu_overhead_ms_per_turn']:9.1f} {r['bytes_per_turn']:10,.0f} "
                    f"{r['file_bytes_per_turn']:10,.0f}"
                )
            else:
                print(
                    f"{c.name:44} {r['turn_ms_median']:8.1f} {'(baseline)':>12} {'':>8} {'':>9} "
                    f"{r['cpu_ms_per_turn']:8.1f}"
                )
        for c in durable:
            if c.peer_of or c.in_memory:
                continue
            for p in peers:
                a, b = rows[c.name], rows[p.name]
                ratios = [
                    _ratio(a["overhead_ms_median"], b["overhead_ms_median"]),
                    _ratio(a["cpu_overhead_ms_per_turn"], b["cpu_overhead_ms_per_turn"]),
                    _ratio(a["bytes_per_turn"], b["bytes_per_turn"]),
                ]
                print(
                    f"  {c.name} / {p.name}: overhead {ratios[0]}, "
                    f"CPU overhead {ratios[1]}, bytes {ratios[2]}"
                )


def _ratio(a: float, b: float) -> str:
    # CPU times tick by 10 ms: a peer's CPU overhead in a short window can round to ~0.
    return f"{a / b:.2f}x" if b >= 0.05 else "n/a"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    parser.add_argument(
        "--postgres", metavar="URL", help="also dex-agents + Pydantic AI on Postgres"
    )
    parser.add_argument(
        "--frameworks",
        type=_frameworks,
        default=FRAMEWORKS,
        help="only the contenders on these frameworks, with their baselines and peers "
        f"(default: {','.join(FRAMEWORKS)}); a 1,000-turn run of OpenAI Agents alone takes hours",
    )
    parser.add_argument(
        "--warm",
        action="store_true",
        help="also dex-agents + each adapter and its runner in memory with the adapter's warm "
        "path on (warm_runs=8), beside the cold ones",
    )
    parser.add_argument(
        "--embedded",
        action="store_true",
        help="also each dex-agents contender with its Worker in the process that drives the "
        "session (`async with Worker(flows), AgentClient()`), not in a process of its own",
    )
    parser.add_argument(
        "--only",
        action="append",
        metavar="NAME",
        help="only this contender, by name (repeat for more), with its framework alone (for "
        "a long run: e.g. --warm --only 'dex-agents + Pydantic AI, warm')",
    )
    parser.add_argument(
        "--profile-worker",
        metavar="PATH",
        help="py-spy the dex-agents + Pydantic AI Worker into PATH (collapsed stacks)",
    )
    parser.add_argument(
        "--before-src",
        metavar="PATH",
        help="also dex-agents + Pydantic AI (with --warm, warm) with its Worker on the code in "
        "PATH (a folder on PYTHONPATH: the core's and the adapter's packages of another "
        "checkout, e.g. `git archive` of an earlier commit), to compare a change in one run",
    )
    args = parser.parse_args()
    result = asyncio.run(run(args))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
