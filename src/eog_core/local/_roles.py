"""Which part a request to the scripted model plays, and what the planners' parts answer.

``planner_react``'s planner: a request whose ``model`` names a plan of the server, or one
that offers no tools and whose conversation is one user message (upstream's planner sends
exactly that). ``decomposing`` adds three parts: its planner (the same shape, asking for
``"subtasks"``: answered with the demo decomposition, a JSON block), a sub-agent (tools
offered, the user message naming ``[part K]``, as the demo decomposition's subtask titles
do: it plays the script ``<model>#K`` when the server has one) and the memory question
after a subtask (no tools, the sub-agent's conversation with one more user message:
answered ``memory#K``, or ``{}``). Everything else is the executor's (the judge's requests
start with a system prompt and offer no tools).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "DECOMPOSITION",
    "PLAN_TEXT",
    "answered_from_plans",
    "demo_part_scripts",
    "demo_plans",
    "is_planner_request",
    "planned_answer",
    "script_name",
]

PLAN_TEXT = (
    "INTENT: renew the customer's entitlement and open a case for the contact.\n"
    "STEPS: look up the account and the contact, read the entitlement, extend it, then "
    "open the case and report what changed."
)
"""The plan the demo plays (our own words: any text the executor can follow)."""


def _subtask(
    number: int, title: str, does: str, after: list[int], tools: list[str]
) -> dict[str, Any]:
    return {
        "id": number,
        "title": f"{title} [part {number}]",
        "description": does,
        "rationale": "The request asks for it.",
        "dependencies": after,
        "required_tools": tools,
        "expected_outcome": f"{title}: done.",
    }


DECOMPOSITION: dict[str, Any] = {
    "strategic_plan": "Renew the entitlement, open the case on it, then resolve the sign-in case.",
    "rationale": "The new case needs the renewed entitlement; the sign-in case stands alone.",
    "subtasks": [
        _subtask(
            1,
            "Renew the entitlement",
            "Find the account, the product and the expired entitlement; reactivate it.",
            [],
            ["find_account", "find_product", "find_entitlements", "update_entitlement"],
        ),
        _subtask(
            2,
            "Open the case for Kenji",
            "Find the contact Kenji and open a P2 case under the renewed entitlement.",
            [1],
            ["find_contact", "create_case"],
        ),
        _subtask(
            3,
            "Resolve the sign-in case",
            "Resolve case CS0001003 with close notes and tell the customer in a comment.",
            [],
            ["list_cases", "update_case", "add_case_comment"],
        ),
    ],
}
"""The demo's decomposition (our own words), three subtasks over the demo's trajectory."""


def demo_plans() -> dict[str, Any]:
    """Planner answers by model name: a plan, an empty answer (the ``no_plan`` ending), a
    prompt over the context window; ``decomposing``'s decomposition, answers that hold none
    (``plan-no-json``: no JSON, ``plan-forward``: a forward dependency,
    ``plan-wrong-types``: subtasks that are not objects) and the memory answers."""
    fenced = f"Here is the decomposition.\n```json\n{json.dumps(DECOMPOSITION, indent=2)}\n```"
    forward = dict(DECOMPOSITION, subtasks=[dict(DECOMPOSITION["subtasks"][0], dependencies=[2])])
    return {
        "demo-plan": PLAN_TEXT,
        "plan-empty": "",
        "plan-overflow": "overflow",
        "demo-decomposition": fenced,
        "plan-no-json": "I would rather not plan this.",
        "plan-forward": json.dumps(forward),
        "plan-wrong-types": '{"strategic_plan": "x", "subtasks": ["first", "second"]}',
        "memory#1": '```json\n{"account_id": "acc_001", "entitlement_id": "ent_002"}\n```',
        "memory#2": '{"case_contact_id": "con_002"}',
        "memory#3": "Nothing to keep.",
    }


def demo_part_scripts(steps: Sequence[Any], final_text: str) -> dict[str, list[Any]]:
    """The demo's correct trajectory cut along the demo decomposition: ``demo#1`` to ``#3``."""
    return {
        "demo#1": [list(steps[0:2]), [steps[2]], [steps[3]], "The entitlement runs to 2027-06-30."],
        "demo#2": [[steps[4]], [steps[5]], "Case opened for Kenji Ito."],
        "demo#3": [[steps[6]], list(steps[7:9]), final_text],
    }


_PART = re.compile(r"\[part (\d+)\]")


def _conversation(body: Mapping[str, Any]) -> list[Any]:
    conversation = body.get("messages", body.get("input"))
    return conversation if isinstance(conversation, list) else []


def _part(conversation: Sequence[Any]) -> str | None:
    """K of the ``[part K]`` the sub-agent's user message names."""
    for message in conversation[:2]:
        if isinstance(message, Mapping) and message.get("role") == "user":
            found = _PART.search(str(message.get("content")))
            return found.group(1) if found else None
    return None


def is_planner_request(body: Mapping[str, Any], plans: Mapping[str, Any]) -> bool:
    if body.get("model") in plans:
        return True
    if body.get("tools"):
        return False
    conversation = _conversation(body)
    return (
        len(conversation) == 1
        and isinstance(conversation[0], Mapping)
        and conversation[0].get("role") == "user"
    )


def _is_memory_request(body: Mapping[str, Any]) -> bool:
    conversation = _conversation(body)
    return (
        not body.get("tools")
        and len(conversation) > 2
        and isinstance(conversation[-1], Mapping)
        and conversation[-1].get("role") == "user"
    )


def answered_from_plans(body: Mapping[str, Any], plans: Mapping[str, Any]) -> bool:
    """Is the request a planner's or a memory question (one answer, no script)?"""
    return is_planner_request(body, plans) or _is_memory_request(body)


def planned_answer(body: Mapping[str, Any], plans: Mapping[str, Any], default_plan: str) -> Any:
    """What a request :func:`answered_from_plans` answers."""
    conversation = _conversation(body)
    if _is_memory_request(body):
        return plans.get(f"memory#{_part(conversation)}", "{}")
    name = body.get("model", "")
    if name in plans:
        return plans[name]
    if conversation and '"subtasks"' in str(conversation[0].get("content")):
        return plans.get("demo-decomposition", plans[default_plan])
    return plans[default_plan]


def script_name(body: Mapping[str, Any], scripts: Mapping[str, Any]) -> str:
    """The script a request plays: ``<model>#K`` for a sub-agent of part K, when there is one."""
    name = str(body.get("model", ""))
    part = _part(_conversation(body))
    return f"{name}#{part}" if part is not None and f"{name}#{part}" in scripts else name
