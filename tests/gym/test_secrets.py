"""A task's token never shows: not in a repr or str, an error message, a verdict or a log line.

The task uses the legacy top-level ``auth_config`` (the form that leaked), the
gym checks that the token really arrives, and the session goes through its
success and failure paths with every logger at DEBUG.
"""

from __future__ import annotations

import json
import logging
import socket
from collections.abc import AsyncIterator
from typing import Any

import pytest

from eog_core import PARITY, STRICT, Task, load_task
from eog_core.errors import EogError, RequestError
from eog_core.gym import GymClient, GymDirectory, TaskSession
from eog_core.local import LocalGym, ToolContext, demo_paths
from eog_core.tasks import AuthConfig, to_upstream

SENTINEL = "SENTINEL-7f3a9c-token"
PATHS = demo_paths()


def legacy_task(url: str, token: str = SENTINEL) -> Task:
    raw: dict[str, Any] = json.loads(PATHS.task.read_text())
    gym = raw.pop("gym_servers_config")[0]
    raw.update(
        mcp_server_url=url,
        database_id="legacy_db",
        seed_database_file=gym["seed_database_file"],
        context={**gym["context"], "x-api-key": token},
        auth_config={"type": "bearer", "token": token},
    )
    raw["selected_tools"] = [*raw["selected_tools"], "auth_seen"]
    for verifier in raw["verifiers"]:
        verifier.pop("gym_name", None)
    raw["verifiers"].append(
        {
            "verifier_type": "database_state",
            "name": "refused",
            "validation_config": {"query": "DELETE FROM entitlement", "expected_value": 1},
        }
    )
    raw["verifiers"].append(
        {
            "verifier_type": "database_state",
            "name": "broken",
            "validation_config": {"query": "SELECT nope FROM nowhere", "expected_value": 1},
        }
    )
    return load_task(raw)


@pytest.fixture
async def gym() -> AsyncIterator[LocalGym]:
    async with LocalGym.demo(sql_timeout=0.3) as server:

        @server.tool(name="auth_seen", description="Whether the bearer token arrived.")
        def auth_seen(ctx: ToolContext) -> bool:
            return ctx.headers.get("authorization") == f"Bearer {SENTINEL}"

        yield server


def texts_of(error: BaseException) -> list[str]:
    texts = []
    current: BaseException | None = error
    while current is not None:
        texts += [str(current), repr(current)]
        current = current.__cause__ or current.__context__
    return texts


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def test_the_token_never_shows(gym: LocalGym, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    task = legacy_task(gym.url)
    seen: list[str] = [repr(task), str(task), repr(task.gym_servers)]
    assert to_upstream(task)["auth_config"]["token"] == SENTINEL  # the data itself is kept
    async with TaskSession.start(
        task, directory=GymDirectory({"default_gym": gym.url}), seed_root=PATHS.directory
    ) as session:
        seen += [repr(session), str(session)]
        seen.append(repr(await session.call_tool("auth_seen", {})))
        assert (await session.call_tool("auth_seen", {})).structured in (True, {"result": True})
        seen.append(repr(await session.call_tool("no_such_tool", {})))
        seen.append(repr(await session.call_tool("find_account", {"bogus": 1})))
        gym.expire_sessions()  # the client re-initializes (and logs it)
        gym.fail_next(1, 500, path="/api/sql-runner", detail="boom")
        for policy in (STRICT, PARITY):
            verdict = await session.verify(policy=policy)
            seen += [repr(verdict), json.dumps(verdict.to_dict())]
        seen += [repr(session.trajectory), repr(session)]
    closed_call: EogError | None = None
    try:
        await session.call_tool("auth_seen", {})
    except EogError as exc:
        closed_call = exc
    assert closed_call is not None
    seen += texts_of(closed_call)

    unreachable = legacy_task(f"http://127.0.0.1:{free_port()}")
    with pytest.raises(EogError) as caught:
        async with TaskSession.start(unreachable, seed_root=PATHS.directory):
            pass
    seen += texts_of(caught.value)

    for bad_token in (f"{SENTINEL}\r\nX-Evil: 1", f"{SENTINEL}\x00"):
        with pytest.raises(EogError) as caught:
            async with GymClient(
                gym.url, name="g", auth=AuthConfig(type="bearer", token=bad_token)
            ) as client:
                await client.list_tools()
        seen += texts_of(caught.value)

    logged = [record.getMessage() for record in caplog.records]
    logged += [caplog.text]
    assert len(caplog.records) > 0
    leaks = [text for text in seen + logged if SENTINEL in text]
    assert leaks == []


async def test_url_credentials_never_show(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    url = f"http://user:{SENTINEL}@127.0.0.1:{free_port()}"
    task = legacy_task(url, token="other-token")
    seen = [repr(task), repr(task.gym_servers[0])]
    client = GymClient(url, name="g")
    seen.append(repr(client))
    with pytest.raises(EogError) as caught:
        await client.list_tools()
    seen += texts_of(caught.value)
    await client.aclose()
    with pytest.raises(EogError) as caught:
        await client.list_tools()
    seen += texts_of(caught.value)
    both = GymClient(url, name="g", auth=AuthConfig(type="bearer", token="other-token"))
    with pytest.raises(RequestError, match="could not be built") as refused:  # aiohttp's ValueError
        await both.list_tools()
    seen += texts_of(refused.value)
    await both.aclose()
    directory = GymDirectory({"g": [url]})
    lease = await directory.acquire("g")
    seen += [repr(lease), repr(directory.stats())]
    directory.release(lease)
    with pytest.raises(EogError) as caught:
        async with TaskSession.start(task, seed_root=PATHS.directory):
            pass
    seen += texts_of(caught.value)
    assert "***@127.0.0.1" in repr(client)
    leaks = [text for text in [*seen, caplog.text] if SENTINEL in text]
    assert leaks == []


async def test_credentials_in_gym_urls_are_masked_in_errors_and_leak_warnings(
    unused_tcp_port: int, caplog: pytest.LogCaptureFixture
) -> None:
    """#20: the unreachable-replica error joined raw URLs, and the janitor's last leak
    warning logged one: ``http://alice:s3cr3tPW@...`` shows as ``http://***@...``."""
    from eog_core.errors import GymUnreachableError
    from eog_core.gym import Janitor

    url = f"http://alice:s3cr3tPW@127.0.0.1:{unused_tcp_port}"
    other = f"http://bob:0therPW@127.0.0.1:{unused_tcp_port}/second"
    directory = GymDirectory({"g": [url, other]}, reprobe_attempts=0, probe_timeout=0.5)
    async with directory:
        for replica in directory._table["g"]:
            directory.mark_down(directory._lease(replica))
        with pytest.raises(GymUnreachableError) as caught:
            await directory.acquire("g")
    assert "s3cr3tPW" not in str(caught.value) and "0therPW" not in str(caught.value)
    assert "***@" in str(caught.value)

    caplog.set_level(logging.DEBUG)
    janitor = Janitor(base_delay=0.0)
    janitor.adopt(gym="g", url=url, database_id="db_1", error="delete failed")
    leaked = await janitor.aclose()
    assert [entry.database_id for entry in leaked] == ["db_1"]
    assert "still leaked" in caplog.text
    assert "s3cr3tPW" not in caplog.text
