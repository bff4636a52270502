"""Talking to gym servers: MCP over Streamable HTTP, the REST database API, SSE."""

from eog_core.gym._client import GymClient
from eog_core.gym._directory import GymDirectory, default_directory
from eog_core.gym._handle import SessionHandle
from eog_core.gym._headers import (
    AuthConfig,
    HeaderError,
    HeaderMode,
    auth_headers,
    context_headers,
)
from eog_core.gym._janitor import Janitor, LeakedDatabase, default_janitor
from eog_core.gym._lean import LeanTransport
from eog_core.gym._mcp import SUPPORTED_PROTOCOL_VERSIONS
from eog_core.gym._records import Timeouts, ToolResult, new_database_id, seed_timeout
from eog_core.gym._replica import Lease, Replica
from eog_core.gym._session import TaskSession, ToolErrors
from eog_core.gym._sql import HttpSqlRunner
from eog_core.gym._sse import SseEvent, SseParser
from eog_core.gym._start import SessionStart
from eog_core.gym._tool_calls import ToolCallRecord, gym_error_kind
from eog_core.gym._transport import (
    AiohttpTransport,
    HttpRequest,
    HttpResponse,
    RetryPolicy,
    Transport,
    connection_pool,
)

__all__ = [
    "SUPPORTED_PROTOCOL_VERSIONS",
    "AiohttpTransport",
    "AuthConfig",
    "GymClient",
    "GymDirectory",
    "HeaderError",
    "HeaderMode",
    "HttpRequest",
    "HttpResponse",
    "HttpSqlRunner",
    "Janitor",
    "LeakedDatabase",
    "LeanTransport",
    "Lease",
    "Replica",
    "RetryPolicy",
    "SessionHandle",
    "SessionStart",
    "SseEvent",
    "SseParser",
    "TaskSession",
    "Timeouts",
    "ToolCallRecord",
    "ToolErrors",
    "ToolResult",
    "Transport",
    "auth_headers",
    "connection_pool",
    "context_headers",
    "default_directory",
    "default_janitor",
    "gym_error_kind",
    "new_database_id",
    "seed_timeout",
]
