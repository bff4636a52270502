"""The MCP gateway: any agent, any harness, scored on EOG tasks through MCP.

:class:`Gateway` serves a run's tasks x repeats: a control API hands out
rollouts (seeded databases, an MCP endpoint, the prompts), the agent calls the
task's tools over MCP Streamable HTTP, finishing verifies strict and parity and
records the rollout as ``eog-core run`` does (``rollouts.jsonl``, ``upstream/``).
``eog-core gateway`` is its command line; ``docs/gateway.md`` the guide.
"""

from eog_core.gateway._access import token_from_env
from eog_core.gateway._gateway import DEFAULT_MODEL_LABEL, MAX_REQUEST_BYTES, Gateway
from eog_core.gateway._mcp import FINISH_TOOL, mcp_tools
from eog_core.gateway._plan import RunPlan, WorkRefused
from eog_core.gateway._rollout import GatewayRollout, McpClientSession, RolloutState

__all__ = [
    "DEFAULT_MODEL_LABEL",
    "FINISH_TOOL",
    "MAX_REQUEST_BYTES",
    "Gateway",
    "GatewayRollout",
    "McpClientSession",
    "RolloutState",
    "RunPlan",
    "WorkRefused",
    "mcp_tools",
    "token_from_env",
]
