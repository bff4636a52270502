"""How a rollout ends on a real model server's answers (#17): each server's own status and body.

Each case is a loopback server answering exactly as llama.cpp, vLLM, SGLang or OpenAI do
(the bodies below are theirs); the run on the demo gym must name the ending, verify the
state where the model's work is done, and lose no output.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import attrs
import pytest
from aiohttp import web

from eog_core import load_task
from eog_core.errors import ModelOutageError, ModelPreflightError
from eog_core.gym import GymDirectory
from eog_core.local import LocalGym, ModelFault, ScriptedModel, demo_paths, load_demo_trajectory
from eog_core.metrics import read_verdicts, runs_from_verdicts
from eog_core.run import (
    ROLLOUTS_FILE,
    EvaluationPlan,
    ModelClient,
    ModelSettings,
    RolloutOptions,
    run_evaluation,
)
from tests.run.conftest import evaluate

STEPS = load_demo_trajectory()

LLAMA_CPP_BAD_TOOL_CALL = {
    "error": {
        "code": 500,
        "type": "server_error",
        "message": "Failed to parse tool call arguments as JSON: [json.exception.parse_error.101] parse "
        "error at line 1, column 9: syntax error while parsing object key - invalid literal; "
        "last read: '{\"name: '",
    }
}
LLAMA_CPP_BAD_OUTPUT = {
    "error": {
        "code": 500,
        "type": "server_error",
        "message": 'Failed to parse input at pos 11: <tool_call>{"name": "find_account", "argu',
    }
}
VLLM_BAD_TOOL_CALL = {
    "object": "error",
    "type": "BadRequestError",
    "param": None,
    "code": 400,
    "message": "Error in extracting tool call from response: Expecting ',' "
    "delimiter: line 1 column 42 (char 41)",
}

OVERFLOWS = {
    "llama.cpp": {
        "error": {
            "code": 400,
            "type": "exceed_context_size_error",
            "message": "request (1673 tokens) exceeds the available context size "
            "(1024 tokens), try increasing it",
            "n_prompt_tokens": 1673,
            "n_ctx": 1024,
        }
    },
    "vllm": {
        "object": "error",
        "type": "BadRequestError",
        "param": None,
        "code": 400,
        "message": "This model's maximum context length is 2048 tokens. However, you "
        "requested 2100 tokens (1076 in the messages, 1024 in the completion). "
        "Please reduce the length of the messages or completion.",
    },
    "vllm-max-tokens": {
        "object": "error",
        "type": "BadRequestError",
        "param": None,
        "code": 400,
        "message": "'max_tokens' or 'max_completion_tokens' is too large: 4096. "
        "This model's maximum context length is 8192 tokens and your "
        "request has 4200 input tokens (4096 > 8192 - 4200).",
    },
    "sglang": {
        "object": "error",
        "type": "BadRequestError",
        "param": None,
        "code": 400,
        "message": "The input (5000 tokens) is longer than the model's context length "
        "(4096 tokens).",
    },
    "openai": {
        "error": {
            "message": "This model's maximum context length is 8192 tokens. However, "
            "your messages resulted in 9100 tokens.",
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        }
    },
}


def only(out: Path) -> dict[str, Any]:
    [record] = [
        json.loads(line) for line in (out / ROLLOUTS_FILE).read_bytes().split(b"\n") if line
    ]
    return record


@pytest.mark.parametrize(
    ("body", "raw"),
    [
        (LLAMA_CPP_BAD_TOOL_CALL, "[json.exception.parse_error.101]"),
        (LLAMA_CPP_BAD_OUTPUT, '<tool_call>{"name": "find_account", "argu'),
    ],
    ids=["arguments", "output"],
)
async def test_llama_cpp_malformed_tool_call_is_its_own_kind_retried_once(
    gym: LocalGym, model: ScriptedModel, tmp_path: Path, body: dict[str, Any], raw: str
) -> None:
    model.fail_next(5, status=500, body=body)
    report = await evaluate(gym, model, tmp_path, rollout_retries=2)
    record = only(tmp_path)
    assert (record["status"], record["failure_kind"], record["stop_reason"]) == (
        "incomplete",
        "malformed_tool_call",
        "malformed_tool_call",
    )
    assert record["attempts"] == 1 and len(model.requests) == 2  # one retry, no rollout retry
    assert record["malformed_tool_call"]["status"] == 500
    assert record["malformed_tool_call"]["raw_text"].startswith(raw)
    assert report.records[0]["failure_kind"] == "malformed_tool_call"
    assert gym.database_ids() == []


async def test_vllm_tool_parser_error_then_a_good_answer_goes_on(
    gym: LocalGym, model: ScriptedModel, tmp_path: Path
) -> None:
    model.fail_next(1, status=400, body=VLLM_BAD_TOOL_CALL)
    await evaluate(gym, model, tmp_path)
    record = only(tmp_path)
    assert (record["status"], record["success"], record["turns"][0]["attempts"]) == (
        "evaluated",
        True,
        2,
    )


@pytest.mark.parametrize("server", sorted(OVERFLOWS))
async def test_context_overflow_in_each_servers_words_verifies_the_state(
    gym: LocalGym, model: ScriptedModel, tmp_path: Path, server: str
) -> None:
    model.scripts["two-then-overflow"] = [
        STEPS[0:2],
        [STEPS[2]],
        ModelFault(status=400, body=OVERFLOWS[server]),
    ]
    await evaluate(gym, model, tmp_path, name="two-then-overflow")
    record = only(tmp_path)
    assert (record["status"], record["stop_reason"]) == ("evaluated", "context_overflow")
    assert record["num_turns"] == 2 and record["evaluation_completed"] is True
    assert record["context_overflow"] and len(model.requests) == 3


@pytest.mark.parametrize("api", ["chat", "responses"])
async def test_an_answer_cut_off_by_the_output_limit_is_truncated(
    gym: LocalGym, model: ScriptedModel, tmp_path: Path, api: str
) -> None:
    await evaluate(gym, model, tmp_path, name="demo-truncated", api=api)
    record = only(tmp_path)
    assert (record["status"], record["stop_reason"]) == ("evaluated", "truncated")
    assert record["turns"][-1]["finish_reason"] in ("length", "max_output_tokens")


async def test_an_answer_that_used_every_allowed_token_is_truncated(
    gym: LocalGym, model: ScriptedModel, tmp_path: Path
) -> None:
    """llama.cpp's Responses API says ``completed`` for a cut-off answer; the usage tells."""
    await evaluate(
        gym,
        model,
        tmp_path,
        name="demo-answer",
        api="responses",
        settings={"max_output_tokens": 20},
    )  # the scripted answers use 20 tokens
    assert only(tmp_path)["stop_reason"] == "truncated"


async def test_a_complete_answer_is_answered(
    gym: LocalGym, model: ScriptedModel, tmp_path: Path
) -> None:
    await evaluate(gym, model, tmp_path, name="demo-correct", api="responses")
    assert only(tmp_path)["stop_reason"] == "answered"


# -- fail fast ---------------------------------------------------------------------------------


async def test_preflight_names_a_dead_endpoint_before_anything_is_seeded(
    gym: LocalGym, tmp_path: Path, unused_tcp_port: int
) -> None:
    settings = ModelSettings(model="m", base_url=f"http://127.0.0.1:{unused_tcp_port}/v1")
    out = tmp_path / "runs" / "m"
    with pytest.raises(ModelPreflightError, match="no model server answers at"):
        await run_evaluation(
            [load_task(demo_paths().task)],
            settings,
            out,
            directory=GymDirectory({gym.name: gym.url}),
            options=RolloutOptions.build(seed_root=demo_paths().directory),
        )
    assert sum(gym.ledger.seeds.values()) == 0  # nothing was seeded
    assert not (tmp_path / "runs").exists()  # and nothing was left: no runs/m/rollouts.jsonl


async def test_preflight_names_a_refused_key_and_an_unknown_model(tmp_path: Path) -> None:
    async with ScriptedModel(api_key="right") as model:
        wrong_key = ModelClient(
            ModelSettings(model="demo", base_url=model.base_url, api_key="nope")
        )
        async with wrong_key:
            with pytest.raises(ModelPreflightError, match="refused the API key"):
                await wrong_key.preflight()
        unknown = ModelClient(
            ModelSettings(model="gpt-9", base_url=model.base_url, api_key="right")
        )
        async with unknown:
            with pytest.raises(ModelPreflightError, match=r"model 'gpt-9'.*HTTP 404.*lists demo"):
                await unknown.preflight()
        listed = ModelClient(ModelSettings(model="demo", base_url=model.base_url, api_key="right"))
        async with listed:
            assert "listed" in await listed.preflight()
        assert model.requests[-1]["body"]["model"] == "gpt-9"  # the listed one sent no POST


async def test_a_model_that_dies_mid_run_stops_the_run_after_n_rollouts(
    gym: LocalGym, tmp_path: Path, unused_tcp_port: int
) -> None:
    dead = f"http://127.0.0.1:{unused_tcp_port}/v1"
    task = load_task(demo_paths().task)
    tasks = [attrs.evolve(task, task_id=f"t{i}") for i in range(6)]
    settings = ModelSettings(
        model="m", base_url=dead, backoff_initial=0.01, backoff_max=0.02, unreachable_after=0.2
    )
    with pytest.raises(ModelOutageError, match="3 rollouts in a row") as caught:
        await run_evaluation(
            tasks,
            settings,
            tmp_path,
            plan=EvaluationPlan(concurrency=1, preflight=False),
            directory=GymDirectory({gym.name: gym.url}),
            options=RolloutOptions.build(seed_root=demo_paths().directory, retry_delay=0.01),
        )
    assert caught.value.rollouts == 3
    kinds = [
        json.loads(line)["failure_kind"]
        for line in (tmp_path / ROLLOUTS_FILE).read_text().split("\n")
        if line
    ]
    assert kinds == ["model_unreachable"] * 3
    assert gym.database_ids() == []


@attrs.define
class SilentModel:
    """Accepts connections and reads requests, never answers: a hung (stopped) server."""

    server: asyncio.Server | None = None
    readers: list[asyncio.StreamWriter] = attrs.field(factory=list)

    async def _hold(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.readers.append(writer)
        while await reader.read(65536):
            pass

    async def __aenter__(self) -> str:
        self.server = await asyncio.start_server(self._hold, "127.0.0.1", 0)
        return f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}/v1"

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        for writer in self.readers:
            writer.close()
        self.server.close()
        await self.server.wait_closed()


@pytest.fixture
async def silent() -> AsyncIterator[str]:
    async with SilentModel() as url:
        yield url


async def test_a_hung_endpoint_is_given_up_after_the_idle_timeout(
    gym: LocalGym, tmp_path: Path, silent: str
) -> None:
    settings = ModelSettings(
        model="m",
        base_url=silent,
        idle_timeout=0.3,
        unreachable_after=0.2,
        backoff_initial=0.01,
        timeout=600.0,
    )
    client = ModelClient(settings)
    started = time.monotonic()
    async with client:
        conversation = client.conversation("s", "u", [])
        with pytest.raises(Exception, match="hung") as caught:
            await client.ask(conversation)
    assert type(caught.value).__name__ == "ModelUnreachableError"
    del started  # how long it takes is benchmarks/model_endpoint_failures.py's business


@attrs.define
class ThreadPoolModel:
    """A server with a fixed pool of HTTP workers shared by every route, as llama.cpp's:
    while every worker generates, GET /models waits in the queue too; answers still come."""

    workers: int = 2
    generation: float = 1.2
    runner: web.AppRunner | None = None
    slots: asyncio.Semaphore = attrs.field(factory=lambda: asyncio.Semaphore(2))

    async def models(self, request: web.Request) -> web.Response:
        async with self.slots:
            return web.json_response({"data": [{"id": "m"}]})

    async def chat(self, request: web.Request) -> web.Response:
        async with self.slots:
            await asyncio.sleep(self.generation)
            return web.json_response(
                {
                    "choices": [
                        {"message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}
                    ]
                }
            )

    async def __aenter__(self) -> str:
        app = web.Application()
        app.router.add_get("/v1/models", self.models)
        app.router.add_post("/v1/chat/completions", self.chat)
        self.runner = web.AppRunner(app, handle_signals=False)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        return f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}/v1"  # type: ignore[union-attr]

    async def __aexit__(self, *exc: object) -> None:
        assert self.runner is not None
        await self.runner.cleanup()


async def test_a_busy_server_whose_probe_queues_is_not_declared_hung() -> None:
    """Four requests on two workers: the two queued ones hear nothing for the idle timeout
    and their probe queues behind the generations, but the first answers arrive: not hung."""
    async with ThreadPoolModel() as url:
        client = ModelClient(
            ModelSettings(
                model="m",
                base_url=url,
                idle_timeout=0.8,
                unreachable_after=0.2,
                backoff_initial=0.01,
            )
        )
        async with client:
            replies = await asyncio.gather(
                *(client.ask(client.conversation("s", "u", [])) for _ in range(4))
            )
    assert [r.turn.text for r in replies] == ["ok"] * 4


@pytest.mark.parametrize(
    ("status", "content_type", "body"),
    [
        (200, "text/html", "<html><body>Welcome to nginx!</body></html>"),
        (502, "text/html", "<html><body>502 Bad Gateway</body></html>"),
    ],
)
async def test_preflight_refuses_a_url_that_answers_no_model(
    status: int, content_type: str, body: str
) -> None:
    async def page(request: web.Request) -> web.Response:
        return web.Response(status=status, text=body, content_type=content_type)

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", page)
    runner = web.AppRunner(app, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    url = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}/v1"  # type: ignore[union-attr]
    try:
        async with ModelClient(ModelSettings(model="m", base_url=url)) as client:
            with pytest.raises(ModelPreflightError, match=rf"HTTP {status}"):
                await client.preflight()
        # and mid-run, a proxy whose backend is gone gives up like a refused connection
        settings = ModelSettings(
            model="m",
            base_url=url,
            unreachable_after=0.2,
            backoff_initial=0.05,
            backoff_max=0.1,
            max_retries=100,
        )
        async with ModelClient(settings) as client:
            with pytest.raises(Exception, match="unreachable for") as caught:
                await client.ask(client.conversation("s", "u", []))
        assert type(caught.value).__name__ == "ModelUnreachableError"
        assert caught.value.attempts < 100  # type: ignore[attr-defined]
    finally:
        await runner.cleanup()


async def test_a_long_generation_on_a_live_server_is_not_cut_by_the_idle_timeout(
    gym: LocalGym, tmp_path: Path
) -> None:
    async with ScriptedModel(service_time=1.0) as slow:  # GET /models answers at once
        report = await evaluate(
            gym, slow, tmp_path, name="demo-answer", settings={"idle_timeout": 0.2}
        )
    assert report.records[0]["status"] == "evaluated"


# -- no output lost ----------------------------------------------------------------------------


async def test_lone_surrogates_from_the_model_are_repaired_and_recorded(
    gym: LocalGym, model: ScriptedModel, tmp_path: Path
) -> None:
    half_emoji = "\ud83d"
    hostile_call = {**STEPS[0], "arguments": {"name": f"Harbor{half_emoji} Lane"}}
    model.scripts["surrogates"] = [[hostile_call], f"done {half_emoji}"]
    await evaluate(gym, model, tmp_path, name="surrogates", api="chat")
    raw = (tmp_path / ROLLOUTS_FILE).read_bytes()
    raw.decode("utf-8")  # valid UTF-8
    record = only(tmp_path)
    assert record["status"] == "evaluated"
    # the arguments JSON holds the escape: answered locally as an error, never sent to the gym
    [call] = record["turns"][0]["tool_calls"]
    assert call["is_error"] and "surrogate" in call["observation"]
    assert record["turns"][1]["repaired_surrogates"] == 1
    assert record["final_answer"] == "done \ufffd"
    assert "repaired_surrogates" not in record["turns"][0]


async def test_line_separators_in_model_text_keep_one_record_per_line(
    gym: LocalGym, model: ScriptedModel, tmp_path: Path
) -> None:
    model.scripts["separators"] = ["one\u2028two\u2029three\u0085four"]
    await evaluate(gym, model, tmp_path, name="separators")
    text = (tmp_path / ROLLOUTS_FILE).read_text(encoding="utf-8")
    assert len(text.splitlines()) == 1  # even str.splitlines() sees one line
    [run] = runs_from_verdicts(read_verdicts(tmp_path / ROLLOUTS_FILE))
    assert run.task_id == load_task(demo_paths().task).task_id
    assert only(tmp_path)["final_answer"] == "one\u2028two\u2029three\u0085four"
    # and the run resumes over it: nothing to do
    again = await evaluate(gym, model, tmp_path, name="separators")
    assert (again.skipped, again.ran) == (1, 0)


async def test_a_torn_last_line_inside_a_multibyte_character_is_dropped_on_resume(
    gym: LocalGym, model: ScriptedModel, tmp_path: Path
) -> None:
    await evaluate(gym, model, tmp_path, name="demo-answer", repeats=1)
    with (tmp_path / ROLLOUTS_FILE).open("ab") as out:
        out.write(
            '{"format": "eog_core.rollout/1", "final_answer": "caf\u00e9 \u2603'.encode()[:-2]
        )
    report = await evaluate(gym, model, tmp_path, name="demo-answer", repeats=2)
    assert (report.skipped, report.ran, len(report.records)) == (1, 1, 2)
    lines = (tmp_path / ROLLOUTS_FILE).read_text(encoding="utf-8").split("\n")
    assert len([line for line in lines if line]) == 2


async def test_a_missing_upstream_file_is_written_again_from_its_record(
    gym: LocalGym, model: ScriptedModel, tmp_path: Path
) -> None:
    await evaluate(gym, model, tmp_path, name="demo-correct")
    [upstream] = list((tmp_path / "upstream").rglob("results_*.json"))
    written = upstream.read_text()
    upstream.unlink()  # as if killed between the two writes
    report = await evaluate(gym, model, tmp_path, name="demo-correct")
    assert (report.skipped, report.ran) == (1, 0)
    assert json.loads(upstream.read_text()) == json.loads(written)


async def test_a_task_id_too_long_for_a_file_name_still_writes_its_upstream_file(
    gym: LocalGym, model: ScriptedModel, tmp_path: Path
) -> None:
    task = attrs.evolve(load_task(demo_paths().task), task_id="t" * 300)
    report = await evaluate(gym, model, tmp_path, name="demo-correct", tasks=[task])
    assert report.all_evaluated
    [upstream] = list((tmp_path / "upstream").rglob("results_*.json"))
    assert len(upstream.name.encode()) <= 255 and "~" in upstream.name


async def test_token_ids_are_recorded_only_when_asked(
    gym: LocalGym, model: ScriptedModel, tmp_path: Path
) -> None:
    await evaluate(gym, model, tmp_path / "plain", name="demo-answer")
    assert "token_data" not in only(tmp_path / "plain")["turns"][0]
    await evaluate(gym, model, tmp_path / "ids", name="demo-answer", settings={"token_ids": True})
    data = only(tmp_path / "ids")["turns"][0]["token_data"]
    assert data["token_ids"] == [7, 8, 9] and data["prompt_token_ids"] == [1, 2]
    assert [entry["token"] for entry in data["logprobs"]] == ["a", "b", "c"]
    assert model.requests[-1]["body"]["return_token_ids"] is True


async def test_plans_are_lazy_whatever_the_repeats(
    gym: LocalGym, tmp_path: Path, unused_tcp_port: int
) -> None:
    """50 tasks x 100,000 repeats: planned without building 5,000,000 entries; the run stops
    after the first rollout (the endpoint is dead)."""
    task = load_task(demo_paths().task)
    tasks = [attrs.evolve(task, task_id=f"t{i}") for i in range(50)]
    settings = ModelSettings(
        model="m",
        base_url=f"http://127.0.0.1:{unused_tcp_port}/v1",
        unreachable_after=0.05,
        backoff_initial=0.01,
    )
    from eog_core.run import MAX_REPEATS, RolloutOptions, RunProgress

    progress = RunProgress()
    with pytest.raises(ModelOutageError):
        await run_evaluation(
            tasks,
            settings,
            tmp_path,
            plan=EvaluationPlan(
                repeats=MAX_REPEATS, concurrency=1, preflight=False, max_consecutive_unreachable=1
            ),
            progress=progress,
            directory=GymDirectory({gym.name: gym.url}),
            options=RolloutOptions.build(seed_root=demo_paths().directory, rollout_retries=0),
        )
    assert (progress.total, progress.done) == (50 * MAX_REPEATS, 1)


@pytest.mark.parametrize(("repeats", "concurrency"), [(0, 1), (10**20, 1), (1, 10**9)])
async def test_absurd_repeats_and_concurrency_are_refused(
    tmp_path: Path, repeats: int, concurrency: int
) -> None:
    from eog_core.errors import UsageError

    settings = ModelSettings(model="m", base_url="http://127.0.0.1:9/v1")
    with pytest.raises(UsageError, match="must be between"):
        await run_evaluation(
            [load_task(demo_paths().task)],
            settings,
            tmp_path,
            plan=EvaluationPlan(repeats=repeats, concurrency=concurrency),
        )


async def test_an_empty_task_list_is_refused(tmp_path: Path) -> None:
    from eog_core.errors import UsageError

    settings = ModelSettings(model="m", base_url="http://127.0.0.1:9/v1")
    with pytest.raises(UsageError, match="no tasks"):
        await run_evaluation([], settings, tmp_path)


async def test_an_upstream_file_without_an_evaluated_record_does_not_outlive_a_failed_retry(
    gym: LocalGym, model: ScriptedModel, tmp_path: Path, unused_tcp_port: int
) -> None:
    """Killed after the upstream file was written, before its record: the rerun that ends
    incomplete must not leave the old file for `score` to count."""
    await evaluate(gym, model, tmp_path, name="demo-correct")
    [upstream] = list((tmp_path / "upstream").rglob("results_*.json"))
    (tmp_path / ROLLOUTS_FILE).write_text("")  # the record never made it
    settings = ModelSettings(
        model="demo-correct",
        base_url=f"http://127.0.0.1:{unused_tcp_port}/v1",
        unreachable_after=0.05,
        backoff_initial=0.01,
    )
    report = await run_evaluation(
        [load_task(demo_paths().task)],
        settings,
        tmp_path,
        plan=EvaluationPlan(preflight=False),
        directory=GymDirectory({gym.name: gym.url}),
        options=RolloutOptions.build(seed_root=demo_paths().directory, rollout_retries=0),
    )
    assert report.records[0]["failure_kind"] == "model_unreachable"
    assert not upstream.exists()


async def test_the_preflight_waits_a_moment_for_a_server_still_starting(
    unused_tcp_port: int,
) -> None:
    """The README's offline try starts `serve-model &` just before `run`: a refused connection
    is retried for a few seconds before it is called dead."""
    url = f"http://127.0.0.1:{unused_tcp_port}/v1"

    async def start_late() -> ScriptedModel:
        await asyncio.sleep(1.0)
        return await ScriptedModel(port=unused_tcp_port).__aenter__()

    late = asyncio.create_task(start_late())
    try:
        async with ModelClient(ModelSettings(model="demo", base_url=url)) as client:
            assert "listed" in await client.preflight()
    finally:
        await (await late).__aexit__()
