"""A real loopback gym whose ``/api/sql-runner`` answers each query with what the test set."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, MutableMapping

from aiohttp import web

#: Query -> (HTTP status, body); a str body is sent as UTF-8.
Answers = MutableMapping[str, tuple[int, str | bytes]]


@contextlib.asynccontextmanager
async def serve_sql_answers(answers: Answers) -> AsyncIterator[str]:
    """Serve ``answers`` (filled or changed while it runs); yields the gym's base URL."""

    async def sql_runner(request: web.Request) -> web.Response:
        status, body = answers[(await request.json())["query"]]
        payload = body.encode("utf-8") if isinstance(body, str) else body
        return web.Response(status=status, body=payload, content_type="application/json")

    app = web.Application()
    app.router.add_post("/api/sql-runner", sql_runner)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()
