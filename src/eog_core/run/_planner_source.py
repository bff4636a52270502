"""Upstream's planner texts, read from an upstream checkout (never copied into the project).

``--upstream-dir DIR`` names a checkout of ServiceNow/EnterpriseOps-Gym; the planner's
prompt template and the message that hands the plan to the executor are read from
``DIR/orchestrators/planner_react.py`` by parsing it (``ast``, nothing is imported or
run): the string ``SimplePlanGenerator._default_prompt_template`` returns, and the
f-string assigned to ``enhanced_user_message`` in ``PlannerReactOrchestrator.execute``.
The file is checked against the sha256 of the revision the parity tests use; another
revision is used with one warning.
"""

from __future__ import annotations

import ast
import hashlib
import json
import logging
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from eog_core.errors import UsageError

__all__ = [
    "PLANNER_REACT_FILE",
    "PLANNER_REACT_SHA256",
    "UPSTREAM_DIR_ENV",
    "UPSTREAM_REVISION",
    "PlannerTemplate",
    "load_planner_template",
]

log = logging.getLogger("eog_core.run.upstream")  # the upstream texts read by both planners

UPSTREAM_REVISION = "271f2c357f763376997dfd16807fcde2474ae41b"
"""The upstream revision whose orchestrators the parity tests drive."""
PLANNER_REACT_FILE = "orchestrators/planner_react.py"
PLANNER_REACT_SHA256 = "a07fb6e609bc2bac8cbd637cdf282afa5a392ba04db893f53add491fe085201e"
"""sha256 of ``orchestrators/planner_react.py`` at :data:`UPSTREAM_REVISION`."""
UPSTREAM_DIR_ENV = "EOG_UPSTREAM_DIR"

_PLAN_FIELDS = ("system_policy", "user_task", "tools")
_warned: set[str] = set()


@attrs.frozen(kw_only=True)
class PlannerTemplate:
    """The planner prompt template and the executor's plan message, as upstream's file has them."""

    prompt: str
    """A ``str.format`` template over ``system_policy``, ``user_task`` and ``tools``."""
    handoff: tuple[str | None, ...]
    """The executor's user message in parts: literal text, ``None`` where the plan goes, and
    a private marker where the original task goes (see :meth:`executor_message`)."""
    source: str
    sha256: str

    @property
    def known_revision(self) -> bool:
        return self.sha256 == PLANNER_REACT_SHA256

    def planner_prompt(
        self, system_prompt: str, user_prompt: str, tools: Sequence[Mapping[str, Any]]
    ) -> str:
        """The one user message the planner is sent (upstream's ``construct_prompt``)."""
        return self.prompt.format(
            system_policy=system_prompt, user_task=user_prompt, tools=json.dumps(tools, indent=2)
        )

    def executor_message(self, user_prompt: str, plan: str) -> str:
        """The task as the executor gets it: the original task with the plan."""
        return "".join(
            plan if part is None else user_prompt if part == _TASK else part
            for part in self.handoff
        )


_TASK = "\x00task"


def warn_other_revision(path: Path, digest: str, expected: str) -> None:
    """Warn once per file that ``path`` (sha256 ``digest``) is not upstream's file at the
    revision the parity tests use (``expected``): its texts are used all the same."""
    if digest != expected and str(path) not in _warned:
        _warned.add(str(path))
        log.warning(
            "%s is not upstream's file at %s (sha256 %s, expected %s): its texts are used, "
            "request-level parity is not checked for it",
            path,
            UPSTREAM_REVISION[:7],
            digest[:12],
            expected[:12],
        )


def upstream_file(
    upstream_dir: str | os.PathLike[str] | None, relative: str, *, reads: str
) -> Path:
    """``relative`` in the upstream checkout ``upstream_dir`` (else ``$EOG_UPSTREAM_DIR``);
    a one-line :class:`UsageError` naming what to pass when there is none. ``reads``: what
    the orchestrator reads there ("--orchestrator planner_react reads ...")."""
    folder = upstream_dir or os.environ.get(UPSTREAM_DIR_ENV)
    if not folder:
        raise UsageError(
            f"{reads}: pass --upstream-dir DIR (or set {UPSTREAM_DIR_ENV}) naming a checkout of "
            f"ServiceNow/EnterpriseOps-Gym @{UPSTREAM_REVISION[:7]}"
        )
    path = Path(folder) / relative
    if not path.is_file():
        raise UsageError(
            f"--upstream-dir {folder}: {relative} is not there (the folder must be a "
            "checkout of ServiceNow/EnterpriseOps-Gym, the one holding evaluate.py)"
        )
    return path


def _returned_string(tree: ast.Module) -> str | None:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == "_default_prompt_template":
            for inner in ast.walk(node):
                if (
                    isinstance(inner, ast.Return)
                    and isinstance(inner.value, ast.Constant)
                    and isinstance(inner.value.value, str)
                ):
                    return inner.value.value
    return None


def _handoff(tree: ast.Module) -> tuple[str | None, ...] | None:
    for node in ast.walk(tree):
        if not (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id == "enhanced_user_message"
            and isinstance(node.value, ast.JoinedStr)
        ):
            continue
        parts: list[str | None] = []
        for value in node.value.values:
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                parts.append(value.value)
            elif isinstance(value, ast.FormattedValue) and value.conversion == -1:
                expression = ast.unparse(value.value)
                if expression == "plan":
                    parts.append(None)
                elif expression.endswith("user_prompt"):
                    parts.append(_TASK)
                else:
                    return None
            else:
                return None
        return tuple(parts)
    return None


def load_planner_template(upstream_dir: str | os.PathLike[str] | None = None) -> PlannerTemplate:
    """Read the planner texts from ``upstream_dir`` (or ``$EOG_UPSTREAM_DIR``).

    Raises :class:`UsageError` in one line when neither is given, the file is missing, or
    it does not hold the two texts; a file of another revision is used with one warning."""
    path = upstream_file(
        upstream_dir,
        PLANNER_REACT_FILE,
        reads="--orchestrator planner_react reads upstream's planner prompt",
    )
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    try:
        tree = ast.parse(data, filename=str(path))
    except (SyntaxError, ValueError) as exc:
        raise UsageError(f"{path} is not Python that can be parsed: {exc}") from exc
    prompt, handoff = _returned_string(tree), _handoff(tree)
    if prompt is None or handoff is None:
        missing = "the planner prompt template" if prompt is None else "the executor's plan message"
        raise UsageError(f"{path} does not hold {missing} where upstream's file has it")
    try:
        prompt.format(**dict.fromkeys(_PLAN_FIELDS, ""))
    except (KeyError, IndexError, ValueError) as exc:
        raise UsageError(f"{path}: the planner prompt template does not format: {exc!r}") from exc
    if None not in handoff:
        raise UsageError(f"{path}: the executor's plan message does not include the plan")
    warn_other_revision(path, digest, PLANNER_REACT_SHA256)
    return PlannerTemplate(prompt=prompt, handoff=handoff, source=str(path), sha256=digest)
