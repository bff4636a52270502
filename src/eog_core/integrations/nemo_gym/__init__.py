"""A NeMo Gym resources server for EnterpriseOps-Gym tasks (``eog-core[nemo-gym]``).

``EogResourcesServer`` is a real ``SimpleResourcesServer``: ``/seed_session``
seeds a :class:`~eog_core.gym.TaskSession` for the row (the legacy cookie-keyed
body of ``SimpleAgent``, or the ``resources_session_id`` contract of
Environment Servers: an idempotent seed, no re-seed after close), a catch-all
``POST /{tool}`` forwards to :meth:`TaskSession.call_tool` and answers what
upstream's model sees (:func:`eog_core.tool_observation`), ``/verify`` scores
with both policies and deletes the databases, ``/close_session`` deletes them
too, and ``/aggregate_metrics`` adds success and verifier pass rates, overall
and per domain, and pass@k.

A gym failure during a tool call is a tool error for the model and is recorded;
``verify`` then masks the sample (``mask_sample``, with NeMo Gym's
``failure_kind``), or with ``on_infrastructure_failure: fail`` answers 503 so
the episode is retried: an infrastructure failure never scores 0. A seed that
fails answers 503 (the episode fails and is retried).
"""

from eog_core.integrations.nemo_gym._metrics import aggregate_rollouts
from eog_core.integrations.nemo_gym._schema import (
    EogResourcesServerConfig,
    EogSeedSessionRequest,
    EogSeedSessionResponse,
    EogVerifyRequest,
    EogVerifyResponse,
)
from eog_core.integrations.nemo_gym._server import EogResourcesServer

__all__ = [
    "EogResourcesServer",
    "EogResourcesServerConfig",
    "EogSeedSessionRequest",
    "EogSeedSessionResponse",
    "EogVerifyRequest",
    "EogVerifyResponse",
    "aggregate_rollouts",
]
