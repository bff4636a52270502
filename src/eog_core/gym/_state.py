"""Where a gym client or a task session is in its life (httpx's ``ClientState``), and the
warning an unclosed one gives when it is collected (as svcs warns)."""

from __future__ import annotations

import enum
import warnings

__all__ = ["State", "warn_unclosed"]


class State(enum.Enum):
    """A client is ``UNOPENED`` until its first request; a task session is ``OPEN`` from
    its start; ``CLOSING`` while a session's cleanup runs; ``CLOSED`` refuses reuse."""

    UNOPENED = "unopened"
    OPEN = "open"
    CLOSING = "closing"
    CLOSED = "closed"


def warn_unclosed(owner: object, what: str, advice: str) -> None:
    """A :class:`ResourceWarning` that ``owner`` (``what``) was collected unclosed."""
    warnings.warn(f"unclosed {what}: {advice}", ResourceWarning, stacklevel=2, source=owner)
