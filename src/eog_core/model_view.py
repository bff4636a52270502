"""What the model sees of a rollout, built the way upstream builds it.

Upstream's ReAct loop (``orchestrators/react.py``) gives the model each tool
result as ``json.dumps`` of the MCP ``result`` object, takes the text of the
last message as the final answer, and records the tools used as unique names
in first-call order. Every runner and adapter calls these three helpers so a
rollout through eog_core is comparable with upstream's leaderboard.

The module is pure: it imports neither aiohttp nor :mod:`eog_core.gym`, and
reads records, messages and output items by duck typing (mappings or objects).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from eog_core.errors import JsonRpcError, UsageError

__all__ = ["final_answer", "tool_observation", "tools_used"]

#: Content-part types whose ``text`` upstream's ``get_text_content`` reads
#: (LangChain names every text part ``text``; the OpenAI APIs name them so).
_TEXT_PARTS = frozenset({"text", "output_text", "input_text"})
#: Responses-API items that belong to the model's turn (besides assistant messages).
_MODEL_ITEMS = frozenset(
    {
        "function_call",
        "reasoning",
        "custom_tool_call",
        "web_search_call",
        "file_search_call",
        "computer_call",
    }
)


def _get(obj: Any, key: str) -> Any:
    return obj.get(key) if isinstance(obj, Mapping) else getattr(obj, key, None)


def tool_observation(result: Any) -> str:
    """The tool message content upstream gives the model for one tool call.

    ``result`` is a :class:`~eog_core.gym.ToolResult` (its ``raw`` MCP result), a raw
    MCP ``result`` object (a mapping) or any other JSON value: the answer is
    ``json.dumps`` of it with Python's defaults (ASCII escapes, ``", "``/``": "``
    separators, the gym's key order), ``isError`` included. ``None`` or a
    :class:`~eog_core.errors.JsonRpcError` give ``"null"`` (a JSON-RPC error answer
    has no result); any other exception (HTTP failure, timeout, unreachable gym)
    gives ``"{}"``, as upstream's failed request does.
    """
    if isinstance(result, JsonRpcError):
        return "null"
    if isinstance(result, BaseException):
        return "{}"
    raw = _get(result, "raw") if not isinstance(result, Mapping | list | str) else None
    payload = raw if isinstance(raw, Mapping) else result
    try:
        return json.dumps(payload)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"tool result is not JSON ({type(payload).__name__}): {exc}") from exc


def _first_text(content: Any) -> str | None:
    """Upstream's ``get_text_content`` for one message: a string content as is, else the
    first text part's text; None when there is no text part."""
    if isinstance(content, str):
        return content
    for part in content if isinstance(content, list | tuple) else ():
        if _get(part, "type") in _TEXT_PARTS:
            text = _get(part, "text")
            return text if isinstance(text, str) else ""
    return None


def _is_model_item(item: Any) -> bool:
    kind = _get(item, "type")
    if kind == "message":
        return bool(_get(item, "role") == "assistant")
    return kind in _MODEL_ITEMS


def final_answer(transcript: Any) -> str:
    """The final answer upstream records: the text of the last message.

    ``transcript`` is a list of Chat-Completions messages, a list of Responses-API
    input/output items, a Responses object (its ``output``), one message or a string. A message's
    text is its string content or its first text part (``""`` when it has none).
    When the list ends with the model's Responses output, that turn (its trailing
    ``message``/``function_call``/``reasoning`` items) is one message, as LangChain
    makes it one ``AIMessage``. When it ends with a tool result (the step budget ran
    out), the answer is that observation, as upstream's is.
    """
    if transcript is None:
        return ""
    if isinstance(transcript, str):
        return transcript
    if not isinstance(transcript, list | tuple):
        output = _get(transcript, "output")
        if isinstance(output, list | tuple):
            transcript = output
        elif isinstance(transcript, Mapping) or _get(transcript, "content") is not None:
            transcript = [transcript]  # one message
        elif not isinstance(transcript, Iterable):
            raise UsageError(
                f"final_answer expects messages or output items, not {type(transcript).__name__}"
            )
    items = list(transcript)
    if not items:
        return ""
    last = items[-1]
    if _get(last, "type") == "function_call_output":
        return _first_text(_get(last, "output")) or ""
    if _get(last, "type") is not None and _is_model_item(last):
        start = len(items)
        while start and _is_model_item(items[start - 1]):
            start -= 1
        for item in items[start:]:
            text = _first_text(_get(item, "content")) if _get(item, "type") == "message" else None
            if text is not None:
                return text
        return ""
    return _first_text(_get(last, "content")) or ""


def _call_names(item: Any) -> Iterable[str]:
    if isinstance(item, str):
        yield item
        return
    calls = _get(item, "tool_calls")
    if isinstance(calls, list | tuple):  # a chat assistant message: its calls
        for call in calls:
            yield from _call_names(call)
        return
    function = _get(item, "function")
    if function is not None and isinstance(_get(function, "name"), str):
        yield _get(function, "name")  # a Chat-Completions tool call
        return
    if _get(item, "role") is not None or _get(item, "type") not in (None, "function_call"):
        return  # messages, tool results and reasoning items name no call
    name = _get(item, "name")
    if isinstance(name, str):
        yield name


def tools_used(calls: Iterable[Any]) -> list[str]:
    """Unique tool names in first-call order: upstream's ``tools_used`` run field.

    ``calls`` holds :class:`~eog_core.gym.ToolCallRecord` objects, names, tool-call
    mappings (``{"name": ...}``, Chat ``{"function": {"name": ...}}``, Responses
    ``function_call`` items) or whole transcripts (assistant messages contribute
    their ``tool_calls``; other messages and items are skipped). ``tool_execution``
    verifiers count every call, repeats included: give them the calls, not this list.
    """
    if isinstance(calls, str):
        raise UsageError("tools_used expects a sequence of calls, not one string")
    return list(dict.fromkeys(name for call in calls for name in _call_names(call)))
