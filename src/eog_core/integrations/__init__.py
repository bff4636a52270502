"""Adapters that run eog_core inside other harnesses, each an optional extra.

The sub-modules import their framework, so import them only where it is
installed: ``eog_core.integrations.nemo_gym`` (``eog-core[nemo-gym]``),
``eog_core.integrations.stirrup`` (``eog-core[stirrup]``),
``eog_core.integrations.inspect_ai`` (``eog-core[inspect]``) and
``eog_core.integrations.ray`` (``eog-core[ray]``). This package itself is pure:
it holds the mapping of our failure kinds onto NeMo Gym's shared vocabulary
(``nemo_gym.failure_kinds``), which data tooling may read without NeMo Gym.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["NEMO_GYM_FAILURE_KINDS", "nemo_gym_failure_kind"]

#: Our failure kinds (verdicts: ``TaskVerdict.failure_kind``; tool calls:
#: ``ToolCallRecord.error_kind``; sessions: ``seed``/``release``) -> NeMo Gym's
#: registered names, or ``enterpriseops:<kind>`` where its vocabulary has none.
NEMO_GYM_FAILURE_KINDS: Mapping[str, str] = {
    # verdicts
    "config_error": "enterpriseops:config_error",
    "verifier_error": "verifier_error",
    "gym_unreachable": "transport_unreachable",
    "judge_error": "judge_failed",
    "no_verifiers": "enterpriseops:no_verifiers",
    # tool calls
    "gym_timeout": "transport_timeout",
    "gym_protocol": "transport_peer_drop",
    "gym_http": "provider_unavailable",
    "jsonrpc": "enterpriseops:jsonrpc_error",
    "gym_error": "provider_unavailable",
    # session lifecycle
    "seed": "provider_unavailable",
    "release": "session_release_failed",
    "session_lost": "session_lost",
}


def nemo_gym_failure_kind(kind: str | None) -> str | None:
    """NeMo Gym's name for one of our failure kinds (None stays None; unknown kinds are
    namespaced ``enterpriseops:<kind>`` so NeMo Gym accepts them without a warning)."""
    if kind is None:
        return None
    return NEMO_GYM_FAILURE_KINDS.get(kind, f"enterpriseops:{kind}")
