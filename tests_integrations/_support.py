"""Shared by the adapter suites (each runs in its own nox virtualenv, never in the
default ``python -m pytest``): the demo's scripted model turns and loopback servers."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from eog_core.local import load_demo_trajectory

FINAL_TEXT = "Done: renewed the entitlement, opened the case and resolved the old one."


def script(kind: str) -> list[dict[str, Any]]:
    """The tool calls a scripted model makes: the demo's correct trajectory or none."""
    return load_demo_trajectory() if kind == "solve" else []


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def serve_asgi(*apps: tuple[Any, int]) -> Iterator[list[str]]:
    """Serve ASGI apps with uvicorn on one event loop in a thread (as one process would
    serve one app: process-wide clients stay on one loop); yields their base URLs."""
    import asyncio

    import uvicorn

    servers = [
        uvicorn.Server(
            uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off")
        )
        for app, port in apps
    ]

    async def serve_all() -> None:
        await asyncio.gather(*(server.serve() for server in servers))

    thread = threading.Thread(target=asyncio.run, args=(serve_all(),), daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not all(server.started for server in servers):
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.01)
    try:
        yield [f"http://127.0.0.1:{port}" for _, port in apps]
    finally:
        for server in servers:
            server.should_exit = True
        thread.join(30)


def arguments_text(step: dict[str, Any]) -> str:
    return json.dumps(step["arguments"])


REPO = __import__("pathlib").Path(__file__).resolve().parents[1]
DOCS = ("docs/embedding.md", "docs/scale-out.md")


def doc_examples(extra: str) -> list[str]:
    """The blocks of the docs tagged ``# extra: <extra>`` (each a complete program)."""
    import re

    found = []
    for name in DOCS:
        text = (REPO / name).read_text(encoding="utf-8")
        found += [
            code
            for code in re.findall(r"```python\n(.*?)```", text, re.DOTALL)
            if code.startswith(f"# extra: {extra}\n")
        ]
    return found


def run_example(code: str, tmp_path: Any) -> str:
    """Run one doc example with this virtualenv's Python; its stdout."""
    import subprocess
    import sys

    script = tmp_path / "example.py"
    script.write_text(code, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        check=False,
    )
    assert done.returncode == 0, f"example failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout
