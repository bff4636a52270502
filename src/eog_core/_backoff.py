"""The one backoff rule of every retry loop outside the HTTP transport's own.

A delay doubles from ``initial`` per attempt up to ``maximum``, then is jittered: ``"full"``
draws from the whole interval (the transport's retries, where many clients retry at once),
``"equal"`` from its upper half (a model endpoint, a gym's re-probe, the janitor: never retry
at once, never wait less than half), ``"none"`` keeps it exact (a container's restart).

stamina (tenacity underneath) was weighed for this and not taken: its retries wrap a callable,
while ours honour a ``Retry-After``, stop at a give-up point shared with the record, count their
attempts into it, or are a schedule rather than a loop (the janitor); what they share is this
arithmetic (docs/reliability.md, "Backoff").
"""

from __future__ import annotations

import random
from typing import Literal

__all__ = ["Jitter", "backoff_delay"]

Jitter = Literal["full", "equal", "none"]

_MAX_DOUBLINGS = 62
"""Past this many doublings any ``maximum`` has been reached (and ``2 ** n`` stays exact)."""


def backoff_delay(
    attempt: int,
    *,
    initial: float,
    maximum: float,
    jitter: Jitter = "equal",
    rng: random.Random | None = None,
) -> float:
    """Seconds to wait after failed attempt number ``attempt`` (1-based)."""
    doublings = min(max(attempt - 1, 0), _MAX_DOUBLINGS)
    ceiling = min(maximum, initial * 2.0**doublings)
    if jitter == "none":
        return ceiling
    low = 0.0 if jitter == "full" else ceiling / 2
    return random.uniform(low, ceiling) if rng is None else rng.uniform(low, ceiling)
