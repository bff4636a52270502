"""What ``TaskSession.start()`` and ``TaskSession.attach()`` return before the session
exists: an awaitable that is also an async context manager, and that says how to use it
when used as the session itself."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator
from typing import Any, Generic, Protocol, TypeVar

import attrs

from eog_core.errors import UsageError

__all__ = ["SessionStart"]


class _StartNotAwaitedError(UsageError, AttributeError):
    """``TaskSession.start(...)`` was used as a session without ``await`` or ``async with``."""

    def __init__(self, name: str) -> None:
        use = (
            "with TaskSession.start(...)"
            if name == "__enter__"
            else f"TaskSession.start(...).{name}"
        )
        super().__init__(
            f"{use}: TaskSession.start() does not return a session yet; write "
            "`session = await TaskSession.start(task, ...)` (then `await session.aclose()`) or "
            "`async with TaskSession.start(task, ...) as session:`"
        )


class _Closeable(Protocol):
    async def aclose(self) -> None: ...


S = TypeVar("S", bound=_Closeable)


@attrs.define(eq=False)
class SessionStart(Generic[S]):
    """What :meth:`TaskSession.start` and :meth:`TaskSession.attach` return
    (``SessionStart[TaskSession]``): ``await`` it for the session, or ``async with`` it to
    close the session on the way out. Generic, so that this lower module need not import
    the session's."""

    _open: Callable[[], Awaitable[S]]
    _session: S | None = None

    def __await__(self) -> Generator[Any, None, S]:
        return self._open().__await__()

    async def __aenter__(self) -> S:
        self._session = await self._open()
        return self._session

    async def __aexit__(self, *exc: object) -> None:
        if self._session is not None:
            await self._session.aclose()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        raise _StartNotAwaitedError(name)

    def __enter__(self) -> None:
        raise _StartNotAwaitedError("__enter__")

    def __exit__(self, *exc: object) -> None:  # pragma: no cover - __enter__ always raises
        return None
