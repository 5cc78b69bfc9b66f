"""One real Worker shared by the tests of a class, per database backend.

A Worker takes seconds to start; tests that do not kill it can share one. Subclass
`SharedWorkerSuite` (as `Test...`) with `app = WorkerApp(...)`, and take the `run` fixture:

    class TestSessions(SharedWorkerSuite):
        app = WorkerApp(worker_target="tests.apps.triage:flows", worker_cwd=ROOT)

        async def test_a_turn(self, run: SessionRun) -> None:
            run.model.enqueue(reply_text("Hi."))
            session = await run.client.start_session("TriageAgent", "Hello?")
            ...
            assert run.requests[0].body["messages"][-1]["content"] == "Hello?"

One database (SQLite, and Postgres when DEX_AGENTS_TEST_POSTGRES_URL is set), one scripted
model server, one tool-run log and one Worker serve the tests of a backend. Each test sees
only the model requests it caused (`run.requests`), finds the tool log empty, and leaves no
held request or unused reply behind. A test may SIGKILL the Worker and start it again
(`run.kill_and_restart()`): the restarted Worker recovers what it left in flight.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol, runtime_checkable

import pytest

from ..client import AgentClient
from .fixtures import BACKENDS, fresh_postgres_database
from .model_server import RecordedRequest, ScriptedModelServer
from .processes import WorkerProcess
from .scripted_runner import MODEL_URL_ENV
from .tool_log import ToolRunLog


class ModelView(Protocol):
    """What the model saw in one request, in the adapter's API shape."""

    def tool_outputs(self, request: RecordedRequest) -> dict[str, str]:
        """The tool results of the request, by tool call ID."""
        ...

    def user_texts(self, request: RecordedRequest) -> list[str]:
        """The texts of the request's user messages, in order."""
        ...


@runtime_checkable
class FeatureView(ModelView, Protocol):
    """A `ModelView` that also reads what the features suite (`features`) checks: the model
    named, the system instructions, the tools offered and the tool calls in the history."""

    def model(self, request: RecordedRequest) -> str:
        """The model the request names."""
        ...

    def instructions(self, request: RecordedRequest) -> str:
        """The system (or developer) instructions, their texts joined by blank lines."""
        ...

    def tool_names(self, request: RecordedRequest) -> list[str]:
        """The names of the function tools the request offers, in order."""
        ...

    def tool_call_ids(self, request: RecordedRequest) -> list[str]:
        """The IDs of the tool calls in the request's history, in order."""
        ...

    def first_input_text(self, request: RecordedRequest) -> str:
        """The text of the first message after the system instructions."""
        ...


_INSTRUCTION_ROLES = ("system", "developer")


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content)


class _ChatCompletions:
    def tool_outputs(self, request: RecordedRequest) -> dict[str, str]:
        messages = request.body["messages"]
        return {m["tool_call_id"]: _text_of(m["content"]) for m in messages if m["role"] == "tool"}

    def user_texts(self, request: RecordedRequest) -> list[str]:
        return [_text_of(m["content"]) for m in request.body["messages"] if m["role"] == "user"]

    def model(self, request: RecordedRequest) -> str:
        return str(request.body["model"])

    def instructions(self, request: RecordedRequest) -> str:
        messages = request.body["messages"]
        return "\n\n".join(
            _text_of(m["content"]) for m in messages if m["role"] in _INSTRUCTION_ROLES
        )

    def tool_names(self, request: RecordedRequest) -> list[str]:
        return [t["function"]["name"] for t in request.body.get("tools") or []]

    def tool_call_ids(self, request: RecordedRequest) -> list[str]:
        messages = request.body["messages"]
        return [c["id"] for m in messages for c in m.get("tool_calls") or []]

    def first_input_text(self, request: RecordedRequest) -> str:
        messages = request.body["messages"]
        first = next(m for m in messages if m["role"] not in _INSTRUCTION_ROLES)
        return _text_of(first.get("content") or "")


class _Responses:
    def tool_outputs(self, request: RecordedRequest) -> dict[str, str]:
        items = request.body["input"]
        return {
            i["call_id"]: _text_of(i["output"])
            for i in items
            if i.get("type") == "function_call_output"
        }

    def user_texts(self, request: RecordedRequest) -> list[str]:
        items = request.body["input"]
        return [_text_of(i["content"]) for i in items if i.get("role") == "user"]

    def model(self, request: RecordedRequest) -> str:
        return str(request.body["model"])

    def instructions(self, request: RecordedRequest) -> str:
        texts = [request.body["instructions"]] if request.body.get("instructions") else []
        items = request.body["input"]
        texts += [_text_of(i["content"]) for i in items if i.get("role") in _INSTRUCTION_ROLES]
        return "\n\n".join(texts)

    def tool_names(self, request: RecordedRequest) -> list[str]:
        tools = request.body.get("tools") or []
        return [t["name"] for t in tools if t.get("type") == "function"]

    def tool_call_ids(self, request: RecordedRequest) -> list[str]:
        items = request.body["input"]
        return [i["call_id"] for i in items if i.get("type") == "function_call"]

    def first_input_text(self, request: RecordedRequest) -> str:
        items = request.body["input"]
        first = next(i for i in items if i.get("role") not in _INSTRUCTION_ROLES)
        return _text_of(first.get("content") or first.get("output") or "")


chat_completions: FeatureView = _ChatCompletions()
"""Requests to /v1/chat/completions: `messages` with `tool` and `user` roles."""
responses: FeatureView = _Responses()
"""Requests to /v1/responses: `input` items, `function_call_output` for tool results."""


@dataclass(frozen=True)
class WorkerApp:
    """Where the shared Worker loads its flows, and how to read the model's requests."""

    worker_target: str
    """`module:attribute` of the flows, as `dex-agents worker` takes it."""
    worker_cwd: Path
    """The Worker's working directory (where `worker_target`'s module imports from)."""
    model_view: ModelView = chat_completions
    worker_env: Mapping[str, str] = field(default_factory=dict)
    """Extra environment of the Worker (the model URL and $TOOL_LOG are set already)."""


@dataclass
class SessionRun:
    """One test's view of the shared Worker, database, model server and tool-run log."""

    app: WorkerApp
    client: AgentClient
    model: ScriptedModelServer
    tool_log: ToolRunLog
    worker: WorkerProcess
    first_request: int

    @property
    def requests(self) -> list[RecordedRequest]:
        """The model requests this test caused, in order."""
        return self.model.requests[self.first_request :]

    def tool_outputs(self, index: int) -> dict[str, str]:
        return self.app.model_view.tool_outputs(self.requests[index])

    def user_texts(self, index: int) -> list[str]:
        return self.app.model_view.user_texts(self.requests[index])

    def phases(self, tool: str) -> list[str]:
        return [entry["phase"] for entry in self.tool_log.entries(tool)]

    def kill_and_restart(self) -> None:
        """SIGKILL the Worker's process group and start it again: it recovers its Steps."""
        self.worker.kill()
        self.worker.start()


class SharedWorkerSuite:
    """Subclass it as `Test...` with `app = WorkerApp(...)`; tests take the `run` fixture."""

    app: ClassVar[WorkerApp]
    model_names: ClassVar[Mapping[str, str]] = {}
    """The name the model sees for a tool the suite names, where it is another (a harness that
    serves the tools as MCP servers of its own, as the Claude Code CLI names them
    `mcp__<server>__<tool>`); records, events and interrupts carry it."""

    def model_tool_name(self, tool: str) -> str:
        """The name the model sees for `tool` (`model_names`, else the name itself)."""
        return self.model_names.get(tool, tool)

    @pytest.fixture(scope="class", params=BACKENDS)
    @classmethod
    def shared_database(
        cls, request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
    ) -> Iterator[str]:
        if request.param == "sqlite":
            yield f"sqlite:///{tmp_path_factory.mktemp('shared') / 'dex.sqlite'}"
            return
        yield from fresh_postgres_database(f"shared_{cls.__name__}")

    @pytest.fixture(scope="class")
    @classmethod
    def shared_model(cls, shared_database: str) -> Iterator[ScriptedModelServer]:
        with ScriptedModelServer() as server:
            yield server

    @pytest.fixture(scope="class")
    @classmethod
    def shared_tool_log(
        cls, shared_database: str, tmp_path_factory: pytest.TempPathFactory
    ) -> ToolRunLog:
        return ToolRunLog(tmp_path_factory.mktemp("shared-tools") / "tools.jsonl")

    @pytest.fixture(scope="class")
    @classmethod
    def shared_worker(
        cls,
        shared_database: str,
        shared_model: ScriptedModelServer,
        shared_tool_log: ToolRunLog,
        tmp_path_factory: pytest.TempPathFactory,
    ) -> Iterator[WorkerProcess]:
        env = {
            MODEL_URL_ENV: shared_model.base_url,
            "TOOL_LOG": str(shared_tool_log.path),
            # For apps whose client reads the environment (the OpenAI SDK's default client).
            "OPENAI_BASE_URL": shared_model.base_url,
            "OPENAI_API_KEY": "test",
            **cls.app.worker_env,
        }
        worker = WorkerProcess(
            cls.app.worker_target,
            database_url=shared_database,
            cwd=cls.app.worker_cwd,
            env=env,
            log_path=tmp_path_factory.mktemp("shared-worker") / "worker.log",
        )
        with worker:
            yield worker

    @pytest.fixture
    async def run(
        self,
        shared_database: str,
        shared_model: ScriptedModelServer,
        shared_tool_log: ToolRunLog,
        shared_worker: WorkerProcess,
    ) -> AsyncIterator[SessionRun]:
        if not shared_worker.running:  # a kill test failed between its kill and its start
            shared_worker.start()
        if shared_tool_log.path.exists():
            os.truncate(shared_tool_log.path, 0)
        client = AgentClient(shared_database)
        try:
            yield SessionRun(
                self.app,
                client,
                shared_model,
                shared_tool_log,
                shared_worker,
                len(shared_model.requests),
            )
        finally:
            await client.close()
            _drain(shared_model)


def _drain(model: ScriptedModelServer) -> None:
    """Leaves nothing of a failed test for the next one: no held request, no unused reply."""
    model.release()
    model.discard_pending()
