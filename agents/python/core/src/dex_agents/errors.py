"""Every error dex-agents raises on purpose derives from `DexAgentsError`.

Errors about what a caller sent also derive from `ValueError` (or `LookupError` for a thing
that does not exist), so code written against the built-in classes keeps working. Nothing in
this module imports the rest of the package.
"""

from __future__ import annotations


class DexAgentsError(Exception):
    """The common base of every error dex-agents raises on purpose."""


# Warnings ---------------------------------------------------------------------------------


class FlowTypeNotHostedWarning(UserWarning):
    """A session started, but no live Worker hosts its flow type yet: it waits, intact,
    until one starts."""


# What a caller sent ---------------------------------------------------------------------


class InvalidInputError(DexAgentsError, ValueError):
    """An RPC argument is not acceptable; nothing was committed."""

    # The name of the refused argument (`session_settings`, `message.text`), when one is.
    argument: str | None = None

    def __init__(self, message: str, argument: str | None = None) -> None:
        super().__init__(message)
        self.argument = argument


class MessageTooLargeError(InvalidInputError):
    """A text is longer than its limit allows."""


class InvalidResumeTokenError(InvalidInputError):
    """A resume token (an event offset, or a UI stream token) that this session's stream did
    not hand out: not one at all, or beyond the session's last event."""


class SessionExistsError(InvalidInputError):
    """`start_session` was given the ID of a session that exists already."""


class InvalidToolEffectError(DexAgentsError, ValueError):
    """A tool's own metadata declares an effect that is not one of the four effects."""


class NotFoundError(DexAgentsError, LookupError):
    """A session, a channel message or another named thing does not exist."""


class SessionNotFoundError(NotFoundError):
    """No session has this ID."""

    session_id: str | None = None

    def __init__(self, session_id: str) -> None:
        super().__init__(
            f"no agent session {session_id!r}: check the ID with `dex-agents sessions`"
        )
        self.session_id = session_id


class ChannelMessageNotFoundError(NotFoundError):
    """No queued channel message has this ID."""


# The database -----------------------------------------------------------------------------


class NotInToolStepError(DexAgentsError, LookupError):
    """`current_tool_execution()` was called outside a tool Step."""


class DatabaseError(DexAgentsError):
    """The database cannot be used as configured."""


class DatabaseNotFoundError(DatabaseError, ValueError):
    """The SQLite file a client was pointed at does not exist."""


class DatabaseUnavailableError(DatabaseError, RuntimeError):
    """The database could not be reached within the time the caller allows."""


class SchemaTooNewError(DatabaseError):
    """The database was migrated by a newer dex-agents than this one; nothing was changed."""


class BackupError(DatabaseError):
    """A backup could not be made as asked; nothing was written where it was to go."""


# Workers ----------------------------------------------------------------------------------


class WorkerError(DexAgentsError):
    """A Worker cannot start as configured."""


class WorkerIdInUseError(WorkerError):
    """A live Worker already holds this Worker ID."""


class FlowLoadError(WorkerError, ValueError):
    """A `module:attribute` target does not import or does not hold AgentSessionFlows."""


# Runners in other processes ----------------------------------------------------------------


class RunnerUnavailableError(DexAgentsError):
    """A runner in another process could not be reached, or did not accept the call.

    The call never started at the runner, so a Step retries it with backoff without counting
    it as a started attempt: a single-attempt tool does not become outcome_unknown."""


class RemoteRunnerError(DexAgentsError):
    """A runner in another process failed a call after it started; `stack` is its stack text.

    When the runner's error was an HTTP error of its model provider, `status_code` is its
    status and `response_headers` the answer's `Retry-After` headers: RunModel judges it as
    it judges a model error raised in this process (retried or not, and when).
    """

    stack: str | None = None
    status_code: int | None = None
    response_headers: dict[str, str]

    def __init__(
        self,
        message: str,
        stack: str | None = None,
        *,
        status_code: int | None = None,
        response_headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.stack = stack
        self.status_code = status_code
        self.response_headers = response_headers or {}


# Tool sources -----------------------------------------------------------------------------


class McpToolCallInterruptedError(DexAgentsError):
    """An MCP `tools/call` request was sent and no result came back (a lost connection, a
    server that died, or a -32603/-32700 error a gateway may send after the tool ran).

    It fails the tool Step's attempt, so the call's effect decides what follows: CallTool
    sends a new request for read and idempotent_write tools, CallSingleAttemptTool records
    outcome_unknown."""


# Every exception's name ends in Error. The names before that rule still work (aliases):
InvalidInput = InvalidInputError
MessageTooLarge = MessageTooLargeError
SessionExists = SessionExistsError
NotFound = NotFoundError
SessionNotFound = SessionNotFoundError
ChannelMessageNotFound = ChannelMessageNotFoundError
NotInToolStep = NotInToolStepError
DatabaseNotFound = DatabaseNotFoundError
DatabaseUnavailable = DatabaseUnavailableError
SchemaTooNew = SchemaTooNewError
WorkerIdInUse = WorkerIdInUseError
RunnerUnavailable = RunnerUnavailableError
InvalidResumeToken = InvalidResumeTokenError
InvalidToolEffect = InvalidToolEffectError
