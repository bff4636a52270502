"""How a model endpoint's HTTP answers read: what the client and its preflight both need.

An :class:`Answer` is one HTTP answer as text; :func:`error_detail` is the server's own words
in one line; :func:`backend_missing` tells a proxy whose model server is gone from a
model that answered; :class:`Hung` is a request that heard nothing and whose endpoint
did not answer a probe either; :func:`is_context_overflow`, :func:`is_tool_call_parse_error`
and :func:`tool_call_raw_text` read what an error answer says went wrong.
"""

from __future__ import annotations

import email.utils
import json
import re
import time
from collections.abc import Mapping
from typing import Any

import attrs

__all__ = [
    "RETRY_STATUSES",
    "Answer",
    "Hung",
    "backend_missing",
    "error_detail",
    "is_context_overflow",
    "is_tool_call_parse_error",
    "json_or_none",
    "model_ids",
    "retry_after_seconds",
    "tool_call_raw_text",
]

RETRY_STATUSES = frozenset({408, 409, 429})
"""Answers below 500 that a retry may change (besides every 5xx)."""


# How servers say the conversation no longer fits (docs/run.md lists each wording):
# OpenAI "context_length_exceeded" / "This model's maximum context length is 8192 tokens";
# llama.cpp "exceed_context_size_error" / "request (1673 tokens) exceeds the available context
# size (1024 tokens)"; vLLM "This model's maximum context length is 2048 tokens. However, you
# requested ..." and "The decoder prompt (length 5000) is longer than the maximum model length
# of 4096"; SGLang "The input (5000 tokens) is longer than the model's context length (4096
# tokens)" and "Requested token count exceeds the model's maximum context length"; Anthropic-
# style gateways "prompt is too long".
_OVERFLOW = re.compile(
    r"context[_ ]length|context window|maximum context|prompt is too long|too many (input )?tokens"
    r"|input is too long|exceeds the (model'?s? )?(maximum|max)\w* (context|input|prompt|sequence"
    r"|model|number of tokens|tokens)|exceeds? (the )?available context"
    r"|exceed_context_size|longer than the (maximum model length|model'?s context)"
    r"|maximum model length",
    re.IGNORECASE,
)
# llama.cpp's own overflow wording, also when an older build answers it with HTTP 500.
_LLAMA_CPP_OVERFLOW = re.compile(r"exceed_context_size_error|exceeds the available context size")
# vLLM's "'max_tokens' or 'max_completion_tokens' is too large: 4096. This model's maximum
# context length is 8192 tokens and your request has 4200 input tokens" is an overflow too:
# the prompt grew until prompt + output limit no longer fit.
# The server could not parse the tool call the model wrote: llama.cpp "Failed to parse tool
# call arguments as JSON" (HTTP 500) and its chat parser's "Failed to parse input at pos N: ...";
# vLLM's tool parsers "Error in extracting tool call from response" / "Failed to parse tool
# call"; SGLang "Failed to parse function call".
_TOOL_CALL_PARSE = re.compile(
    r"failed to parse (the )?(tool[_ ]call|function[_ ]call|input at pos)|error in extracting tool"
    r"[_ ]call|invalid tool[_ ]call(?![_ ]?id)|tool[_ ]call (arguments )?(is |are )?not valid json"
    r"|could not parse tool[_ ]call",
    re.IGNORECASE,
)
_RAW_AFTER = re.compile(r"failed to parse input at pos \d+:\s*|as JSON:\s*", re.IGNORECASE)


class Hung(Exception):
    """A request received nothing for ``idle_timeout`` and the endpoint did not answer a probe."""


@attrs.frozen
class Answer:
    status: int
    text: str
    headers: Mapping[str, str]


def json_or_none(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def error_detail(text: str) -> str:
    """The server's message in an error body (OpenAI's ``error.code/type/message``), or its start."""
    body = json_or_none(text)
    if body is None:
        return text[:500]
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        parts = [str(error.get(k)) for k in ("code", "type", "message") if error.get(k)]
        return ": ".join(parts)[:500]
    if isinstance(error, str):
        return error[:500]
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        return str(body["message"])[:500]
    return text[:500]


def backend_missing(status: int, parsed: Any) -> bool:
    """A proxy's 502/504, or an answer that is not a model's JSON at all (an HTML page): the
    model server behind the URL is not there, which retrying for minutes will not change."""
    return status in (502, 504) or (200 <= status < 300 and not isinstance(parsed, dict))


def model_ids(text: str) -> set[str] | None:
    """The model names of a ``GET /models`` answer (OpenAI's ``data[].id``), None if unreadable."""
    body = json_or_none(text)
    data = body.get("data", body.get("models")) if isinstance(body, dict) else None
    if not isinstance(data, list):
        return None
    names: set[str] = set()
    for entry in data:
        if isinstance(entry, Mapping):
            names.update(
                str(entry[k]) for k in ("id", "name", "model") if isinstance(entry.get(k), str)
            )
    return names


def retry_after_seconds(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """The wait a 429/503 answer asks for: ``retry-after-ms``, then ``Retry-After`` (seconds or date)."""
    lowered = {k.lower(): v for k, v in headers.items()}
    if (millis := lowered.get("retry-after-ms")) is not None:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = lowered.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def is_context_overflow(status: int, detail: str) -> bool:
    """Does an error answer say the request no longer fits the context window?"""
    if status == 500:
        return bool(_LLAMA_CPP_OVERFLOW.search(detail))
    if status not in (400, 413, 422):
        return False
    return "context_length_exceeded" in detail or bool(_OVERFLOW.search(detail))


def is_tool_call_parse_error(status: int, detail: str) -> bool:
    """Does an error answer say the server could not parse the model's tool call?"""
    return (status == 400 or status >= 500) and bool(_TOOL_CALL_PARSE.search(detail))


def tool_call_raw_text(body: Any, detail: str) -> str | None:
    """The model's own text in a tool-call parse error, where the server returned it."""
    error = body.get("error") if isinstance(body, Mapping) else None
    for source in (error, body):
        if isinstance(source, Mapping):
            for key in ("raw_output", "generated_text", "text", "content", "output"):
                if isinstance(source.get(key), str) and source[key]:
                    return str(source[key])
    match = _RAW_AFTER.search(detail)
    return detail[match.end() :] or None if match else None
