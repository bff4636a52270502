"""The server's config and the bodies of its seed and verify requests and responses."""

from __future__ import annotations

from typing import Any, Literal

from nemo_gym.base_resources_server import (
    BaseResourcesServerConfig,
    BaseSeedSessionRequest,
    BaseSeedSessionResponse,
    BaseVerifyRequest,
    BaseVerifyResponse,
)
from nemo_gym.config_types import ModelServerRef
from pydantic import ConfigDict, Field

__all__ = [
    "EogResourcesServerConfig",
    "EogSeedSessionRequest",
    "EogSeedSessionResponse",
    "EogVerifyRequest",
    "EogVerifyResponse",
]


class EogResourcesServerConfig(BaseResourcesServerConfig):
    """Where the gyms are, how to seed them, and how to reward a rollout."""

    gym_url_pools: dict[str, list[str]] = Field(default_factory=dict)
    """Gym name -> replica base URLs; each rollout is pinned to one (a :class:`GymDirectory`).
    Gyms not listed use the URL their task names."""
    seed_sql_root: str | None = None
    """Folder holding the tasks' ``seed_database_file`` paths (where gym_dbs.zip was unzipped)."""
    tool_snapshots: str | None = None
    """A folder of tool snapshot files (``eog-data/tools``); unset: list tools live."""
    reward_policy: Literal["strict", "parity"] = "strict"
    """Which verdict gives the reward: strict counts every verifier, parity is upstream's."""
    fractional_reward: bool = False
    """Reward the verifier pass rate instead of all-pass (0 or 1)."""
    on_infrastructure_failure: Literal["mask", "fail"] = "mask"
    """A gym failure in the rollout: ``mask`` the sample, or ``fail`` verify (503) for a retry."""
    session_ttl_seconds: float = 3600.0
    """Sessions idle this long are closed and their databases deleted (killed rollouts)."""
    judge_model_server: ModelServerRef | None = None
    """Model server that judges ``response_check`` verifiers (none: they fail as judge errors)."""
    judge_responses_create_params: dict[str, Any] = Field(default_factory=dict)


class EogSeedSessionRequest(BaseSeedSessionRequest):
    """The legacy seed body: the dataset row (``to_nemo_row``) as ``SimpleAgent`` posts it."""

    model_config = ConfigDict(extra="allow")
    verifier_metadata: dict[str, Any]


class EogSeedSessionResponse(BaseSeedSessionResponse):
    databases: dict[str, str] = Field(default_factory=dict)


class EogVerifyRequest(BaseVerifyRequest):
    model_config = ConfigDict(extra="allow")


class EogVerifyResponse(BaseVerifyResponse):
    """The reward with both verdicts; flat numbers so aggregate metrics can average them."""

    model_config = ConfigDict(extra="allow")
    task_id: str | None = None
    domain: str | None = None
    success: bool
    verifier_pass_rate: float
    evaluation_completed: bool
    strict_success: bool
    strict_pass_rate: float
    parity_success: bool
    parity_pass_rate: float
    num_verifiers_defined: int
    num_verifiers_scored: int
    num_tool_calls: int
    num_tool_errors: int
    verification_results: dict[str, Any] = Field(default_factory=dict)
    strict_verdict: dict[str, Any] = Field(default_factory=dict)
    parity_verdict: dict[str, Any] = Field(default_factory=dict)
    tool_latencies_ms: list[dict[str, Any]] = Field(default_factory=list)
