"""Debian's chromium under Playwright (no browser download), recording every request and console error."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import attrs

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium_path() -> str:
    path = shutil.which("chromium")
    if path is None:
        raise RuntimeError(
            "chromium is not installed (apt-get install -y chromium; nox -s report_browser does it)"
        )
    return path


@attrs.define
class Recorder:
    """What a page did: every request URL, console errors and uncaught page errors."""

    requests: list[str] = attrs.field(factory=list)
    errors: list[str] = attrs.field(factory=list)

    def attach(self, page: Any) -> None:
        page.on("request", lambda request: self.requests.append(request.url))
        page.on(
            "console",
            lambda message: self.errors.append(message.text) if message.type == "error" else None,
        )
        page.on("pageerror", lambda error: self.errors.append(f"page error: {error}"))


@contextmanager
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=chromium_path(), args=FLAGS)
        try:
            yield launched
        finally:
            launched.close()
