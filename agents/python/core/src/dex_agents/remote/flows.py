"""Remote flows: `describe` a runner URL and register its flow as an AgentSessionFlow.

`remote_flow` is synchronous, like `AgentSessionFlow(...)`: flows are built when a module is
imported or a Worker starts, before any event loop runs, and a Worker must not start hosting
a flow whose runner it has not heard from. A runner need not be up before the Worker, though:
`remote_flow_or_pending` hands the Worker a `PendingRemoteFlow` instead, whose flow type the
Worker hosts at once and serves once the runner answers `describe` (its sessions' Steps wait
until then, and lose nothing).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any, Final

from ..errors import DexAgentsError, FlowLoadError, RunnerUnavailableError
from ..flow import AgentSessionFlow, AgentSessionOptions, CompactionPolicy
from ..runner import ToolPolicy
from .call import Endpoint, get_json, get_json_async
from .runner import RemoteCapabilities, RemoteRunner

logger = logging.getLogger("dex_agents.remote")

PROTOCOL_MAJOR_VERSION: Final = 1
TOKEN_ENV: Final = "DEX_AGENTS_RUNNER_TOKEN"
# While a runner is not up yet: how often and how long `remote_flow` asks again.
DESCRIBE_ATTEMPTS: Final = 10
DESCRIBE_RETRY_SECONDS: Final = 1.0


def describe(url: str, flow_type: str, *, token: str | None = None) -> Mapping[str, Any]:
    """The runner's `describe` entry of `flow_type` (its capabilities, its session options).

    FlowLoadError (naming the URL) for another protocol major version or a flow type the
    runner does not serve; RunnerUnavailableError while it cannot be reached."""
    with _describing(url):
        answer = get_json(Endpoint(url, token), "describe")
    return _flow_entry(url, flow_type, answer)


async def describe_async(
    url: str, flow_type: str, *, token: str | None = None
) -> Mapping[str, Any]:
    """`describe` on the running event loop (a Worker waiting for the runner)."""
    with _describing(url):
        answer = await get_json_async(Endpoint(url, token), "describe")
    return _flow_entry(url, flow_type, answer)


@contextlib.contextmanager
def _describing(url: str) -> Iterator[None]:
    """A describe call's errors: RunnerUnavailableError as it is (the runner may come), any
    other answer it cannot use as a FlowLoadError naming the URL."""
    try:
        yield
    except RunnerUnavailableError:
        raise
    except (DexAgentsError, ValueError) as error:
        raise FlowLoadError(f"the runner at {url} did not describe itself: {error}") from error


def _flow_entry(url: str, flow_type: str, answer: Any) -> Mapping[str, Any]:
    if not isinstance(answer, Mapping):
        raise FlowLoadError(f"the runner at {url} answered describe with a non-object")
    version = answer.get("protocol_version")
    if not isinstance(version, int) or version != PROTOCOL_MAJOR_VERSION:
        raise FlowLoadError(
            f"the runner at {url} speaks protocol version {version!r}; this dex-agents speaks "
            f"version {PROTOCOL_MAJOR_VERSION}: upgrade one side"
        )
    flows = answer.get("flows")
    flow = flows.get(flow_type) if isinstance(flows, Mapping) else None
    if not isinstance(flow, Mapping):
        served = ", ".join(sorted(flows)) if isinstance(flows, Mapping) else "none"
        raise FlowLoadError(
            f"the runner at {url} does not serve flow type {flow_type!r} (it serves: {served})"
        )
    return flow


# The session options a runner may give its flow in describe (`session_options`, seconds):
# what a TypeScript app sets as interruptDeadlineMs and maxDurableWaitMs.
_RUNNER_OPTION_FIELDS: Final = {
    "interrupt_deadline_seconds": "interrupt_deadline",
    "max_durable_wait_seconds": "max_durable_wait",
}


def runner_session_options(
    url: str, flow: Mapping[str, Any], options: AgentSessionOptions | None
) -> AgentSessionOptions | None:
    """`options` with what the runner's describe entry sets, where `options` (the Worker's
    own: remote_flow's argument, --remote-config) leaves the field unset."""
    given = flow.get("session_options")
    if not isinstance(given, Mapping) or not given:
        return options
    base = options if options is not None else AgentSessionOptions()
    changes: dict[str, Any] = {}
    for key, name in _RUNNER_OPTION_FIELDS.items():
        value = given.get(key)
        if value is None or getattr(base, name) is not None:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
            raise FlowLoadError(
                f"the runner at {url} gave session_options.{key} {value!r}: a positive number "
                "of seconds"
            )
        changes[name] = timedelta(seconds=float(value))
    return replace(base, **changes) if changes else options


def _token(token: str | None) -> str | None:
    return token if token is not None else os.environ.get(TOKEN_ENV) or None


def _described_flow(
    url: str,
    flow_type: str,
    options: AgentSessionOptions | None,
    token: str | None,
    entry: Mapping[str, Any],
) -> AgentSessionFlow:
    """The flow of the runner's describe `entry`: its capabilities, and the session options
    it gives filling what `options` leaves unset."""
    capabilities = RemoteCapabilities.from_wire(entry.get("capabilities") or {})
    runner = RemoteRunner(url, flow_type, token=token, capabilities=capabilities)
    options = runner_session_options(url, entry, options)
    try:
        return AgentSessionFlow(runner, flow_type=flow_type, options=options)
    except ValueError as error:  # options that need a capability the runner lacks
        raise FlowLoadError(f"the flow type {flow_type!r} served at {url}: {error}") from error


def remote_flow(
    url: str,
    flow_type: str,
    options: AgentSessionOptions | None = None,
    *,
    token: str | None = None,
    attempts: int = DESCRIBE_ATTEMPTS,
    retry_seconds: float = DESCRIBE_RETRY_SECONDS,
) -> AgentSessionFlow:
    """An AgentSessionFlow whose runner is served at `url` (token: the argument, else
    DEX_AGENTS_RUNNER_TOKEN). Asks `describe` up to `attempts` times while the runner is not
    up yet (logging that once), then raises FlowLoadError. The session options the runner
    describes (`session_options`) fill what `options` leaves unset. A Worker that need not
    wait for the runner before it starts takes `remote_flow_or_pending` instead."""
    token = _token(token)
    for attempt in range(1, attempts + 1):
        try:
            entry = describe(url, flow_type, token=token)
            break
        except RunnerUnavailableError as error:
            if attempt == attempts:
                raise FlowLoadError(
                    f"the runner of flow type {flow_type!r} at {url} is not reachable: {error}"
                ) from error
            if attempt == 1:
                logger.warning(
                    "waiting for the runner of %s at %s (up to %d attempts, %g s apart): %s",
                    flow_type,
                    url,
                    attempts,
                    retry_seconds,
                    error,
                )
            time.sleep(retry_seconds)
    return _described_flow(url, flow_type, options, token, entry)


class PendingRemoteFlow:
    """A remote flow whose runner did not answer `describe` yet.

    A Worker given one hosts its flow type from the start (it takes the flow type's Steps,
    which wait for the runner and lose nothing) and serves it once `ready` returns: `ready`
    asks `describe` every `retry_seconds`, logging one line while the runner is away and one
    when it answers. A runner that then refuses the flow type (another protocol version, a
    flow type it does not serve) raises FlowLoadError, which stops the Worker."""

    def __init__(
        self,
        url: str,
        flow_type: str,
        options: AgentSessionOptions | None = None,
        *,
        token: str | None = None,
        retry_seconds: float = DESCRIBE_RETRY_SECONDS,
    ) -> None:
        if not flow_type.strip():
            raise FlowLoadError("flow_type must not be blank")
        self.url = url
        self.flow_type = flow_type
        self.options = options
        self.token = _token(token)
        self.retry_seconds = retry_seconds

    def __repr__(self) -> str:
        return f"PendingRemoteFlow({self.url!r}, {self.flow_type!r})"

    @property
    def waiting_for(self) -> str:
        """What the flow waits for, as the Worker's log and /readyz say it."""
        return f"the runner of {self.flow_type} at {self.url}"

    async def ready(self) -> AgentSessionFlow:
        """The flow, once its runner answers `describe`."""
        logged = False
        while True:
            try:
                entry = await describe_async(self.url, self.flow_type, token=self.token)
            except RunnerUnavailableError as error:
                if not logged:
                    logger.warning(
                        "%s is not up yet; its sessions wait for it, asking every %g s (%s)",
                        self.waiting_for,
                        self.retry_seconds,
                        error,
                    )
                    logged = True
                await asyncio.sleep(self.retry_seconds)
                continue
            flow = _described_flow(self.url, self.flow_type, self.options, self.token, entry)
            logger.info("%s answers: serving %s", self.waiting_for, self.flow_type)
            return flow


def remote_flow_or_pending(
    url: str,
    flow_type: str,
    options: AgentSessionOptions | None = None,
    *,
    token: str | None = None,
) -> AgentSessionFlow | PendingRemoteFlow:
    """The flow when its runner answers `describe` now, else a PendingRemoteFlow that a
    Worker hosts at once and serves when the runner comes (`dex-agents worker --remote`).
    A runner that answers but refuses the flow type raises FlowLoadError at once."""
    token = _token(token)
    try:
        entry = describe(url, flow_type, token=token)
    except RunnerUnavailableError:
        return PendingRemoteFlow(url, flow_type, options, token=token)
    return _described_flow(url, flow_type, options, token, entry)


# -- the command line's --remote and --remote-config ----------------------------------------


def parse_remote(value: str) -> tuple[str, str]:
    """`FLOW=URL` as (flow type, URL)."""
    flow_type, sep, url = value.partition("=")
    if not sep or not flow_type.strip() or not url.strip():
        raise FlowLoadError(
            f"--remote takes FLOW=URL, such as TriageAgent=http://127.0.0.1:3000/dex, not {value!r}"
        )
    return flow_type.strip(), url.strip()


def remote_flows_from_config(path: str | Path, **describe_options: Any) -> list[AgentSessionFlow]:
    """The flows of a TOML file: `[flows.<FlowType>]` with `url` and AgentSessionOptions'
    plain-data fields (see the reference of `--remote-config`)."""
    return [
        remote_flow(url, flow_type, options, **describe_options)
        for flow_type, url, options in read_remote_config(path)
    ]


def read_remote_config(path: str | Path) -> list[tuple[str, str, AgentSessionOptions]]:
    """(flow type, URL, options) of each `[flows.<FlowType>]` table of a TOML file, checked
    without asking any runner."""
    try:
        data = tomllib.loads(Path(path).read_text())
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise FlowLoadError(f"cannot read the remote config {path}: {error}") from error
    flows = data.get("flows")
    if not isinstance(flows, dict) or not flows:
        raise FlowLoadError(f"{path} has no [flows.<FlowType>] table")
    result = []
    for flow_type, table in flows.items():
        if not isinstance(table, dict) or not isinstance(table.get("url"), str):
            raise FlowLoadError(f'{path}: [flows.{flow_type}] needs url = "http://..."')
        options = options_from_table(f"{path}: [flows.{flow_type}]", table)
        result.append((flow_type, table["url"], options))
    return result


_SECONDS_FIELDS: Final = {
    "interrupt_deadline_seconds": "interrupt_deadline",
    "max_durable_wait_seconds": "max_durable_wait",
    "model_call_timeout_seconds": "model_call_timeout",
    "tool_call_timeout_seconds": "tool_call_timeout",
}
_PLAIN_FIELDS: Final = (
    "default_tool_effect",
    "built_in_tools",
    "plan_mode_enabled",
    "retained_message_limit",
)


def options_from_table(where: str, table: Mapping[str, Any]) -> AgentSessionOptions:
    """AgentSessionOptions from a flow's TOML table; durations are given in seconds."""
    values: dict[str, Any] = {}
    known = {"url", "tool_policies", "compaction", *_SECONDS_FIELDS, *_PLAIN_FIELDS}
    unknown = sorted(set(table) - known)
    if unknown:
        raise FlowLoadError(
            f"{where}: unknown keys {', '.join(unknown)}; known: {', '.join(sorted(known))}"
        )
    for name in _PLAIN_FIELDS:
        if name in table:
            value = table[name]
            values[name] = tuple(value) if name == "built_in_tools" else value
    for key, name in _SECONDS_FIELDS.items():
        if key in table:
            values[name] = timedelta(seconds=float(table[key]))
    policies = table.get("tool_policies") or {}
    try:
        values["tool_policies"] = {
            tool: ToolPolicy(policy.get("effect"), policy.get("requires_approval"))
            for tool, policy in policies.items()
        }
        if "compaction" in table:
            values["compaction"] = CompactionPolicy(**table["compaction"])
        return AgentSessionOptions(**values)
    except (TypeError, ValueError, AttributeError) as error:
        raise FlowLoadError(f"{where}: {error}") from error
