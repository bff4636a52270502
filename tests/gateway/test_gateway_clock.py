"""The gateway server's clock: ``time.monotonic`` itself on asyncio's own loops (what their
``time`` returns), the loop's ``time`` on any loop that redefines it."""

from __future__ import annotations

import asyncio
import time

from eog_core.gateway._http import loop_clock


class _ShiftedLoop(asyncio.SelectorEventLoop):
    def time(self) -> float:
        return 1000.0 + super().time()


async def test_asyncio_s_loop_is_read_with_time_monotonic() -> None:
    loop = asyncio.get_running_loop()
    assert loop_clock(loop) is time.monotonic
    assert abs(loop_clock(loop)() - loop.time()) < 1.0


def test_a_loop_with_its_own_time_is_read_with_it() -> None:
    loop = _ShiftedLoop()
    try:
        clock = loop_clock(loop)
        assert clock() > 1000.0 + time.monotonic() - 1.0
        assert clock == loop.time
    finally:
        loop.close()
