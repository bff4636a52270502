"""Test instruments of the local gym: fault knobs (latency, injected HTTP failures,
dropped connections) and request counters.

Everything runs on the server's event loop, so plain counters are safe; the
knobs are meant to be set by tests between (or during) requests.
"""

from __future__ import annotations

import enum
from collections import Counter
from typing import TypeVar

import attrs
from aiohttp import web

__all__ = ["Counters", "DropMoment", "FaultDecision", "FaultPlan", "drop_connection"]


class DropMoment(enum.Enum):
    """When a dropped request loses its connection."""

    BEFORE = "before"  # nothing is executed
    AFTER_TOOL_CALL = "after_tool_call"  # the tool ran and committed, the answer is lost


@attrs.define
class _FailRule:
    remaining: int
    status: int
    path: str | None
    detail: str


@attrs.define
class _DropRule:
    remaining: int
    path: str | None
    moment: DropMoment


@attrs.frozen(kw_only=True)
class FaultDecision:
    """What the server must do to one incoming request before handling it."""

    delay: float = 0.0
    fail_status: int | None = None
    fail_detail: str = ""
    drop: bool = False


@attrs.define
class FaultPlan:
    """The pending faults of one gym; each rule is used up by matching requests."""

    latency: float = 0.0
    _failures: list[_FailRule] = attrs.field(factory=list, init=False)
    _drops: list[_DropRule] = attrs.field(factory=list, init=False)

    def fail_next(
        self, count: int, status: int, *, path: str | None = None, detail: str = ""
    ) -> None:
        if count < 1:
            raise ValueError("count must be at least 1")
        if not 400 <= status <= 599:
            raise ValueError("status must be an HTTP error status (400-599)")
        message = detail or f"Injected fault: HTTP {status}"
        self._failures.append(_FailRule(count, status, path, message))

    def drop_next(self, count: int, *, path: str | None = None, moment: DropMoment) -> None:
        if count < 1:
            raise ValueError("count must be at least 1")
        self._drops.append(_DropRule(count, path, moment))

    def clear(self) -> None:
        self.latency = 0.0
        self._failures.clear()
        self._drops.clear()

    def on_request(self, path: str) -> FaultDecision:
        """Consume the rules that apply to a request for ``path`` as it arrives."""
        failure = _take(self._failures, path)
        if failure is not None:
            return FaultDecision(
                delay=self.latency, fail_status=failure.status, fail_detail=failure.detail
            )
        drop = _take(self._drops, path, DropMoment.BEFORE)
        return FaultDecision(delay=self.latency, drop=drop is not None)

    def drop_after_tool_call(self, path: str) -> bool:
        """Consume a rule asking to drop this tool call's connection after it ran."""
        return _take(self._drops, path, DropMoment.AFTER_TOOL_CALL) is not None

    @property
    def pending(self) -> int:
        """How many requests are still going to be failed or dropped."""
        return sum(rule.remaining for rule in self._failures) + sum(
            rule.remaining for rule in self._drops
        )


_Rule = TypeVar("_Rule", _FailRule, _DropRule)


def _take(rules: list[_Rule], path: str, moment: DropMoment | None = None) -> _Rule | None:
    for rule in rules:
        if rule.path is not None and rule.path != path:
            continue
        if moment is not None and isinstance(rule, _DropRule) and rule.moment is not moment:
            continue
        rule.remaining -= 1
        if rule.remaining <= 0:
            rules.remove(rule)
        return rule
    return None


@attrs.define
class Counters:
    """What a gym has seen: HTTP requests per path, MCP methods, tool executions per tool."""

    requests: Counter[str] = attrs.field(factory=Counter)
    methods: Counter[str] = attrs.field(factory=Counter)
    tool_executions: Counter[str] = attrs.field(factory=Counter)

    def reset(self) -> None:
        self.requests.clear()
        self.methods.clear()
        self.tool_executions.clear()


def drop_connection(request: web.Request) -> web.Response:
    """Close the request's connection without answering; aiohttp then skips the response."""
    if request.transport is not None:
        request.transport.close()
    return web.Response(status=204)
