"""The transports' retry rule: bounded, jittered backoff, and which failures may be re-sent.

A request that is not idempotent (``tools/call``, seeding) is re-sent only when it provably
never left this process (the connection could not be opened).
"""

from __future__ import annotations

import asyncio
import logging

import attrs

from eog_core._backoff import backoff_delay
from eog_core._redact import redact_url
from eog_core.errors import GymTimeoutError
from eog_core.gym._http import Failed, HttpRequest

__all__ = ["DEFAULT_RETRY", "KEEPALIVE_SECONDS", "RetryPolicy", "next_attempt"]

log = logging.getLogger("eog_core.gym")

# Below uvicorn's 5 s keep-alive: never reuse a connection the server is closing.
KEEPALIVE_SECONDS = 4.0


@attrs.frozen(kw_only=True)
class RetryPolicy:
    """Bounded, fully jittered exponential backoff."""

    attempts: int = 3
    initial_delay: float = 0.05
    max_delay: float = 1.0

    def delay(self, attempt: int) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based)."""
        return backoff_delay(
            attempt, initial=self.initial_delay, maximum=self.max_delay, jitter="full"
        )


DEFAULT_RETRY = RetryPolicy()  # frozen: one shared by every default transport


def next_attempt(
    failure: Failed, request: HttpRequest, attempt: int, retry: RetryPolicy
) -> tuple[float, float | None]:
    """After failed attempt number ``attempt``: the delay before the next one and, with a
    ``deadline``, the seconds left for it (else None: the request's own ``timeout``).

    Raises the failure's error when there is no next attempt: the failure is not
    transient, the request may have left and is not idempotent (``tools/call`` is never
    sent twice), the attempts are spent, or the deadline would pass first.
    """
    may_resend = request.idempotent or not failure.sent
    if not (failure.transient and may_resend and attempt < retry.attempts):
        raise failure.error from failure.__cause__
    delay = retry.delay(attempt)
    left = None
    if request.deadline is not None:  # the next attempt gets what is left of the budget
        left = request.deadline - asyncio.get_running_loop().time() - delay
        if left <= 0:
            raise GymTimeoutError(
                f"no answer within {request.timeout}s ({attempt} attempt(s), the last: "
                f"{failure.error})",
                gym=request.gym,
                url=request.url,
            ) from failure.__cause__
    log.debug("retrying %s %s after: %s", request.method, redact_url(request.url), failure.error)
    return delay, left
