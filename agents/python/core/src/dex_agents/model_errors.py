"""Whether a failed model call is worth another RunModel attempt, and when.

RunModel owns a model call's retries (docs/design/retries.md), so it judges a failure as the
providers' SDKs do: an HTTP client error (4xx other than 408, 409 and 429) fails the same
way on every attempt, so the Step goes to its failure route at once; a rate limit or a
server error is tried again, no sooner than the answer's `Retry-After` (or `retry-after-ms`)
asks, up to RETRY_AFTER_MAX_SECONDS. The status and headers are read from the exception the
framework raised or from one it was raised from (Pydantic AI's `ModelHTTPError` wraps the
`openai` SDK's error; LiteLLM's and the `openai` SDK's carry `status_code` and `response`;
`RemoteRunnerError` carries what a runner in another process sent: `status_code` and
`response_headers`).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from email.utils import parsedate_to_datetime
from typing import Any

from .stepkit import NonRetryableError, RetryAdvice

# The statuses the providers' SDKs retry: timeout, conflict, rate limit; and every 5xx.
RETRYABLE_CLIENT_STATUSES = frozenset({408, 409, 429})
# The longest `Retry-After` an attempt waits for; a longer one waits this long.
RETRY_AFTER_MAX_SECONDS = 60.0


def model_call_retry_advice(error: BaseException) -> RetryAdvice:
    if isinstance(error, NonRetryableError):
        return RetryAdvice(retry=False)
    for cause in _causes(error):
        status = _status_code(cause)
        if status is None:
            continue
        if 400 <= status < 500 and status not in RETRYABLE_CLIENT_STATUSES:
            return RetryAdvice(retry=False, reason=f"HTTP {status} is not retried")
        return RetryAdvice(retry=True, delay=_retry_after(error))
    return RetryAdvice(retry=True)


def _causes(error: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _status_code(error: BaseException) -> int | None:
    for holder in (error, getattr(error, "response", None)):
        status = getattr(holder, "status_code", None)
        if isinstance(status, int) and 100 <= status < 600:
            return status
    return None


def _retry_after(error: BaseException) -> float | None:
    for cause in _causes(error):
        headers = getattr(getattr(cause, "response", None), "headers", None)
        if headers is None:  # a runner in another process sends the headers alone
            headers = getattr(cause, "response_headers", None)
        if isinstance(headers, Mapping):
            seconds = retry_after_seconds(headers)
            if seconds is not None:
                return seconds
    return None


def retry_after_seconds(headers: Mapping[str, Any]) -> float | None:
    """Seconds an HTTP answer asks a client to wait, within 0..RETRY_AFTER_MAX_SECONDS."""
    lowered = {str(k).lower(): str(v) for k, v in headers.items()}
    seconds: float | None = None
    if "retry-after-ms" in lowered:
        seconds = _number(lowered["retry-after-ms"])
        seconds = None if seconds is None else seconds / 1000
    if seconds is None and "retry-after" in lowered:
        value = lowered["retry-after"]
        seconds = _number(value)
        if seconds is None:
            try:
                seconds = parsedate_to_datetime(value).timestamp() - time.time()
            except (TypeError, ValueError):
                seconds = None
    if seconds is None:
        return None
    return min(max(seconds, 0.0), RETRY_AFTER_MAX_SECONDS)


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if value == value and value not in (float("inf"), float("-inf")) else None
