"""Runners in other processes: a flow whose framework runner is served over HTTP.

    flow = remote_flow("http://127.0.0.1:3000/dex", "TriageAgent")
    # or, when the runner may come up after the Worker:
    flow = remote_flow_or_pending("http://127.0.0.1:3000/dex", "TriageAgent")

The engine (every Step, RPC and retry) stays in the Python Worker; the runner's methods are
calls to the URL, one POST each, answered with a stream of NDJSON lines.
"""

from ..errors import RemoteRunnerError, RunnerUnavailableError
from .flows import (
    PROTOCOL_MAJOR_VERSION,
    TOKEN_ENV,
    PendingRemoteFlow,
    describe,
    options_from_table,
    parse_remote,
    read_remote_config,
    remote_flow,
    remote_flow_or_pending,
    remote_flows_from_config,
)
from .runner import RemoteCapabilities, RemoteRunner, select_cutoff

__all__ = [
    "PROTOCOL_MAJOR_VERSION",
    "TOKEN_ENV",
    "PendingRemoteFlow",
    "RemoteCapabilities",
    "RemoteRunner",
    "RemoteRunnerError",
    "RunnerUnavailableError",
    "describe",
    "options_from_table",
    "parse_remote",
    "read_remote_config",
    "remote_flow",
    "remote_flow_or_pending",
    "remote_flows_from_config",
    "select_cutoff",
]
