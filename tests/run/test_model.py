"""The pure parts of the model client: wire formats, usage, Retry-After, overflow, settings."""

from __future__ import annotations

import asyncio
import email.utils
import time

import pytest

from eog_core.errors import UsageError
from eog_core.run import (
    ChatConversation,
    ModelSettings,
    ResponsesConversation,
    ToolCall,
    Usage,
    is_context_overflow,
)
from eog_core.run._model import _RateLimiter, retry_after_seconds


def test_retry_after_forms() -> None:
    assert retry_after_seconds({"Retry-After": "3"}) == 3.0
    assert retry_after_seconds({"retry-after-ms": "250", "Retry-After": "9"}) == 0.25
    assert retry_after_seconds({"Retry-After": "-4"}) == 0.0
    assert retry_after_seconds({"Retry-After": "soon"}) is None
    assert retry_after_seconds({}) is None
    date = email.utils.formatdate(1_000_030, usegmt=True)
    assert retry_after_seconds({"Retry-After": date}, now=1_000_000) == pytest.approx(30.0)


@pytest.mark.parametrize(
    ("status", "detail", "overflow"),
    [
        (400, "context_length_exceeded: This model's maximum context length is 8192 tokens", True),
        (400, "'max_tokens' is too large: 4096. This model's maximum context length is 8192", True),
        (413, "prompt is too long: 210000 tokens > 200000 maximum", True),
        (400, "Input is too long for requested model.", True),
        (400, "Invalid value for 'temperature'", False),
        (500, "maximum context length", False),
        (400, "number of tools exceeds the maximum of 128", False),
        (400, "'top_logprobs' exceeds the maximum of 20", False),
        (400, "image exceeds the max allowed size", False),
        (400, "Invalid context size: n_ctx must be > 0", False),
        (
            500,
            "server_error: the request exceeds the available context size, try increasing it",
            True,
        ),
        (400, "request (1673 tokens) exceeds the available context size (1024 tokens)", True),
        (
            400,
            "The input (5000 tokens) is longer than the model's context length (4096 tokens).",
            True,
        ),
        (
            400,
            "Requested token count exceeds the model's maximum context length of 4096 tokens.",
            True,
        ),
    ],
)
def test_context_overflow_detection(status: int, detail: str, overflow: bool) -> None:
    assert is_context_overflow(status, detail) is overflow


def test_usage_of_both_apis_and_sums() -> None:
    chat = Usage.from_api(
        {
            "prompt_tokens": 100,
            "completion_tokens": 20,
            "total_tokens": 120,
            "prompt_tokens_details": {"cached_tokens": 64},
            "completion_tokens_details": {"reasoning_tokens": 7},
        }
    )
    responses = Usage.from_api(
        {
            "input_tokens": 10,
            "output_tokens": 5,
            "input_tokens_details": {"cached_tokens": 2},
            "output_tokens_details": {"reasoning_tokens": 1},
        }
    )
    assert (chat + responses).to_dict() == {
        "input_tokens": 110,
        "output_tokens": 25,
        "cached_tokens": 66,
        "reasoning_tokens": 8,
        "total_tokens": 135,
    }
    assert Usage.from_api(None) == Usage() == Usage.from_api({"prompt_tokens": None})


def test_chat_reads_calls_without_ids_and_object_arguments() -> None:
    conversation = ChatConversation.start("sys", "user", [])
    turn = conversation.read(
        {
            "choices": [
                {
                    "finish_reason": "tool_calls",
                    "message": {
                        "role": "assistant",
                        "content": None,
                        "reasoning_content": "think",
                        "tool_calls": [
                            {"type": "function", "function": {"name": "a", "arguments": {"x": 1}}},
                            {"id": "c2", "function": {"name": "b", "arguments": "{}"}},
                        ],
                    },
                }
            ]
        },
        turn=3,
    )
    assert turn.tool_calls == (
        ToolCall(call_id="call_3_0", name="a", arguments='{"x": 1}'),
        ToolCall(call_id="c2", name="b", arguments="{}"),
    )
    assert (turn.text, turn.reasoning, turn.finish_reason) == ("", "think", "tool_calls")
    conversation.add_turn(turn)
    conversation.add_observation(turn.tool_calls[0], "obs")
    assert conversation.messages[2]["tool_calls"][0]["id"] == "call_3_0"
    assert conversation.messages[3] == {
        "role": "tool",
        "tool_call_id": "call_3_0",
        "content": "obs",
    }


def test_responses_reads_messages_calls_and_incomplete_answers() -> None:
    conversation = ResponsesConversation.start("sys", "user", [{"type": "function", "name": "a"}])
    turn = conversation.read(
        {
            "status": "incomplete",
            "incomplete_details": {"reason": "max_output_tokens"},
            "output": [
                {
                    "type": "message",
                    "content": [
                        {"type": "output_text", "text": "Hel"},
                        {"type": "output_text", "text": "lo"},
                    ],
                }
            ],
        },
        turn=1,
    )
    assert (turn.text, turn.tool_calls, turn.finish_reason) == ("Hello", (), "max_output_tokens")


@pytest.mark.parametrize(
    "answer",
    [
        {},
        {"choices": []},
        {"choices": [{"message": "x"}]},
        {"choices": [{"message": {"tool_calls": [{"function": {}}]}}]},
    ],
)
def test_chat_refuses_answers_it_cannot_read(answer: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        ChatConversation.start("s", "u", []).read(answer, turn=1)


def test_settings_keep_the_key_out_of_repr_and_records() -> None:
    settings = ModelSettings(model="m", base_url="http://h/v1/", api_key="sk-SECRET")
    assert "sk-SECRET" not in repr(settings) and "sk-SECRET" not in str(settings.describe())
    assert settings.base_url == "http://h/v1"


@pytest.mark.parametrize(
    "bad",
    [
        {"base_url": "h/v1"},
        {"api": "completions"},
        {"timeout": 0},
        {"max_retries": -1},
        {"max_requests_per_second": 0},
    ],
)
def test_settings_validate(bad: dict[str, object]) -> None:
    with pytest.raises(UsageError):
        ModelSettings(**{"model": "m", "base_url": "http://h/v1", **bad})  # type: ignore[arg-type]


async def test_rate_limiter_spaces_request_starts() -> None:
    limiter = _RateLimiter(0.05)
    began = time.monotonic()

    async def start() -> float:
        await limiter.wait()
        return time.monotonic()

    starts = sorted(await asyncio.gather(*(start() for _ in range(6))))
    # sleeping only ever ends late, so each start is at least its slot (clock-resolution slack)
    assert all(at - began >= index * 0.05 - 0.01 for index, at in enumerate(starts))


@pytest.mark.parametrize(
    ("status", "detail", "malformed"),
    [
        (
            500,
            "Failed to parse tool call arguments as JSON: [json.exception.parse_error.101]",
            True,
        ),
        (500, "Failed to parse input at pos 11: <tool_call>{", True),
        (400, "Error in extracting tool call from response: Expecting ','", True),
        (
            400,
            "invalid tool_call_id: call_1 not found",
            False,
        ),  # the client's doing, not the model's
        (500, "CUDA out of memory", False),
        (429, "Failed to parse tool call", False),
    ],
)
def test_tool_call_parse_error_detection(status: int, detail: str, malformed: bool) -> None:
    from eog_core.run import is_tool_call_parse_error

    assert is_tool_call_parse_error(status, detail) is malformed
