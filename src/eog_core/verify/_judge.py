"""The LLM judge of ``response_check`` verifiers: protocol, prompt and score parsing."""

from __future__ import annotations

import json
from typing import Any, Protocol

import attrs

from eog_core.errors import JudgeError

__all__ = [
    "DEFAULT_JUDGE_PROMPT",
    "JUDGE_TEMPERATURE",
    "Judge",
    "JudgePrompt",
    "JudgeRequest",
    "parse_judge_reply",
]

#: The sampling temperature a judge model is asked with. Upstream's judge is its
#: LLM client, whose temperature defaults to 0.0 (``LLMConfig``, ``LLMClient``).
JUDGE_TEMPERATURE = 0.0


@attrs.frozen(kw_only=True)
class JudgeRequest:
    """Everything a judge sees: the rendered prompts and the pieces they were built from."""

    system_prompt: str
    user_prompt: str
    sql_result: str
    final_response: str
    comparison_prompt: str
    minimum_score: float
    temperature: float = JUDGE_TEMPERATURE
    """The temperature to ask the judge model with (0.0, as upstream's default)."""


class Judge(Protocol):
    """An async callable that asks a model and returns its raw text reply.

    A judge that calls a model should sample at ``request.temperature``."""

    async def __call__(self, request: JudgeRequest) -> str: ...


@attrs.frozen(kw_only=True)
class JudgePrompt:
    """A replaceable prompt template; ``user`` is formatted with ``sql_result``,
    ``final_response`` and ``comparison_prompt``."""

    system: str
    user: str

    def render(
        self, *, sql_result: str, final_response: str, comparison_prompt: str, minimum_score: float
    ) -> JudgeRequest:
        user = self.user.format(
            sql_result=sql_result,
            final_response=final_response,
            comparison_prompt=comparison_prompt,
        )
        return JudgeRequest(
            system_prompt=self.system,
            user_prompt=user,
            sql_result=sql_result,
            final_response=final_response,
            comparison_prompt=comparison_prompt,
            minimum_score=minimum_score,
        )


DEFAULT_JUDGE_PROMPT = JudgePrompt(
    system=(
        "You grade an assistant's final answer against facts read from a database.\n"
        "Score from 1 (wrong or missing) to 10 (complete and exact), judging only whether the "
        "answer states what the database shows, as the grading instruction asks.\n"
        'Reply with one JSON object and nothing else: {"score": <1-10>, "reasoning": "<one sentence>"}'
    ),
    user=(
        "Facts from the database (JSON):\n{sql_result}\n\n"
        "The assistant's final answer:\n{final_response}\n\n"
        "Grading instruction:\n{comparison_prompt}"
    ),
)


def _strip_fences(text: str) -> str:
    if "```json" in text:
        return text.split("```json", 1)[1].split("```", 1)[0].strip()
    if "```" in text:
        return text.split("```", 2)[1].strip()
    return text.strip()


def parse_judge_reply(text: str) -> tuple[Any, str]:
    """The ``(score, reasoning)`` of a judge reply; code fences are stripped.

    Raises :class:`JudgeError` when the reply is not a JSON object.
    """
    body = _strip_fences(text)
    try:
        reply = json.loads(body)
    except json.JSONDecodeError as exc:
        raise JudgeError(f"judge reply is not JSON: {exc.msg} (reply: {text[:200]!r})") from exc
    if not isinstance(reply, dict):
        raise JudgeError(f"judge reply is not a JSON object (reply: {text[:200]!r})")
    return reply.get("score", 0), str(reply.get("reasoning", ""))
