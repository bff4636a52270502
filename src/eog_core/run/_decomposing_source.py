"""Upstream's ``decomposing`` texts, read from an upstream checkout (never copied into the project).

``--upstream-dir DIR``: the texts come from ``DIR/orchestrators/decomposing_planner.py``,
parsed with ``ast`` (nothing imported or run): the planner's decomposition template, the
line each tool gets in it, the plan with its rationale, the working memory as a sub-agent
sees it, the sub-agent's prompt, the memory-extraction prompt with its list of actions, a
failed subtask's summary and the final output composed from the subtask results. Each is
an :class:`~eog_core.run._upstream_text.Text` whose slots must be ones eog_core fills;
upstream's caps (turns per subtask, planner attempts) are read from the same file's
defaults. The file is checked against the sha256 of the revision the parity tests use;
another revision is used with one warning.
"""

from __future__ import annotations

import ast
import hashlib
import os
from pathlib import Path

import attrs

from eog_core.errors import UsageError
from eog_core.run._planner_source import UPSTREAM_REVISION, upstream_file, warn_other_revision
from eog_core.run._upstream_text import Text, find_function, first_assigned, list_appends

__all__ = [
    "DECOMPOSING_FILE",
    "DECOMPOSING_SHA256",
    "DecomposingTemplate",
    "load_decomposing_template",
]


DECOMPOSING_FILE = "orchestrators/decomposing_planner.py"
DECOMPOSING_SHA256 = "083e146a0c80f7dbf9fd5b28c3c52e838e9587cd7e56f68c7d3bfe4afc2ba1e1"
"""sha256 of ``orchestrators/decomposing_planner.py`` at :data:`UPSTREAM_REVISION`."""

_SUBTASK = {f"self.subtask.{k}" for k in ("title", "description", "rationale", "expected_outcome")}
_RESULT = {f"result.{k}" for k in ("subtask_id", "title", "summary", "error", "success")}


@attrs.frozen(kw_only=True, eq=False)
class DecomposingTemplate:
    """Upstream's texts for ``decomposing``, each as its file has it (see the module)."""

    decomposition: str
    """A ``str.format`` template over ``system_policy``, ``user_task`` and ``tools``."""
    tool_line: Text
    full_plan: Text
    memory_empty: str
    memory_parts: Text
    subtask_prompt: Text
    summary_fallback: Text
    error_summary: Text
    action_line: Text
    actions_text: Text
    extraction_prompt: Text
    final_head: Text
    final_status: Text
    final_parts: tuple[Text, Text, Text, Text]
    """The subtask heading, its summary, its error (when it has one), the last summary."""
    max_subtask_turns: int
    planner_attempts: int
    source: str
    sha256: str

    @property
    def known_revision(self) -> bool:
        return self.sha256 == DECOMPOSING_SHA256


def _default(function: ast.FunctionDef | ast.AsyncFunctionDef | None, name: str) -> int | None:
    if function is None:
        return None
    arguments = function.args
    positional = arguments.posonlyargs + arguments.args
    pairs = list(
        zip(
            positional[len(positional) - len(arguments.defaults) :], arguments.defaults, strict=True
        )
    )
    pairs += [
        (a, d)
        for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True)
        if d is not None
    ]
    for argument, default in pairs:
        if argument.arg == name and isinstance(default, ast.Constant):
            value = default.value
            return value if isinstance(value, int) and not isinstance(value, bool) else None
    return None


def _first_return(function: ast.AST | None, kind: type[ast.expr]) -> ast.expr | None:
    for node in ast.walk(function) if function is not None else ():
        if isinstance(node, ast.Return) and isinstance(node.value, kind):
            return node.value
    return None


def _keyword_of_call(function: ast.AST | None, callee: str, keyword: str) -> ast.expr | None:
    """The ``keyword=`` f-string of the first ``callee(...)`` call that has one."""
    for node in ast.walk(function) if function is not None else ():
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id != callee:
                continue
            for item in node.keywords:
                if item.arg == keyword and isinstance(item.value, ast.JoinedStr):
                    return item.value
    return None


def _list_comp_element(node: ast.expr | None) -> ast.expr | None:
    return node.elt if isinstance(node, ast.ListComp) else None


def _or_fallback(node: ast.expr | None) -> ast.expr | None:
    """``a or (f"...")``: the f-string."""
    if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or) and len(node.values) == 2:
        return node.values[1]
    return None


def _texts(tree: ast.Module) -> dict[str, tuple[ast.expr | None, set[str] | None]]:
    """Each text's node (None: not found) and the slots it may use (None: any one slot)."""
    plan = find_function(tree, "DecomposingPlanGenerator", "generate_plan_and_subtasks")
    prompt = find_function(tree, "DecomposingPlanGenerator", "construct_prompt")
    memory = find_function(tree, "WorkingMemory", "to_prompt_string")
    subtask = find_function(tree, "ExecutorSubAgent", "_generate_subtask_prompt")
    execute = find_function(tree, "ExecutorSubAgent", "execute")
    extract = find_function(tree, "ExecutorSubAgent", "_extract_memory_updates")
    final = find_function(tree, "DecomposingPlannerOrchestrator", "_generate_final_output")
    appends = list_appends(final, "parts") if final is not None else []
    appends += [None] * (4 - len(appends))  # type: ignore[list-item]
    action = list_appends(extract, "actions_summary") if extract is not None else []
    action_slots = {"tool_name", "success", "result_data", "json.dumps(result_data, indent=2)"}
    final_slots = {"status", "results[-1].summary", *_RESULT}
    return {
        "tool_line": (_list_comp_element(_assign(prompt, "tool_descriptions")), {"t"}),
        "full_plan": (_assign(plan, "full_plan"), {"strategic_plan", "rationale"}),
        "memory_parts": (_assign(memory, "parts"), {"json.dumps(self.data, indent=2)"}),
        "subtask_prompt": (_first_return(subtask, ast.JoinedStr), {*_SUBTASK, "memory_context"}),
        "summary_fallback": (_or_fallback(_assign(execute, "summary")), None),
        "error_summary": (_keyword_of_call(execute, "SubTaskResult", "summary"), {"str(e)"}),
        "action_line": (action[0] if len(action) == 1 else None, action_slots),
        "actions_text": (
            _assign(extract, "actions_text"),
            {"actions_summary", "'\\n'.join(actions_summary)"},
        ),
        "extraction_prompt": (_assign(extract, "extraction_prompt"), {*_SUBTASK, "actions_text"}),
        "final_head": (_assign(final, "parts"), set()),
        "final_status": (_assign(final, "status"), {"result.success"}),
        "final_subtask": (appends[0], final_slots),
        "final_summary": (appends[1], final_slots),
        "final_error": (appends[2], final_slots),
        "final_result": (appends[3] if len(appends) == 4 else None, final_slots),
    }


def _assign(function: ast.AST | None, name: str) -> ast.expr | None:
    return first_assigned(function, name) if function is not None else None


def _checked(path: Path, name: str, node: ast.expr | None, allowed: set[str] | None) -> Text:
    if node is None:
        raise UsageError(
            f"{path} does not hold upstream's {name} text where @{UPSTREAM_REVISION[:7]} has it"
        )
    text = Text(node)
    slots = text.slots()
    unknown = sorted(slots - allowed) if allowed is not None else []
    if allowed is None and len(slots) != 1:
        unknown = sorted(slots) or ["(none)"]
    if unknown:
        raise UsageError(
            f"{path}: upstream's {name} text uses {unknown[0]}, which eog_core does not fill"
        )
    return text


def load_decomposing_template(
    upstream_dir: str | os.PathLike[str] | None = None,
) -> DecomposingTemplate:
    """Read the ``decomposing`` texts from ``upstream_dir`` (or ``$EOG_UPSTREAM_DIR``).

    Raises :class:`UsageError` in one line when neither is given, the file is missing, or a
    text is not where upstream's file has it; another revision is used with one warning."""
    path = upstream_file(
        upstream_dir, DECOMPOSING_FILE, reads="--orchestrator decomposing reads upstream's prompts"
    )
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    try:
        tree = ast.parse(data, filename=str(path))
    except (SyntaxError, ValueError) as exc:
        raise UsageError(f"{path} is not Python that can be parsed: {exc}") from exc
    generator = find_function(tree, "DecomposingPlanGenerator", "_default_decomposition_template")
    decomposition = Text(_first_return(generator, ast.Constant) or ast.Constant(None)).literal()
    if decomposition is None:
        raise UsageError(f"{path} does not hold upstream's decomposition template")
    try:
        decomposition.format(system_policy="", user_task="", tools="")
    except (KeyError, IndexError, ValueError) as exc:
        raise UsageError(f"{path}: the decomposition template does not format: {exc!r}") from exc
    memory = find_function(tree, "WorkingMemory", "to_prompt_string")
    memory_empty = Text(_first_return(memory, ast.Constant) or ast.Constant(None)).literal()
    if memory_empty is None:
        raise UsageError(f"{path} does not hold upstream's empty working memory text")
    texts = {name: _checked(path, name, *found) for name, found in _texts(tree).items()}
    init = find_function(tree, "DecomposingPlannerOrchestrator", "__init__")
    turns = _default(init, "max_iterations")
    plan = find_function(tree, "DecomposingPlanGenerator", "generate_plan_and_subtasks")
    attempts = _default(plan, "max_retries")
    if turns is None or attempts is None or turns < 1 or attempts < 1:
        raise UsageError(f"{path} does not hold upstream's caps (max_iterations, max_retries)")
    warn_other_revision(path, digest, DECOMPOSING_SHA256)
    return DecomposingTemplate(
        decomposition=decomposition,
        memory_empty=memory_empty,
        final_parts=(
            texts.pop("final_subtask"),
            texts.pop("final_summary"),
            texts.pop("final_error"),
            texts.pop("final_result"),
        ),
        max_subtask_turns=turns,
        planner_attempts=attempts,
        source=str(path),
        sha256=digest,
        **texts,
    )
