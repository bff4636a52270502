"""What a rollout's databases hold, and what the agent changed in them.

``await snapshot(session)`` exports every database a :class:`~eog_core.gym.TaskSession`
seeded through the gyms' SQL runner (``docs/state.md``); :func:`canonical_bytes` and
:func:`state_id` give a document's one byte form and its sha256. :func:`diff_states` is a
row-level diff of two documents and :func:`damage_verdict` the collateral-damage verdict
over a task's damage spec (agentrelbench's ``damage.json``); :func:`materialise` writes a
document back into SQLite files (for re-scoring offline). The package sits on ``gym``
(and below); nothing lower imports it.
"""

from eog_core.state._canonical import (
    STATE_FORMAT,
    canonical_bytes,
    canonical_value,
    primary_keys,
    state_document,
    state_id,
    table_state,
)
from eog_core.state._damage import (
    DamageRule,
    DamageSpec,
    damage_spec_from_mapping,
    damage_verdict,
    load_damage_specs,
)
from eog_core.state._diff import (
    DOMAIN_VOLATILE_COLUMNS,
    VOLATILE_COLUMN_RULE,
    RowChange,
    StateDiff,
    diff_states,
    volatile_columns,
)
from eog_core.state._export import DEFAULT_MAX_ROWS, StateSnapshot, export_database, snapshot
from eog_core.state._sqlite import materialise

__all__ = [
    "DEFAULT_MAX_ROWS",
    "DOMAIN_VOLATILE_COLUMNS",
    "STATE_FORMAT",
    "VOLATILE_COLUMN_RULE",
    "DamageRule",
    "DamageSpec",
    "RowChange",
    "StateDiff",
    "StateSnapshot",
    "canonical_bytes",
    "canonical_value",
    "damage_spec_from_mapping",
    "damage_verdict",
    "diff_states",
    "export_database",
    "load_damage_specs",
    "materialise",
    "primary_keys",
    "snapshot",
    "state_document",
    "state_id",
    "table_state",
    "volatile_columns",
]
