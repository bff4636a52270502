"""Rollout state: a row-level diff of two state documents and the collateral-damage verdict."""

from __future__ import annotations

from ._damage import (
    DamageRule,
    DamageSpec,
    damage_spec_from_mapping,
    damage_verdict,
    load_damage_specs,
)
from ._diff import RowChange, StateDiff, diff_states

__all__ = [
    "DamageRule",
    "DamageSpec",
    "RowChange",
    "StateDiff",
    "damage_spec_from_mapping",
    "damage_verdict",
    "diff_states",
    "load_damage_specs",
]
