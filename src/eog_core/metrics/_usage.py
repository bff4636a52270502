"""What rollouts cost: turns, tool calls, tokens, latencies and money, read from rollout records.

Token counts follow the OpenAI convention the run records keep: ``input_tokens``
includes ``cached_tokens``. A :class:`Price` is in currency units per million
tokens; cached input tokens are charged at the cached price when one is given,
else at the input price. Unknown keys of a record are ignored and a missing or
malformed count reads as 0 (a record of a rollout that never reached the model).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from eog_core.errors import UsageError

__all__ = [
    "Histogram",
    "Price",
    "RolloutUsage",
    "UsageStats",
    "histogram",
    "rollout_cost",
    "usage_stats",
]


def _count(data: Mapping[str, Any] | None, key: str) -> float:
    value = (data or {}).get(key)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return 0.0
    return float(value)


@attrs.frozen(kw_only=True)
class Price:
    """``model``'s price per million input, output and (optionally) cached input tokens."""

    model: str
    input_per_million: float
    output_per_million: float
    cached_per_million: float | None = None

    @classmethod
    def parse(cls, text: str) -> Price:
        """``MODEL=IN,OUT[,CACHED]`` (``gpt-4.1=2,8,0.5``); a bad form raises :class:`UsageError`."""
        model, sep, numbers = text.partition("=")
        parts = numbers.split(",")
        if not sep or not model or len(parts) not in (2, 3):
            raise UsageError(f"a price is MODEL=IN,OUT[,CACHED] per million tokens, got {text!r}")
        try:
            values = [float(part) for part in parts]
        except ValueError:
            raise UsageError(
                f"a price holds numbers: MODEL=IN,OUT[,CACHED], got {text!r}"
            ) from None
        if any(not math.isfinite(v) or v < 0 for v in values):
            raise UsageError(f"prices are non-negative numbers, got {text!r}")
        return cls(
            model=model,
            input_per_million=values[0],
            output_per_million=values[1],
            cached_per_million=values[2] if len(values) == 3 else None,
        )


@attrs.frozen(kw_only=True)
class RolloutUsage:
    """The effort counts of one rollout record."""

    model: str | None
    turns: int
    tool_calls: int
    input_tokens: int
    output_tokens: int
    cached_tokens: int
    reasoning_tokens: int
    model_latency_ms: float
    tool_latency_ms: float
    duration_ms: float

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> RolloutUsage:
        usage = record.get("usage")
        usage = usage if isinstance(usage, Mapping) else None
        model = record.get("model")
        return cls(
            model=model if isinstance(model, str) else None,
            turns=int(_count(record, "num_turns")),
            tool_calls=int(_count(record, "num_tool_calls")),
            input_tokens=int(_count(usage, "input_tokens")),
            output_tokens=int(_count(usage, "output_tokens")),
            cached_tokens=int(_count(usage, "cached_tokens")),
            reasoning_tokens=int(_count(usage, "reasoning_tokens")),
            model_latency_ms=_count(record, "model_latency_ms"),
            tool_latency_ms=_count(record, "tool_latency_ms"),
            duration_ms=_count(record, "duration_ms"),
        )


def rollout_cost(usage: RolloutUsage, price: Price) -> float:
    """The cost of one rollout: uncached input, cached input and output at their prices."""
    cached = min(usage.cached_tokens, usage.input_tokens)
    cached_price = (
        price.input_per_million if price.cached_per_million is None else price.cached_per_million
    )
    return (
        (usage.input_tokens - cached) * price.input_per_million
        + cached * cached_price
        + usage.output_tokens * price.output_per_million
    ) / 1_000_000


@attrs.frozen(kw_only=True)
class UsageStats:
    """Totals and per-rollout means over some rollouts; cost is None without a price for every model."""

    rollouts: int
    mean_turns: float | None
    mean_tool_calls: float | None
    input_tokens: int
    output_tokens: int
    cached_tokens: int
    reasoning_tokens: int
    mean_tokens: float | None
    """Mean input + output tokens per rollout."""
    mean_duration_ms: float | None
    cost: float | None
    mean_cost: float | None


def _mean(values: Sequence[float]) -> float | None:
    return math.fsum(values) / len(values) if values else None


def usage_stats(
    usages: Sequence[RolloutUsage], prices: Mapping[str, Price] | None = None
) -> UsageStats:
    """Sum and average ``usages``; the cost needs a price for the model of every rollout."""
    prices = prices or {}
    costs = [
        rollout_cost(u, prices[u.model])
        for u in usages
        if u.model is not None and u.model in prices
    ]
    priced = bool(usages) and len(costs) == len(usages)
    return UsageStats(
        rollouts=len(usages),
        mean_turns=_mean([u.turns for u in usages]),
        mean_tool_calls=_mean([u.tool_calls for u in usages]),
        input_tokens=sum(u.input_tokens for u in usages),
        output_tokens=sum(u.output_tokens for u in usages),
        cached_tokens=sum(u.cached_tokens for u in usages),
        reasoning_tokens=sum(u.reasoning_tokens for u in usages),
        mean_tokens=_mean([u.input_tokens + u.output_tokens for u in usages]),
        mean_duration_ms=_mean([u.duration_ms for u in usages]),
        cost=math.fsum(costs) if priced else None,
        mean_cost=_mean(costs) if priced else None,
    )


@attrs.frozen(kw_only=True)
class Histogram:
    """Counts of values in ``len(counts)`` equal bins from ``low`` to ``high`` (the last bin closed)."""

    low: float
    high: float
    counts: tuple[int, ...]


def histogram(values: Iterable[float], bins: int = 20) -> Histogram:
    """Equal-width bins over the range of ``values`` (one bin when they are all equal)."""
    if bins < 1:
        raise UsageError(f"bins must be at least 1, got {bins}")
    data = [float(v) for v in values if math.isfinite(v)]
    if not data:
        return Histogram(low=0.0, high=0.0, counts=())
    low, high = min(data), max(data)
    if high == low:
        return Histogram(low=low, high=high, counts=(len(data),))
    counts = [0] * bins
    width = (high - low) / bins
    for value in data:
        counts[min(int((value - low) / width), bins - 1)] += 1
    return Histogram(low=low, high=high, counts=tuple(counts))
