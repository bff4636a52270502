"""The two OpenAI-compatible wire formats: Chat Completions and Responses.

A conversation object holds the growing history in the API's own shape, builds
the next request body and reads an answer into a :class:`ModelTurn`. Nothing
here does I/O; :mod:`eog_core.run._model` sends the bodies.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal, Protocol

import attrs

__all__ = [
    "ApiName",
    "ChatConversation",
    "Conversation",
    "ModelTurn",
    "ResponsesConversation",
    "ToolCall",
    "Usage",
    "new_conversation",
]

ApiName = Literal["chat", "responses"]


@attrs.frozen(kw_only=True)
class Usage:
    """Token counts of one answer (or a sum of answers); 0 where the endpoint said nothing."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    reasoning_tokens: int = 0
    total_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(**{f: getattr(self, f) + getattr(other, f) for f in _USAGE_FIELDS})

    def to_dict(self) -> dict[str, int]:
        return {f: getattr(self, f) for f in _USAGE_FIELDS}

    @classmethod
    def from_api(cls, usage: Any) -> Usage:
        """Read ``usage`` of either API (prompt/completion or input/output names)."""
        if not isinstance(usage, Mapping):
            return cls()
        inputs = _int(usage.get("input_tokens", usage.get("prompt_tokens")))
        outputs = _int(usage.get("output_tokens", usage.get("completion_tokens")))
        in_details = usage.get("input_tokens_details") or usage.get("prompt_tokens_details") or {}
        out_details = (
            usage.get("output_tokens_details") or usage.get("completion_tokens_details") or {}
        )
        return cls(
            input_tokens=inputs,
            output_tokens=outputs,
            cached_tokens=_int(in_details.get("cached_tokens"))
            if isinstance(in_details, Mapping)
            else 0,
            reasoning_tokens=(
                _int(out_details.get("reasoning_tokens")) if isinstance(out_details, Mapping) else 0
            ),
            total_tokens=_int(usage.get("total_tokens")) or inputs + outputs,
        )


_USAGE_FIELDS = tuple(a.name for a in attrs.fields(Usage))


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


@attrs.frozen(kw_only=True)
class ToolCall:
    """One tool call the model asked for; ``arguments`` is the JSON text it wrote."""

    call_id: str
    name: str
    arguments: str


@attrs.frozen(kw_only=True)
class ModelTurn:
    """One answer of the model, read from either API."""

    text: str
    tool_calls: tuple[ToolCall, ...]
    usage: Usage
    finish_reason: str | None = None
    reasoning: str | None = None
    history: tuple[Mapping[str, Any], ...] = ()
    """What goes back into the conversation for the next request."""
    token_data: Mapping[str, Any] | None = None
    """With ``token_ids`` asked for: the ``prompt_token_ids``, ``token_ids`` and ``logprobs``
    the server returned (vLLM, llama.cpp), as it returned them."""


class Conversation(Protocol):
    """A conversation in one API's wire shape."""

    endpoint: str

    def body(self, settings: RequestSettings) -> dict[str, Any]: ...

    def read(self, answer: Mapping[str, Any], turn: int) -> ModelTurn: ...

    def add_turn(self, turn: ModelTurn) -> None: ...

    def add_observation(self, call: ToolCall, observation: str) -> None: ...

    @property
    def transcript(self) -> list[dict[str, Any]]:
        """The history so far: chat messages or Responses input items."""
        ...


class RequestSettings(Protocol):
    """What a request body is built from (:class:`~eog_core.run.ModelSettings`)."""

    @property
    def model(self) -> str: ...

    @property
    def temperature(self) -> float | None: ...

    @property
    def max_output_tokens(self) -> int | None: ...

    @property
    def extra_body(self) -> Mapping[str, Any]: ...

    @property
    def token_ids(self) -> bool: ...


def _merge(body: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    """Extra fields win; an extra field set to null removes the field."""
    for key, value in extra.items():
        if value is None:
            body.pop(key, None)
        else:
            body[key] = value
    return body


def _token_data(answer: Mapping[str, Any], choice: Mapping[str, Any]) -> dict[str, Any] | None:
    """Token ids and logprobs where the server returned them (vLLM puts ``prompt_token_ids``
    at the top and ``token_ids`` in the choice; ``logprobs.content`` is OpenAI's shape)."""
    data: dict[str, Any] = {}
    for key, source in (
        ("prompt_token_ids", answer),
        ("prompt_token_ids", choice),
        ("token_ids", choice),
        ("token_ids", answer),
    ):
        if key not in data and isinstance(source.get(key), list):
            data[key] = source[key]
    logprobs = choice.get("logprobs")
    content = logprobs.get("content") if isinstance(logprobs, Mapping) else None
    if isinstance(content, list):
        data["logprobs"] = [
            {k: entry[k] for k in ("token", "logprob", "id") if k in entry}
            for entry in content
            if isinstance(entry, Mapping)
        ]
    return data or None


def _arguments(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value if value is not None else {})


def _handed_back(arguments: str) -> str:
    """A Chat Completions tool call's arguments as upstream shows them to the model next turn:
    LangChain parses the model's text (control characters allowed) and writes the object again
    with ``json.dumps(args, ensure_ascii=False)`` (its spacing, non-ASCII unescaped); no text is
    ``{}``; text that is not a JSON object goes back as it came."""
    if not arguments:
        return "{}"
    try:
        parsed = json.loads(arguments, strict=False)
        return json.dumps(parsed, ensure_ascii=False) if isinstance(parsed, dict) else arguments
    except (ValueError, RecursionError):  # not JSON, or nested too deeply to read
        return arguments


@attrs.define
class ChatConversation:
    """``POST {base}/chat/completions``: messages, assistant ``tool_calls``, ``tool`` messages."""

    messages: list[dict[str, Any]]
    tools: Sequence[Mapping[str, Any]]
    endpoint: str = "/chat/completions"

    @classmethod
    def start(cls, system: str, user: str, tools: Sequence[Mapping[str, Any]]) -> ChatConversation:
        return cls(
            [{"role": "system", "content": system}, {"role": "user", "content": user}], tools
        )

    def body(self, settings: RequestSettings) -> dict[str, Any]:
        body: dict[str, Any] = {"model": settings.model, "messages": self.messages}
        if self.tools:
            body["tools"] = list(self.tools)
        if settings.temperature is not None:
            body["temperature"] = settings.temperature
        if settings.max_output_tokens is not None:
            body["max_completion_tokens"] = settings.max_output_tokens
        if settings.token_ids:  # vLLM's return_token_ids; logprobs on every OpenAI-style server
            body["logprobs"] = True
            body["return_token_ids"] = True
        return _merge(body, settings.extra_body)

    def read(self, answer: Mapping[str, Any], turn: int) -> ModelTurn:
        choices = answer.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
            raise ValueError("the answer has no choices[0]")
        message = choices[0].get("message")
        if not isinstance(message, Mapping):
            raise ValueError("choices[0] has no message")
        content = message.get("content")
        if isinstance(content, list):
            text = "".join(
                p.get("text", "")
                for p in content
                if isinstance(p, Mapping) and isinstance(p.get("text"), str)
            )
        else:
            text = content if isinstance(content, str) else ""
        calls: list[ToolCall] = []
        wire_calls: list[dict[str, Any]] = []
        for index, raw in enumerate(message.get("tool_calls") or ()):
            function = raw.get("function") if isinstance(raw, Mapping) else None
            if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
                raise ValueError(f"tool_calls[{index}] has no function name")
            call_id = (
                raw.get("id")
                if isinstance(raw.get("id"), str) and raw["id"]
                else f"call_{turn}_{index}"
            )
            call = ToolCall(
                call_id=call_id,
                name=function["name"],
                arguments=_arguments(function.get("arguments")),
            )
            calls.append(call)
            wire_calls.append(
                {
                    "id": call.call_id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": _handed_back(call.arguments)},
                }
            )
        assistant: dict[str, Any] = {"role": "assistant", "content": content}
        if wire_calls:
            assistant["tool_calls"] = wire_calls
        if message.get("reasoning_details"):  # OpenRouter: handed back, as upstream does
            assistant["reasoning_details"] = message["reasoning_details"]
        reasoning = message.get("reasoning_content", message.get("reasoning"))
        return ModelTurn(
            text=text,
            tool_calls=tuple(calls),
            usage=Usage.from_api(answer.get("usage")),
            finish_reason=choices[0].get("finish_reason"),
            reasoning=reasoning if isinstance(reasoning, str) else None,
            history=(assistant,),
            token_data=_token_data(answer, choices[0]),
        )

    def add_turn(self, turn: ModelTurn) -> None:
        self.messages.extend(dict(item) for item in turn.history)

    def add_observation(self, call: ToolCall, observation: str) -> None:
        self.messages.append({"role": "tool", "tool_call_id": call.call_id, "content": observation})

    @property
    def transcript(self) -> list[dict[str, Any]]:
        return self.messages


@attrs.define
class ResponsesConversation:
    """``POST {base}/responses``: input items, ``function_call`` / ``function_call_output`` items."""

    items: list[dict[str, Any]]
    tools: Sequence[Mapping[str, Any]]
    endpoint: str = "/responses"

    @classmethod
    def start(
        cls, system: str, user: str, tools: Sequence[Mapping[str, Any]]
    ) -> ResponsesConversation:
        return cls(
            [{"role": "system", "content": system}, {"role": "user", "content": user}], tools
        )

    def body(self, settings: RequestSettings) -> dict[str, Any]:
        body: dict[str, Any] = {"model": settings.model, "input": self.items}
        if self.tools:
            body["tools"] = list(self.tools)
        if settings.temperature is not None:
            body["temperature"] = settings.temperature
        if settings.max_output_tokens is not None:
            body["max_output_tokens"] = settings.max_output_tokens
        if settings.token_ids:
            body["include"] = ["message.output_text.logprobs"]
        return _merge(body, settings.extra_body)

    def read(self, answer: Mapping[str, Any], turn: int) -> ModelTurn:
        output = answer.get("output")
        if not isinstance(output, list):
            raise ValueError("the answer has no output list")
        texts: list[str] = []
        reasoning: list[str] = []
        calls: list[ToolCall] = []
        history: list[dict[str, Any]] = []
        for index, item in enumerate(output):
            if not isinstance(item, Mapping):
                raise ValueError(f"output[{index}] is not an object")
            kind = item.get("type")
            if kind == "message":
                texts.extend(
                    part["text"]
                    for part in item.get("content") or ()
                    if isinstance(part, Mapping)
                    and part.get("type") == "output_text"
                    and isinstance(part.get("text"), str)
                )
            elif kind == "function_call":
                if not isinstance(item.get("name"), str):
                    raise ValueError(f"output[{index}] function_call has no name")
                call_id = item.get("call_id") or item.get("id") or f"call_{turn}_{index}"
                calls.append(
                    ToolCall(
                        call_id=str(call_id),
                        name=item["name"],
                        arguments=_arguments(item.get("arguments")),
                    )
                )
                item = {**item, "call_id": str(call_id), "arguments": calls[-1].arguments}
            elif kind == "reasoning":
                reasoning.extend(
                    part["text"]
                    for part in item.get("summary") or ()
                    if isinstance(part, Mapping) and isinstance(part.get("text"), str)
                )
            history.append(dict(item))
        details = answer.get("incomplete_details")
        finish = details.get("reason") if isinstance(details, Mapping) else answer.get("status")
        logprobs = [
            lp
            for item in output
            if isinstance(item, Mapping)
            for part in item.get("content") or ()
            if isinstance(part, Mapping)
            for lp in part.get("logprobs") or ()
        ]
        data = _token_data(answer, {"logprobs": {"content": logprobs}} if logprobs else {})
        return ModelTurn(
            text="".join(texts),
            tool_calls=tuple(calls),
            usage=Usage.from_api(answer.get("usage")),
            finish_reason=finish if isinstance(finish, str) else None,
            reasoning="\n".join(reasoning) or None,
            history=tuple(history),
            token_data=data,
        )

    def add_turn(self, turn: ModelTurn) -> None:
        self.items.extend(dict(item) for item in turn.history)

    def add_observation(self, call: ToolCall, observation: str) -> None:
        self.items.append(
            {"type": "function_call_output", "call_id": call.call_id, "output": observation}
        )

    @property
    def transcript(self) -> list[dict[str, Any]]:
        return self.items


def new_conversation(
    api: ApiName, system: str, user: str, tools: Sequence[Mapping[str, Any]]
) -> Conversation:
    """A fresh conversation: system prompt, user prompt, the task's tools in ``api``'s shape."""
    if api == "chat":
        return ChatConversation.start(system, user, tools)
    return ResponsesConversation.start(system, user, tools)
