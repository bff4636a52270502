"""Which part a request to the scripted model plays: ``planner_react``'s planner or the executor.

A request is the planner's when its ``model`` names a plan of the server, or when it
offers no tools and its conversation is one user message (upstream's planner sends
exactly that; the executor's requests start with the system prompt and offer the task's
tools, the judge's start with a system prompt too). Everything else is the executor's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["PLAN_TEXT", "demo_plans", "is_planner_request"]

PLAN_TEXT = (
    "INTENT: renew the customer's entitlement and open a case for the contact.\n"
    "STEPS: look up the account and the contact, read the entitlement, extend it, then "
    "open the case and report what changed."
)
"""The plan the demo plays (our own words: any text the executor can follow)."""


def demo_plans() -> dict[str, Any]:
    """Planner answers by model name: a plan, an empty answer (the ``no_plan`` ending), and a
    prompt over the context window."""
    return {"demo-plan": PLAN_TEXT, "plan-empty": "", "plan-overflow": "overflow"}


def is_planner_request(body: Mapping[str, Any], plans: Mapping[str, Any]) -> bool:
    if body.get("model") in plans:
        return True
    if body.get("tools"):
        return False
    conversation = body.get("messages", body.get("input"))
    return (
        isinstance(conversation, list)
        and len(conversation) == 1
        and isinstance(conversation[0], Mapping)
        and conversation[0].get("role") == "user"
    )
