"""Rollout state: a row-level diff of two state documents and the collateral-damage verdict."""

from __future__ import annotations

from ._damage import (
    DamageRule,
    DamageSpec,
    damage_spec_from_mapping,
    damage_verdict,
    load_damage_specs,
)
from ._diff import (
    DOMAIN_VOLATILE_COLUMNS,
    VOLATILE_COLUMN_RULE,
    RowChange,
    StateDiff,
    diff_states,
    volatile_columns,
)

__all__ = [
    "DOMAIN_VOLATILE_COLUMNS",
    "VOLATILE_COLUMN_RULE",
    "DamageRule",
    "DamageSpec",
    "RowChange",
    "StateDiff",
    "damage_spec_from_mapping",
    "damage_verdict",
    "diff_states",
    "load_damage_specs",
    "volatile_columns",
]
