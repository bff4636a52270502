"""The verifier engine: extraction, comparison, policies, offline SQLite runner."""

from eog_core.verify._compare import (
    COMPARISON_TYPES,
    Comparison,
    strict_compare,
    upstream_compare,
)
from eog_core.verify._engine import score_database_state, verify_task
from eog_core.verify._extract import extract_value
from eog_core.verify._judge import (
    DEFAULT_JUDGE_PROMPT,
    JUDGE_TEMPERATURE,
    Judge,
    JudgePrompt,
    JudgeRequest,
    parse_judge_reply,
)
from eog_core.verify._limit import (
    GYM_IMPLICIT_LIMIT,
    TRUNCATED,
    apply_implicit_limit,
    implicit_limit_of,
)
from eog_core.verify._outcome import SqlOutcome, SqlRunner
from eog_core.verify._policy import (
    PARITY,
    STRICT,
    ParityPolicy,
    Policy,
    StrictPolicy,
    read_only_problem,
)
from eog_core.verify._sqlite import SqliteSqlRunner
from eog_core.verify._verdict import FailureKind, TaskVerdict, ToolLatency, VerifierResult

__all__ = [
    "COMPARISON_TYPES",
    "DEFAULT_JUDGE_PROMPT",
    "GYM_IMPLICIT_LIMIT",
    "JUDGE_TEMPERATURE",
    "PARITY",
    "STRICT",
    "TRUNCATED",
    "Comparison",
    "FailureKind",
    "Judge",
    "JudgePrompt",
    "JudgeRequest",
    "ParityPolicy",
    "Policy",
    "SqlOutcome",
    "SqlRunner",
    "SqliteSqlRunner",
    "StrictPolicy",
    "TaskVerdict",
    "ToolLatency",
    "VerifierResult",
    "apply_implicit_limit",
    "compare_values",
    "extract_value",
    "implicit_limit_of",
    "parse_judge_reply",
    "read_only_problem",
    "score_database_state",
    "strict_compare",
    "upstream_compare",
    "verify_task",
]


def compare_values(
    actual: object, expected: object, comparison_type: object, policy: Policy = STRICT
) -> Comparison:
    """Compare ``actual`` with ``expected`` under ``policy`` (``passed`` and ``details``)."""
    return policy.compare(actual, expected, comparison_type)
