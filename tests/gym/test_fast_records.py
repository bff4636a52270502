"""The hot path's records built without their ``__init__`` equal the records the classes
build: every field set, to the value given (a field added to a record fails here until
its fast builder sets it too)."""

from __future__ import annotations

import inspect
from typing import Any

import attrs
import pytest

from eog_core.gym import HttpRequest, HttpResponse, ToolCallRecord, ToolResult
from eog_core.gym._http import new_request, new_response
from eog_core.gym._tool_calls import new_call_record


async def _on_message(message: Any) -> None:
    del message


def _sse_until(message: Any) -> bool:
    return message is None


def _fields(cls: type[Any]) -> list[str]:
    return [field.name for field in attrs.fields(cls)]


def test_a_request_built_fast_is_the_request_the_class_builds() -> None:
    values: dict[str, Any] = {
        "method": "POST",
        "url": "http://gym:1/mcp",
        "headers": {"x-database-id": "db"},
        "json": {"id": 7},
        "timeout": 12.5,
        "connect_timeout": 3.5,
        "idempotent": False,
        "gym": "g",
        "sse_until": _sse_until,
        "on_message": _on_message,
        "raw_body": True,
        "deadline": 99.0,
    }
    assert set(_fields(HttpRequest)) == {*values, "on_open"}  # on_open: always None here
    assert list(inspect.signature(new_request).parameters) == list(values)
    fast = new_request(**values)
    assert fast == HttpRequest(**values)
    assert type(fast) is HttpRequest and fast.on_open is None
    assert new_request("GET", "u", {}, None, 1.0, 1.0, True, None, None, None, False, None) == (
        HttpRequest(method="GET", url="u", timeout=1.0, connect_timeout=1.0)
    )


@pytest.mark.parametrize(("body", "raw"), [({"result": 1}, b""), (None, b"{}\n"), ([1], b"x")])
def test_an_answer_built_fast_is_the_answer_the_class_builds(body: Any, raw: bytes) -> None:
    headers = {"Content-Type": "application/json"}
    assert set(_fields(HttpResponse)) == {
        "status",
        "headers",
        "body",
        "raw",
        "messages",
        "is_event_stream",
    }
    fast = new_response(201, headers, body, raw)
    assert fast == HttpResponse(status=201, headers=headers, body=body, raw=raw)
    assert fast.messages == () and fast.is_event_stream is False


def test_a_call_record_built_fast_is_the_record_the_class_builds() -> None:
    values: dict[str, Any] = {
        "name": "find_account",
        "arguments": {"name": "x"},
        "gym": "g",
        "latency_ms": 1.25,
        "is_error": True,
    }
    assert list(inspect.signature(new_call_record).parameters) == list(values)
    assert set(_fields(ToolCallRecord)) == {*values, "error", "local", "cancelled", "error_kind"}
    assert new_call_record(**values) == ToolCallRecord(**values)


def _read_as_the_loop_did(result: dict[str, Any]) -> ToolResult:
    """``from_result`` as it was before its shortcut: the reference."""
    content = [item for item in result.get("content") or () if isinstance(item, dict)]
    texts = [str(item.get("text", "")) for item in content if item.get("type") == "text"]
    return ToolResult(
        content=tuple(content),
        text=texts[0] if len(texts) == 1 else "\n".join(texts),
        structured=result.get("structuredContent"),
        is_error=bool(result.get("isError", False)),
        raw=result,
    )


@pytest.mark.parametrize(
    "result",
    [
        {"content": [{"type": "text", "text": "one"}]},
        {
            "content": [{"type": "text", "text": "one"}],
            "isError": True,
            "structuredContent": {"a": 1},
        },
        {"content": [{"type": "text"}]},
        {"content": [{"type": "text", "text": 5}]},
        {"content": [{"type": "image", "data": "..."}]},
        {"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
        {"content": ["not an object", {"type": "text", "text": "kept"}]},
        {"content": ["not an object"]},
        {"content": []},
        {"content": None},
        {"content": ({"type": "text", "text": "a tuple"},)},
        {},
    ],
)
def test_a_tool_result_is_read_as_before_its_shortcut(result: dict[str, Any]) -> None:
    read = ToolResult.from_result(result)
    assert read == _read_as_the_loop_did(result)
    assert type(read) is ToolResult


def test_a_subclass_of_tool_result_is_built_by_its_own_init() -> None:
    @attrs.define(kw_only=True)
    class Tagged(ToolResult):
        tag: str = "t"

    read = Tagged.from_result({"content": [{"type": "text", "text": "x"}]})
    assert type(read) is Tagged and read.tag == "t" and read.text == "x"
