"""What a rollout's databases hold: snapshots in a canonical, content-addressed form.

``await snapshot(session)`` exports every database a :class:`~eog_core.gym.TaskSession`
seeded through the gyms' SQL runner (``docs/state.md``); :func:`canonical_bytes` and
:func:`state_id` give a document's one byte form and its sha256. The package sits on
``gym`` (and below); nothing lower imports it.
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
from eog_core.state._export import DEFAULT_MAX_ROWS, StateSnapshot, export_database, snapshot

__all__ = [
    "DEFAULT_MAX_ROWS",
    "STATE_FORMAT",
    "StateSnapshot",
    "canonical_bytes",
    "canonical_value",
    "export_database",
    "primary_keys",
    "snapshot",
    "state_document",
    "state_id",
    "table_state",
]
