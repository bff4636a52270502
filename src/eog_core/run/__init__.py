"""Evaluate a model end to end: the agent loop, rollouts, resumable outputs.

``run_evaluation(tasks, ModelSettings(...), out_dir)`` runs tasks x repeats with
``concurrency`` rollouts in flight against OpenAI-compatible Chat Completions or
Responses endpoints, verifies each rollout in strict and parity modes and writes
``rollouts.jsonl`` plus an upstream-format ``upstream/`` folder. ``eog-core run``
is its command line.
"""

from eog_core import _plumbing
from eog_core.run import _model
from eog_core.run._actor import ActorBody
from eog_core.run._answers import is_context_overflow, is_tool_call_parse_error
from eog_core.run._apis import (
    ApiName,
    ChatConversation,
    Conversation,
    ModelTurn,
    ResponsesConversation,
    ToolCall,
    Usage,
    new_conversation,
)
from eog_core.run._decomposing import Decomposer, run_decomposing
from eog_core.run._decomposing_source import (
    DECOMPOSING_SHA256,
    DecomposingTemplate,
    load_decomposing_template,
)
from eog_core.run._folder import FolderTrace
from eog_core.run._judge import ModelJudge
from eog_core.run._loop import AgentRun, StopReason, model_tools, run_agent
from eog_core.run._model import (
    ModelClient,
    ModelReply,
    ModelSettings,
)
from eog_core.run._output import (
    ROLLOUTS_FILE,
    UPSTREAM_DIR,
    RolloutLog,
    upstream_result,
    write_upstream_result,
)
from eog_core.run._plan import EvaluationPlan
from eog_core.run._planner import (
    ORCHESTRATORS,
    Planner,
    planner_tool_entries,
    planner_tools,
    run_planner_react,
)
from eog_core.run._planner_source import (
    PLANNER_REACT_SHA256,
    UPSTREAM_REVISION,
    PlannerTemplate,
    load_planner_template,
)
from eog_core.run._records import (
    RECORD_FORMAT,
    IncompleteKind,
    RolloutKey,
    evaluated_record,
    incomplete_record,
    rollout_key,
)
from eog_core.run._rollout import (
    RolloutOptions,
    SharedQueries,
    classify_failure,
    run_rollout,
    verify_both,
)
from eog_core.run._runner import (
    MAX_CONCURRENCY,
    MAX_REPEATS,
    RunProgress,
    RunReport,
    run_evaluation,
)
from eog_core.run._states import (
    STATES_DIR,
    StateCapture,
    StateStore,
    capture,
    capture_fields,
    damage_field,
    states_present,
)

__all__ = [
    "DECOMPOSING_SHA256",
    "MAX_CONCURRENCY",
    "MAX_REPEATS",
    "ORCHESTRATORS",
    "PLANNER_REACT_SHA256",
    "RECORD_FORMAT",
    "ROLLOUTS_FILE",
    "STATES_DIR",
    "UPSTREAM_DIR",
    "UPSTREAM_REVISION",
    "ActorBody",
    "AgentRun",
    "ApiName",
    "ChatConversation",
    "Conversation",
    "Decomposer",
    "DecomposingTemplate",
    "EvaluationPlan",
    "FolderTrace",
    "IncompleteKind",
    "ModelClient",
    "ModelJudge",
    "ModelReply",
    "ModelSettings",
    "ModelTurn",
    "Planner",
    "PlannerTemplate",
    "ResponsesConversation",
    "RolloutKey",
    "RolloutLog",
    "RolloutOptions",
    "RunProgress",
    "RunReport",
    "SharedQueries",
    "StateCapture",
    "StateStore",
    "StopReason",
    "ToolCall",
    "Usage",
    "capture",
    "capture_fields",
    "classify_failure",
    "damage_field",
    "evaluated_record",
    "incomplete_record",
    "is_context_overflow",
    "is_tool_call_parse_error",
    "load_decomposing_template",
    "load_planner_template",
    "model_tools",
    "new_conversation",
    "planner_tool_entries",
    "planner_tools",
    "rollout_key",
    "run_agent",
    "run_decomposing",
    "run_evaluation",
    "run_planner_react",
    "run_rollout",
    "states_present",
    "upstream_result",
    "verify_both",
    "write_upstream_result",
]


#: Plumbing that was public in 0.2 (not exported; docs/api.md, "Stability").
__getattr__ = _plumbing.deprecated_attribute(
    __name__,
    {
        "iso_time": (lambda: _plumbing.iso_time, "internal helper, no public replacement"),
        "retry_after_seconds": (
            lambda: _model.retry_after_seconds,
            "internal helper of ModelClient, no public replacement",
        ),
    },
)
