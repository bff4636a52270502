"""Deciding a ``response_check`` verifier from its judge's reply, under either policy.

Parity reads the reply exactly as upstream does: a fenced block is cut out and
stripped, anything else is parsed as it came (a leading non-breaking space
fails), the reply must be a JSON object, ``score`` (default 0) is compared with
``minimum_comparison_value`` as given, ``reasoning`` is kept as given (null
stays null). Strict strips every kind of whitespace first and keeps the rest.
Either way a failure is text for ``"Judge comparison failed: <text>"``, never
an exception out of the engine.
"""

from __future__ import annotations

import json
import operator
from typing import Any

from eog_core.verify._judge import parse_judge_reply

__all__ = ["JudgeReplyError", "judge_decision", "reply_text"]


class JudgeReplyError(Exception):
    """A judge reply that cannot be scored; the message is upstream's text for it."""


def reply_text(reply: Any) -> str:
    """The text of a judge's reply: a string, or the first text block of a content list."""
    if isinstance(reply, list):
        for block in reply:
            if isinstance(block, dict) and block.get("type") == "text":
                return str(block.get("text", ""))
        return ""
    return str(reply) if reply else ""


def _upstream_body(text: str) -> str:
    if "```json" in text:
        return text.split("```json")[1].split("```")[0].strip()
    if "```" in text:
        return text.split("```")[1].split("```")[0].strip()
    return text


def _parse_upstream(text: str) -> tuple[Any, Any]:
    try:
        reply = json.loads(_upstream_body(text))
    except (ValueError, RecursionError) as exc:
        raise JudgeReplyError(str(exc)) from exc
    if not isinstance(reply, dict):
        raise JudgeReplyError(f"'{type(reply).__name__}' object has no attribute 'get'")
    return reply.get("score", 0), reply.get("reasoning", "")


def judge_decision(reply: Any, minimum: Any, *, upstream: bool) -> tuple[Any, Any, Any]:
    """``(score, reasoning, passed)`` for a judge reply; :class:`JudgeReplyError` if it fails."""
    text = reply_text(reply)
    if upstream:
        score, reasoning = _parse_upstream(text)
    else:
        try:
            score, reasoning = parse_judge_reply(text)
        except Exception as exc:  # any failure is the judge's, reported as text
            raise JudgeReplyError(str(exc)) from exc
    try:
        passed = operator.ge(score, minimum)
    except TypeError as exc:
        raise JudgeReplyError(str(exc)) from exc
    return score, reasoning, passed
