"""Durable Claude Agent SDK sessions: a turn of the Claude Code harness runs in durable Steps,
write calls of its in-process SDK MCP tools in tool Steps of their own, its transcript kept in
the session's own records."""

from .runner import NO_CLI_RETRIES_ENV, QUIET_CLI_ENV, ClaudeAgentRunner, HarnessTurnError
from .store import RecordSessionStore

__all__ = [
    "NO_CLI_RETRIES_ENV",
    "QUIET_CLI_ENV",
    "ClaudeAgentRunner",
    "HarnessTurnError",
    "RecordSessionStore",
]
