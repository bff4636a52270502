"""Every error eog_core raises, in one tree.

::

    EogError
    ├── SchemaError              a task, row, tool snapshot or gym directory is malformed (JSON path + source)
    ├── UsageError               an argument the caller passed is invalid (a bad URL, a margin of 0)
    │   ├── HeaderError          a header cannot be sent as given (eog_core.gym)
    │   └── WorkRefused          the MCP gateway has no such rollout to hand out (eog_core.gateway; status, code)
    ├── RequestError             a request could not be built (arguments not JSON-serialisable)
    ├── MetricsError             a result file or verdict line is malformed (eog_core.metrics; source, line)
    ├── MissingExtraError        an optional extra the call needs is not installed (eog_core.report)
    ├── VerificationError        the verifier engine was misused (e.g. no runner for a gym)
    ├── JudgeError               the response_check judge failed or answered nonsense
    ├── ClosedError              a closed client or session was used again
    ├── SeedError                seeding a task's databases failed (gym + cause)
    │   └── SeedFileError        a seed SQL file is missing or unreadable (path)
    ├── StateError               a database could not be exported whole (eog_core.state; gym, table)
├── SeedArchiveError         the seed archive is not the pinned one, or a member would leave its folder (path)
    ├── FleetError               a container engine command failed or a gym container never answered (domain, log tail)
    ├── GymError                 talking to a gym server failed (gym, url)
    │   ├── GymUnreachableError  connection refused, DNS failure, reset before the request was sent
    │   ├── GymTimeoutError      the gym did not answer in time
    │   ├── GymHTTPError         the gym answered a non-success HTTP status (status, detail)
    │   ├── GymProtocolError     the answer could not be understood (bad JSON, SSE without our reply)
    │   │   └── ProtocolVersionError  the gym negotiated an MCP version we do not speak (version)
    │   └── JsonRpcError         the MCP server answered a JSON-RPC error (code, message, data)
    └── ModelError               talking to a model endpoint failed (eog_core.run; status, attempts)
        ├── ModelUnreachableError  no usable answer after every retry (connection, timeout, 429, 5xx)
        │   └── ModelOutageError   a run stopped: N rollouts in a row found the endpoint unreachable
        ├── ModelPreflightError    the endpoint refused the run's first check (URL, key, model name)
        └── ModelHTTPError         the endpoint refused the request (a 4xx other than 408/429)
            ├── ContextOverflowError  the conversation no longer fits the model's context window
            └── ToolCallParseError    the server could not parse the tool call the model wrote (raw_text)

Leaf classes carry structured attributes so harnesses can branch on them
without parsing messages. No aiohttp or json exception ever escapes the
library: the gym transport translates them at one boundary.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "ClosedError",
    "ContextOverflowError",
    "EogError",
    "FleetError",
    "GymError",
    "GymHTTPError",
    "GymProtocolError",
    "GymTimeoutError",
    "GymUnreachableError",
    "HeaderError",
    "JsonRpcError",
    "JudgeError",
    "MetricsError",
    "MissingExtraError",
    "ModelError",
    "ModelHTTPError",
    "ModelOutageError",
    "ModelPreflightError",
    "ModelUnreachableError",
    "ProtocolVersionError",
    "RequestError",
    "SchemaError",
    "SeedArchiveError",
    "SeedError",
    "SeedFileError",
    "StateError",
    "ToolCallParseError",
    "ToolError",
    "UsageError",
    "VerificationError",
    "WorkRefused",
]


class EogError(Exception):
    """Base of every error raised by eog_core."""


class SchemaError(EogError, ValueError):
    """A task, dataset row or tool snapshot does not have the expected shape.

    ``path`` is a JSON path such as ``$.verifiers[3].validation_config.query``;
    ``source`` names the file (or ``<mapping>``) the data came from; ``offset``
    is the byte offset in that file when the bytes themselves are at fault.
    """

    def __init__(
        self, message: str, *, path: str = "$", source: str | None = None, offset: int | None = None
    ) -> None:
        self.path = path
        self.source = source
        self.offset = offset
        self.reason = message
        where = f" in {source}" if source else ""
        super().__init__(f"{path}: {message}{where}")


class UsageError(EogError, ValueError):
    """An argument the caller passed is invalid."""


class HeaderError(UsageError):
    """A header cannot be sent as given; ``header`` names it (never its value)."""

    def __init__(self, message: str, *, header: str) -> None:
        self.header = header
        super().__init__(f"header {header!r}: {message}")


class WorkRefused(UsageError):
    """``POST /rollouts`` asked for work that cannot be handed out; ``status`` is the HTTP one."""

    def __init__(self, message: str, *, status: int, code: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code


class MetricsError(EogError, ValueError):
    """A results or verdict file cannot be used; ``source`` and ``line`` say where."""

    def __init__(self, message: str, *, source: str | None = None, line: int | None = None) -> None:
        self.source = source
        self.line = line
        self.reason = message
        where = ""
        if source is not None:
            where = f"{source}:{line}: " if line is not None else f"{source}: "
        super().__init__(f"{where}{message}")


class MissingExtraError(EogError, ImportError):
    """An optional extra the call needs is not installed (the report's ``report`` extra)."""


class RequestError(EogError, ValueError):
    """A request could not be built, e.g. tool arguments that are not JSON-serialisable.

    Nothing was sent.
    """


class VerificationError(EogError):
    """The verifier engine was called with inputs it cannot work with."""


class JudgeError(EogError):
    """The LLM judge of a response_check verifier failed or gave no usable score."""


class ClosedError(EogError, RuntimeError):
    """A client or session was used after it was closed."""


class SeedError(EogError):
    """Seeding a database for a task failed; ``gym`` names the gym, ``__cause__`` the reason."""

    def __init__(self, message: str, *, gym: str | None = None) -> None:
        self.gym = gym
        super().__init__(message)


class SeedFileError(SeedError):
    """A seed SQL file named by a task is missing or unreadable."""

    def __init__(self, message: str, *, path: str, gym: str | None = None) -> None:
        self.path = path
        super().__init__(message, gym=gym)


class StateError(EogError):
    """A state snapshot could not export a database whole: a table holds more rows than the
    export reads (``table``), a query failed, or the schema could not be read."""

    def __init__(self, message: str, *, gym: str | None = None, table: str | None = None) -> None:
        super().__init__(message)
        self.gym = gym
        self.table = table


class SeedArchiveError(EogError):
    """The seed archive's sha256 is not the expected one, or a member's path would land
    outside the target folder (``path`` names the archive or the member)."""

    def __init__(self, message: str, *, path: str) -> None:
        self.path = path
        super().__init__(message)


class FleetError(EogError):
    """A container engine command failed, or a gym container did not become healthy in time.

    ``domain`` names the gym's domain when known, ``log_tail`` the container's last log lines.
    """

    def __init__(self, message: str, *, domain: str | None = None, log_tail: str = "") -> None:
        self.domain = domain
        self.log_tail = log_tail
        super().__init__(message)


class GymError(EogError):
    """Talking to a gym server failed."""

    def __init__(self, message: str, *, gym: str | None = None, url: str | None = None) -> None:
        self.gym = gym
        self.url = url
        super().__init__(message)


class GymUnreachableError(GymError):
    """The gym could not be reached: nothing was delivered to it."""


class GymTimeoutError(GymError):
    """The gym did not answer within the configured timeout."""


class GymHTTPError(GymError):
    """The gym answered with a non-success HTTP status; ``detail`` is its explanation,
    ``raw`` the body as it came."""

    def __init__(
        self,
        message: str,
        *,
        status: int,
        detail: str = "",
        gym: str | None = None,
        url: str | None = None,
        raw: bytes = b"",
    ) -> None:
        self.status = status
        self.detail = detail
        self.raw = raw
        super().__init__(message, gym=gym, url=url)


class GymProtocolError(GymError):
    """The gym's answer violated the protocol (bad JSON, an SSE stream without our response)."""


class ProtocolVersionError(GymProtocolError):
    """The gym chose an MCP protocol ``version`` outside ``supported`` (the session was ended)."""

    def __init__(
        self,
        message: str,
        *,
        version: str,
        supported: tuple[str, ...],
        gym: str | None = None,
        url: str | None = None,
    ) -> None:
        self.version = version
        self.supported = supported
        super().__init__(message, gym=gym, url=url)


class JsonRpcError(GymError):
    """The MCP server answered a JSON-RPC error object."""

    def __init__(
        self,
        message: str,
        *,
        code: int,
        data: Any = None,
        gym: str | None = None,
        url: str | None = None,
    ) -> None:
        self.code = code
        self.rpc_message = message
        self.data = data
        super().__init__(f"JSON-RPC error {code}: {message}", gym=gym, url=url)


class ModelError(EogError):
    """Talking to an OpenAI-compatible model endpoint failed.

    ``status`` is the last HTTP status seen (None for a connection failure or a
    timeout); ``attempts`` how many requests were sent.
    """

    def __init__(self, message: str, *, status: int | None = None, attempts: int = 1) -> None:
        self.status = status
        self.attempts = attempts
        super().__init__(message)


class ModelUnreachableError(ModelError):
    """No usable answer after every retry: connection failures, timeouts, 429 or 5xx."""


class ModelHTTPError(ModelError):
    """The endpoint refused the request (a 4xx other than 408 and 429); retrying cannot help."""

    def __init__(self, message: str, *, status: int, detail: str = "", attempts: int = 1) -> None:
        self.detail = detail
        super().__init__(message, status=status, attempts=attempts)


class ContextOverflowError(ModelHTTPError):
    """The request no longer fits the model's context window."""


class ToolCallParseError(ModelHTTPError):
    """The server could not parse the tool call the model wrote (llama.cpp's 500 "Failed to
    parse tool call arguments as JSON", vLLM's tool-parser errors): the server is up, the
    model wrote a broken call. ``raw_text`` is the model's text when the server returned it."""

    def __init__(
        self,
        message: str,
        *,
        status: int,
        detail: str = "",
        attempts: int = 1,
        raw_text: str | None = None,
    ) -> None:
        self.raw_text = raw_text
        super().__init__(message, status=status, detail=detail, attempts=attempts)


class ModelPreflightError(ModelError):
    """The check before a run found the endpoint unusable: nothing listening, a refused key,
    an unknown model name. Nothing was seeded."""


class ModelOutageError(ModelUnreachableError):
    """A run stopped taking work: ``rollouts`` rollouts in a row found the model unreachable."""

    def __init__(
        self, message: str, *, rollouts: int, status: int | None = None, attempts: int = 1
    ) -> None:
        self.rollouts = rollouts
        super().__init__(message, status=status, attempts=attempts)


class ToolError(EogError):
    """Raised by a tool body of a local gym (``eog_core.local``) to fail the call with a
    clean message (``isError: true``).

    It never leaves the server: the gym turns it into a tool result whose text is
    ``Error: <message>``.
    """
