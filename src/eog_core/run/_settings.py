"""``ModelSettings``: where the model is and how to ask it (read by the client and the
preflight, so neither imports the other for it)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from eog_core._redact import redact_url
from eog_core.errors import UsageError
from eog_core.run._apis import ApiName

__all__ = ["ModelSettings"]


def _positive(_: Any, attribute: attrs.Attribute[Any], value: float | int | None) -> None:
    if value is not None and value <= 0:
        raise UsageError(f"{attribute.name} must be positive, got {value}")


def _strip_slash(url: str) -> str:
    return str(url).rstrip("/")


def _base_url(_: Any, __: Any, value: str) -> None:
    if not value.startswith(("http://", "https://")):
        raise UsageError(f"base_url must be an http(s) URL, got {value!r}")


@attrs.frozen(kw_only=True)
class ModelSettings:
    """Where the model is and how to ask it.

    ``base_url`` is the OpenAI-style base (``https://api.openai.com/v1``); the API's
    path (``/chat/completions`` or ``/responses``) is appended. ``extra_body`` is
    merged into every request last: it wins, and a null value removes a field
    (``{"temperature": null}`` for models that refuse one). Defaults follow
    upstream's LLM config: temperature 0.0, 4096 output tokens.
    """

    model: str
    base_url: str = attrs.field(validator=_base_url, converter=_strip_slash)
    api: ApiName = "chat"
    api_key: str | None = attrs.field(default=None, repr=False)
    temperature: float | None = 0.0
    max_output_tokens: int | None = attrs.field(default=4096, validator=_positive)
    extra_body: Mapping[str, Any] = attrs.field(factory=dict)
    timeout: float = attrs.field(default=600.0, validator=_positive)
    max_retries: int = 8
    backoff_initial: float = attrs.field(default=1.0, validator=_positive)
    backoff_max: float = attrs.field(default=60.0, validator=_positive)
    max_requests_per_second: float | None = attrs.field(default=None, validator=_positive)
    idle_timeout: float | None = attrs.field(default=120.0, validator=_positive)
    """Seconds a request may receive nothing before the endpoint is probed (``GET /models``);
    no answer to the probe either and the request is given up as hung. None: never probe."""
    probe_timeout: float = attrs.field(default=10.0, validator=_positive)
    """Seconds a ``GET /models`` probe (and the preflight's) may take; at most ``idle_timeout``."""
    unreachable_after: float = attrs.field(default=60.0, validator=_positive)
    """Seconds of nothing but transport failures (refused, reset, hung) after which requests
    stop retrying: the endpoint is down, not busy."""
    token_ids: bool = False
    """Ask for token ids and logprobs (vLLM's ``return_token_ids``, ``logprobs``) and record them."""

    def __attrs_post_init__(self) -> None:
        if self.api not in ("chat", "responses"):
            raise UsageError(f"api must be 'chat' or 'responses', got {self.api!r}")
        if self.max_retries < 0:
            raise UsageError(f"max_retries must be at least 0, got {self.max_retries}")

    def describe(self) -> dict[str, Any]:
        """The settings as recorded in outputs: everything except the key."""
        return {
            "model": self.model,
            "base_url": redact_url(self.base_url),
            "api": self.api,
            "temperature": self.temperature,
            "max_output_tokens": self.max_output_tokens,
            "extra_body": dict(self.extra_body),
        }
