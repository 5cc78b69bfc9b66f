"""Remote flows: `describe` a runner URL and register its flow as an AgentSessionFlow.

`remote_flow` is synchronous, like `AgentSessionFlow(...)`: flows are built when a module is
imported or a Worker starts, before any event loop runs, and a Worker must not start hosting
a flow whose runner it has not heard from.
"""

from __future__ import annotations

import logging
import os
import time
import tomllib
from collections.abc import Mapping
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any, Final

from ..errors import DexAgentsError, FlowLoadError, RunnerUnavailableError
from ..flow import AgentSessionFlow, AgentSessionOptions, CompactionPolicy
from ..runner import ToolPolicy
from .call import Endpoint, get_json
from .runner import RemoteCapabilities, RemoteRunner

logger = logging.getLogger("dex_agents.remote")

PROTOCOL_MAJOR_VERSION: Final = 1
TOKEN_ENV: Final = "DEX_AGENTS_RUNNER_TOKEN"
# While a runner is not up yet: how often and how long a Worker's start-up asks again.
DESCRIBE_ATTEMPTS: Final = 10
DESCRIBE_RETRY_SECONDS: Final = 1.0


def describe(url: str, flow_type: str, *, token: str | None = None) -> RemoteCapabilities:
    """The capabilities the runner at `url` serves `flow_type` with.

    FlowLoadError (naming the URL) for another protocol major version or a flow type the
    runner does not serve; RunnerUnavailableError while it cannot be reached."""
    return RemoteCapabilities.from_wire(
        _describe_flow(url, flow_type, token).get("capabilities") or {}
    )


def _describe_flow(url: str, flow_type: str, token: str | None) -> Mapping[str, Any]:
    """The runner's `describe` entry of `flow_type` (see `describe`)."""
    try:
        answer = get_json(Endpoint(url, token), "describe")
    except RunnerUnavailableError:
        raise
    except (DexAgentsError, ValueError) as error:
        raise FlowLoadError(f"the runner at {url} did not describe itself: {error}") from error
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
    up yet, then raises FlowLoadError. The session options the runner describes
    (`session_options`) fill what `options` leaves unset."""
    token = token if token is not None else os.environ.get(TOKEN_ENV) or None
    for attempt in range(1, attempts + 1):
        try:
            flow = _describe_flow(url, flow_type, token)
            break
        except RunnerUnavailableError as error:
            if attempt == attempts:
                raise FlowLoadError(
                    f"the runner of flow type {flow_type!r} at {url} is not reachable: {error}"
                ) from error
            logger.warning(
                "waiting for the runner of %s at %s (attempt %d of %d): %s",
                flow_type,
                url,
                attempt,
                attempts,
                error,
            )
            time.sleep(retry_seconds)
    capabilities = RemoteCapabilities.from_wire(flow.get("capabilities") or {})
    runner = RemoteRunner(url, flow_type, token=token, capabilities=capabilities)
    options = runner_session_options(url, flow, options)
    return AgentSessionFlow(runner, flow_type=flow_type, options=options)


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
        result.append(remote_flow(table["url"], flow_type, options, **describe_options))
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
