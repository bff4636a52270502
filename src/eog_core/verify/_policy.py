"""Scoring policies: upstream parity and our strict corrections, in one place each.

A policy is passed once to the engine and handed down. Every upstream quirk
that parity reproduces is a method or field of :class:`ParityPolicy` alone, so
it can be read (and one day deleted) here.
"""

from __future__ import annotations

import abc
from typing import Any, Literal

import attrs

from eog_core.verify._compare import Comparison, strict_compare, upstream_compare
from eog_core.verify._limit import GYM_IMPLICIT_LIMIT
from eog_core.verify._readonly import read_only_problem

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
    def read_only_sql(self) -> bool:
        """Verifier SQL must not write: runners we control enforce it, gyms are asked to."""
        return False

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

    @property
    def offline_implicit_limit(self) -> int | None:
        """The row cap offline scoring applies (``SqliteSqlRunner(implicit_limit=...)``), as
        the gym's sql-runner would have cut the answer; None: every row."""
        return None

    @property
    def flags_truncation(self) -> bool:
        """A LIMIT-less query answered with exactly the runner's ``implicit_limit`` rows
        (the gym may have cut it) is a ``verifier_error``, not scored."""
        return False

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

    @property
    def offline_implicit_limit(self) -> int | None:
        return GYM_IMPLICIT_LIMIT  # upstream scored what the gym's sql-runner answered


@attrs.frozen(kw_only=True)
class StrictPolicy(Policy):
    """Every verifier counts, numbers equal numeric strings, evaluation problems are reported."""

    name: str = "strict"

    def compare(self, actual: Any, expected: Any, comparison_type: Any) -> Comparison:
        return strict_compare(actual, expected, comparison_type)

    def refuse_query(self, query: str) -> str | None:
        return read_only_problem(query)

    @property
    def read_only_sql(self) -> bool:
        return True

    @property
    def flags_truncation(self) -> bool:
        return True


PARITY: Policy = ParityPolicy()
STRICT: Policy = StrictPolicy()
