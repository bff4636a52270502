"""A Chat Completions tool call's arguments as the next request shows them: as upstream's
LangChain writes them again (found by the shared-task differential, docs/parity.md), while the
record keeps them as the model wrote them."""

from __future__ import annotations

import json

import pytest

from eog_core.run import ChatConversation, ResponsesConversation


def _chat_answer(arguments: str) -> dict[str, object]:
    call = {"id": "c1", "type": "function", "function": {"name": "t", "arguments": arguments}}
    message = {"role": "assistant", "content": None, "tool_calls": [call]}
    return {"choices": [{"finish_reason": "tool_calls", "message": message}]}


@pytest.mark.parametrize(
    ("written", "handed_back"),
    [
        ('{"name": "Zo\\u00eb"}', '{"name": "Zoë"}'),  # non-ASCII unescaped
        ('{"a":1,"b":[1,2]}', '{"a": 1, "b": [1, 2]}'),  # json.dumps' spacing
        ('{"a": 1e2, "a2": 1.50}', '{"a": 100.0, "a2": 1.5}'),  # numbers written again
        ('{"a": 1, "a": 2}', '{"a": 2}'),  # the last of a repeated key
        ('{"text": "line\none"}', '{"text": "line\\none"}'),  # a raw control character read
        ("", "{}"),  # no text: no arguments
        ("not json", "not json"),  # not JSON: as it came
        ("[1, 2]", "[1, 2]"),  # not an object: as it came
        ('{"x": 1}', '{"x": 1}'),  # the usual: unchanged
    ],
)
def test_chat_hands_arguments_back_as_upstream_writes_them(written: str, handed_back: str) -> None:
    conversation = ChatConversation.start("sys", "user", [])
    turn = conversation.read(_chat_answer(written), turn=1)
    conversation.add_turn(turn)
    assert conversation.messages[2]["tool_calls"][0]["function"]["arguments"] == handed_back
    assert turn.tool_calls[0].arguments == written  # the record: as the model wrote them


def test_deeply_nested_arguments_go_back_as_they_came() -> None:
    written = "[" * 100_000 + "]" * 100_000
    conversation = ChatConversation.start("sys", "user", [])
    conversation.add_turn(conversation.read(_chat_answer('{"a": ' + written + "}"), turn=1))
    assert conversation.messages[2]["tool_calls"][0]["function"]["arguments"].endswith("]}")


def test_responses_hands_arguments_back_as_written() -> None:
    """LangChain replays a Responses ``function_call`` item as the server sent it."""
    conversation = ResponsesConversation.start("sys", "user", [])
    item = {"type": "function_call", "call_id": "c1", "name": "t", "arguments": '{"a":"\\u00e9"}'}
    turn = conversation.read({"output": [item], "status": "completed"}, turn=1)
    conversation.add_turn(turn)
    assert conversation.items[2]["arguments"] == '{"a":"\\u00e9"}'
    assert json.loads(turn.tool_calls[0].arguments) == {"a": "é"}
