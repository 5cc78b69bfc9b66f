"""Durable Claude Agent SDK sessions: one turn of the Claude Code harness is one durable Step,
its transcript kept in the session's own records."""

from .runner import QUIET_CLI_ENV, ClaudeAgentRunner, HarnessTurnError
from .store import RecordSessionStore

__all__ = ["QUIET_CLI_ENV", "ClaudeAgentRunner", "HarnessTurnError", "RecordSessionStore"]
