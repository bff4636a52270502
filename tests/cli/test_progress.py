"""Progress output appears on a terminal only, and only for work that takes a while."""

from __future__ import annotations

import io
import threading

from eog_core.cli._common import Progress, busy, progress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_bar_on_a_terminal_after_the_delay() -> None:
    out = Terminal()
    bar = Progress(4, "validating", stream=out, delay=0.0)
    for _ in range(4):
        bar.advance()
    bar.close()
    assert out.getvalue().endswith("validating [" + "#" * 30 + "] 4/4\n")


def test_no_progress_when_not_a_terminal_or_quick() -> None:
    piped = io.StringIO()
    bar = Progress(2, "x", stream=piped, delay=0.0)
    bar.advance()
    bar.close()
    assert piped.getvalue() == ""
    quick = Terminal()
    bar = Progress(2, "x", stream=quick, delay=60.0)
    bar.advance()
    bar.close()
    assert quick.getvalue() == ""
    assert list(progress([1, 2, 3], "items")) == [1, 2, 3]


def test_busy_ticker_shows_elapsed_time_on_a_terminal() -> None:
    out = Terminal()
    written = threading.Event()
    original = out.write

    def spy(text: str) -> int:
        written.set()
        return original(text)

    out.write = spy  # type: ignore[method-assign]
    with busy("comparing", stream=out, delay=0.0):
        assert written.wait(5.0)
    assert "comparing ... 0s" in out.getvalue() and out.getvalue().endswith("\n")
