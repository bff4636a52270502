"""Aggregate metrics of verify responses: success and pass rates, per domain, pass@k."""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

from eog_core.metrics import pass_at_k

__all__ = ["aggregate_rollouts"]


def _rates(rows: list[dict[str, Any]]) -> dict[str, float]:
    def mean(key: str) -> float:
        return sum(float(r.get(key) or 0.0) for r in rows) / len(rows)

    return {
        "success_rate": mean("success"),
        "verifier_pass_rate": mean("verifier_pass_rate"),
        "strict_success_rate": mean("strict_success"),
        "parity_success_rate": mean("parity_success"),
        "num_rollouts": float(len(rows)),
    }


def aggregate_rollouts(tasks: list[list[dict[str, Any]]]) -> dict[str, Any]:
    """Metrics of verify responses grouped by task (NeMo Gym's ``compute_metrics`` input).

    Masked samples are left out (NeMo Gym hands only scored ones to the hook, and
    this keeps it so when called directly).
    """
    groups = [[r for r in group if not r.get("mask_sample")] for group in tasks]
    groups = [group for group in groups if group]
    rows = [r for group in groups for r in group]
    if not rows:
        return {}
    metrics: dict[str, Any] = dict(_rates(rows))
    by_domain: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_domain[str(row.get("domain") or "unknown")].append(row)
    for domain, members in sorted(by_domain.items()):
        metrics.update({f"{domain}/{k}": v for k, v in _rates(members).items()})
    for k in range(1, max(len(group) for group in groups) + 1):
        eligible = [g for g in groups if len(g) >= k]
        values = [pass_at_k(len(g), sum(bool(r.get("success")) for r in g), k) for g in eligible]
        metrics[f"pass@{k}"] = math.fsum(values) / len(values)
    return metrics
