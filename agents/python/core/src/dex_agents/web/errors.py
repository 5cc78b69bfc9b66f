"""One error shape for every failure: `{"error": {"code", "message", "field"}}`.

400 for input the client's validation refuses, 413 for a text or a body over its limit, 409 for a
session ID in use, 404 for an unknown session, 401 for a refused request, 422 for a body or
query that does not parse, 503 while the database is unavailable.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response

from ..errors import (
    DatabaseError,
    DexAgentsError,
    InvalidInputError,
    InvalidResumeTokenError,
    MessageTooLargeError,
    NotFoundError,
    SessionExistsError,
    SessionNotFoundError,
)
from .wire import WireJSONResponse


class ErrorDetail(BaseModel):
    code: str
    message: str
    # The request field the error is about (`text`, `session_id`, `Last-Event-ID`), if one.
    field: str | None = None


class ErrorBody(BaseModel):
    error: ErrorDetail


class ApiError(Exception):
    """An error the API answers with its own status and code."""

    def __init__(
        self,
        status_code: int,
        code: str,
        message: str,
        field: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.code = code
        self.message = message
        self.field = field
        self.headers = dict(headers or {})


class BodyTooLarge(StarletteHTTPException):
    """A request body over the application's limit, raised while it streams in: FastAPI's
    body parsing passes an HTTPException on."""

    def __init__(self, limit: int) -> None:
        super().__init__(
            413,
            f"the request body is longer than this server takes ({limit:,} bytes): send "
            "less, or raise the limit (dex-agents serve --max-body-bytes)",
        )


# Most specific first: each dex-agents error and the status and code it answers with.
_DEX_ERRORS: Sequence[tuple[type[DexAgentsError], int, str]] = (
    (MessageTooLargeError, 413, "message_too_large"),
    (SessionExistsError, 409, "session_exists"),
    (InvalidResumeTokenError, 400, "invalid_resume_token"),
    (InvalidInputError, 400, "invalid_input"),
    (SessionNotFoundError, 404, "session_not_found"),
    (NotFoundError, 404, "not_found"),
    (DatabaseError, 503, "database_unavailable"),
)

# The documented error responses of every /api route.
ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorBody, "description": description}
    for status, description in (
        (400, "Invalid input (an ID, a text, a token or settings the client refuses)"),
        (401, "Missing or wrong token"),
        (404, "No session has this ID"),
        (422, "The body or a query parameter does not parse"),
    )
}


def error_response(
    status_code: int,
    code: str,
    message: str,
    field: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> Response:
    body = ErrorBody(error=ErrorDetail(code=code, message=message, field=field))
    return WireJSONResponse(body.model_dump(mode="json"), status_code, headers=headers)


async def _api_error(_request: Request, error: Exception) -> Response:
    assert isinstance(error, ApiError)
    return error_response(error.status_code, error.code, error.message, error.field, error.headers)


async def _dex_error(_request: Request, error: Exception) -> Response:
    assert isinstance(error, DexAgentsError)
    status_code, code = next(
        ((status, code) for kind, status, code in _DEX_ERRORS if isinstance(error, kind)),
        (500, "internal_error"),
    )
    field = error.argument if isinstance(error, InvalidInputError) else None
    if isinstance(error, SessionNotFoundError):
        field = "session_id"
    return error_response(status_code, code, str(error), field)


async def _validation_error(_request: Request, error: Exception) -> Response:
    assert isinstance(error, RequestValidationError)
    problems = list(error.errors())
    first = problems[0] if problems else {}
    field = _field_name(first.get("loc", ()))
    message = "; ".join(_problem_text(problem) for problem in problems)
    return error_response(422, "invalid_request", message or "invalid request", field)


async def _http_error(_request: Request, error: Exception) -> Response:
    assert isinstance(error, StarletteHTTPException)
    codes = {404: "not_found", 405: "method_not_allowed", 413: "body_too_large"}
    code = codes.get(error.status_code, "http_error")
    return error_response(error.status_code, code, str(error.detail), headers=error.headers)


def _field_name(loc: Sequence[Any]) -> str | None:
    """`("body", "message", "text")` -> `message.text`; None for the body as a whole."""
    parts = [str(part) for part in loc[1:] if not isinstance(part, int)]
    return ".".join(parts) or None


def _problem_text(problem: Mapping[str, Any]) -> str:
    if problem.get("type") == "json_invalid":
        return f"the body is not valid JSON ({problem.get('ctx', {}).get('error', '')})"
    field = _field_name(problem.get("loc", ()))
    message = str(problem.get("msg", "is not valid"))
    return f"{field}: {message}" if field else f"the body: {message}"


def register_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(ApiError, _api_error)
    app.add_exception_handler(DexAgentsError, _dex_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
