"""Scoring policies: upstream parity and our strict corrections, in one place each.

A policy is passed once to the engine and handed down. Every upstream quirk
that parity reproduces is a method or field of :class:`ParityPolicy` alone, so
it can be read (and one day deleted) here.
"""

from __future__ import annotations

import abc
from functools import lru_cache
from typing import Any, Literal

import attrs
import sqlparse

from eog_core.verify._compare import Comparison, strict_compare, upstream_compare

__all__ = ["PARITY", "STRICT", "ParityPolicy", "Policy", "StrictPolicy", "read_only_problem"]

RewardMode = Literal["binary", "fractional"]


@attrs.frozen(kw_only=True)
class Policy(abc.ABC):
    """What both policies share; subclasses decide each behaviour that differs."""

    name: str
    reward: RewardMode = "binary"

    @abc.abstractmethod
    def compare(self, actual: Any, expected: Any, comparison_type: Any) -> Comparison:
        """Compare an extracted value with the expected one."""

    def refuse_query(self, query: str) -> str | None:
        """Why ``query`` must not run (None: it may)."""
        return None

    @property
    def collapses_names(self) -> bool:
        """Same-named verifiers overwrite each other (upstream's name-keyed dict)."""
        return False

    @property
    def skips_unknown_gyms(self) -> bool:
        """A verifier naming a gym the task lacks is skipped instead of failed."""
        return False

    @property
    def records_run_errors(self) -> bool:
        """Upstream's run errors: a verifier without ``validation_config``, or nothing counted
        (its log line divides by zero), fail the whole run with ``{"error": ...}``."""
        return False

    @property
    def reports_failure_kinds(self) -> bool:
        """Whether evaluation problems mark the verdict incomplete with a failure kind."""
        return True

    def with_reward(self, reward: RewardMode) -> Policy:
        """The same policy with binary or fractional (pass rate) reward."""
        return attrs.evolve(self, reward=reward)


@attrs.frozen(kw_only=True)
class ParityPolicy(Policy):
    """Byte-for-byte upstream behaviour, quirks included."""

    name: str = "parity"

    def compare(self, actual: Any, expected: Any, comparison_type: Any) -> Comparison:
        return upstream_compare(actual, expected, comparison_type)

    @property
    def collapses_names(self) -> bool:
        return True

    @property
    def skips_unknown_gyms(self) -> bool:
        return True

    @property
    def records_run_errors(self) -> bool:
        return True

    @property
    def reports_failure_kinds(self) -> bool:
        return False


@attrs.frozen(kw_only=True)
class StrictPolicy(Policy):
    """Every verifier counts, numbers equal numeric strings, evaluation problems are reported."""

    name: str = "strict"

    def compare(self, actual: Any, expected: Any, comparison_type: Any) -> Comparison:
        return strict_compare(actual, expected, comparison_type)

    def refuse_query(self, query: str) -> str | None:
        return read_only_problem(query)


@lru_cache(maxsize=4096)
def read_only_problem(query: str) -> str | None:
    """Why ``query`` is not one read-only statement, or None when it is.

    Accepted: exactly one ``SELECT`` statement (``WITH ... SELECT`` included).
    Cached: the same verifier queries are checked once per process.
    """
    statements = [s for s in sqlparse.parse(query) if s.token_first(skip_cm=True, skip_ws=True)]  # type: ignore[no-untyped-call]
    if not statements:
        return "the query is empty"
    if len(statements) > 1:
        return f"the query holds {len(statements)} statements; a verifier may run only one"
    kind = statements[0].get_type()  # type: ignore[no-untyped-call]
    if kind != "SELECT":
        return f"the query is not a read-only SELECT statement (it reads as {kind})"
    return None


PARITY: Policy = ParityPolicy()
STRICT: Policy = StrictPolicy()
