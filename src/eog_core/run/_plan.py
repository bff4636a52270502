"""What a whole evaluation is asked to do beside its tasks and model: :class:`EvaluationPlan`.

``run_evaluation`` took these as seven keywords in 0.2; they still work for one release
with a ``DeprecationWarning`` (:func:`plan_from_keywords`; docs/api.md, "Stability").
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs
from typing_extensions import TypedDict

from eog_core._plumbing import warn_deprecated
from eog_core.errors import UsageError

__all__ = ["EvaluationPlan", "EvaluationPlanKeywords", "plan_from_keywords"]


@attrs.frozen(kw_only=True)
class EvaluationPlan:
    """How much to run and how: ``repeats`` of every task, ``concurrency`` rollouts in
    flight, the judge's model (``None``: the agent's), the endpoint check first
    (``preflight``), the outage stop (``max_consecutive_unreachable`` rollouts in a row
    ending ``model_unreachable``; ``None``: never), and Ray sharding (``ray_address``,
    ``ray_actors``; docs/run.md)."""

    repeats: int = 1
    concurrency: int = 8
    judge_model: str | None = None
    preflight: bool = True
    max_consecutive_unreachable: int | None = 3
    ray_address: str | None = None
    ray_actors: int | None = None


class EvaluationPlanKeywords(TypedDict, total=False):
    """The 0.2 keywords of ``run_evaluation`` that :class:`EvaluationPlan` now holds (deprecated)."""

    repeats: int
    concurrency: int
    judge_model: str | None
    preflight: bool
    max_consecutive_unreachable: int | None
    ray_address: str | None
    ray_actors: int | None


_FIELDS = frozenset(field.name for field in attrs.fields(EvaluationPlan))


def plan_from_keywords(
    plan: EvaluationPlan | None, keywords: Mapping[str, object]
) -> EvaluationPlan:
    """``plan``, or one built from the deprecated keywords (a warning names them); both,
    or a keyword ``run_evaluation`` never took, is a :class:`UsageError`."""
    if unknown := sorted(set(keywords) - _FIELDS):
        raise UsageError(f"run_evaluation() got an unexpected keyword argument {unknown[0]!r}")
    if not keywords:
        return plan if plan is not None else EvaluationPlan()
    named = ", ".join(f"{name}=" for name in sorted(keywords))
    if plan is not None:
        raise UsageError(f"run_evaluation(): give plan= or {named}, not both")
    warn_deprecated(
        f"run_evaluation({named})", f"pass plan=EvaluationPlan({named}...)", stacklevel=3
    )
    return EvaluationPlan(**keywords)  # type: ignore[arg-type]
