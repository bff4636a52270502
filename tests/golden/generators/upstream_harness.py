"""Import upstream's harness unmodified and drive it at its network and model edges.

Used by gen_task_parity.py and gen_task_loader.py. Upstream is imported from
the folder named by ``EOG_UPSTREAM_DIR``; only imports it needs for code paths
we never run are stubbed (``langchain_core.messages`` as plain message classes,
``datasets``, ``nest_asyncio`` and, when absent, ``aiohttp``). Then:

* ``evaluate.load_config`` reads the task file as is;
* ``BenchmarkExecutor.execute_benchmark`` runs one run, its own code end to end,
  with four edges replaced: database creation/deletion return fixed ids, the
  MCP handshake and tool discovery do nothing, the orchestrator returns a given
  final response and tool calls, the LLM client's model replays judge replies,
  and the ``httpx`` module the verifier posts SQL with answers each
  ``(gym url, query)`` with a given HTTP status and body (real ``httpx.Response``
  objects, so ``raise_for_status``/``json``/``text`` are httpx's own).
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import logging
import os
import sys
import types
from pathlib import Path
from typing import Any

import httpx

#: The keys of upstream's run record that the verifier decides (the rest are the rollout's).
RECORD_KEYS = ("error", "verification_results", "verification_summary", "overall_success")


def _message_class(name: str) -> type:
    def __init__(self: Any, content: Any = "", **fields: Any) -> None:
        self.content = content
        self.__dict__.update(fields)

    return type(name, (), {"__init__": __init__})


def import_upstream() -> types.SimpleNamespace:
    folder = os.environ.get("EOG_UPSTREAM_DIR")
    if not folder or not (Path(folder) / "evaluate.py").is_file():
        sys.exit(
            "set EOG_UPSTREAM_DIR to a checkout of ServiceNow/EnterpriseOps-Gym @271f2c3 "
            "(the folder holding evaluate.py)"
        )
    messages = types.ModuleType("langchain_core.messages")
    for name in ("SystemMessage", "HumanMessage", "ToolMessage", "AIMessage"):
        setattr(messages, name, _message_class(name))
    sys.modules.setdefault("langchain_core", types.ModuleType("langchain_core"))
    sys.modules["langchain_core.messages"] = messages
    datasets = types.ModuleType("datasets")
    datasets.load_dataset = lambda *a, **k: []  # type: ignore[attr-defined]
    sys.modules.setdefault("datasets", datasets)
    nest = types.ModuleType("nest_asyncio")
    nest.apply = lambda *a, **k: None  # type: ignore[attr-defined]
    sys.modules.setdefault("nest_asyncio", nest)
    try:
        import aiohttp  # noqa: F401
    except ImportError:
        sys.modules["aiohttp"] = types.ModuleType("aiohttp")
    sys.path.insert(0, folder)
    import evaluate
    from benchmark import executor, models, verifier
    from benchmark.mcp_client import MCPClient

    logging.disable(logging.CRITICAL)
    return types.SimpleNamespace(
        evaluate=evaluate, executor=executor, models=models, verifier=verifier, MCPClient=MCPClient
    )


class Scenario:
    """What the edges answer during one run."""

    def __init__(
        self,
        *,
        answers: dict[tuple[str, str], tuple[int, str]],
        judge: dict[str, Any],
        final_response: str,
        tools: list[str],
    ) -> None:
        self.answers = answers
        self.judge = judge
        self.final_response = final_response
        self.tools = tools
        self.requests: list[dict[str, Any]] = []
        self.databases = 0


CURRENT: dict[str, Scenario] = {}


class _FakeHttpClient:
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    async def __aenter__(self) -> _FakeHttpClient:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        return None

    async def post(self, url: str, json: Any = None, headers: Any = None) -> httpx.Response:
        scenario = CURRENT["run"]
        scenario.requests.append(
            {
                "url": url,
                "query": json.get("query"),
                "database_id": json.get("database_id"),
                "headers": {k: v for k, v in headers.items() if k != "Content-Type"},
            }
        )
        base = url[: -len("/api/sql-runner")]
        status, body = scenario.answers[(base, json["query"])]
        return httpx.Response(
            status, content=body.encode("utf-8"), request=httpx.Request("POST", url)
        )


class _FakeModel:
    async def ainvoke(self, messages: list[Any]) -> Any:
        prompt = messages[-1].content
        marker = "\nComparison Task:\n"
        comparison = prompt[
            prompt.index(marker) + len(marker) : prompt.rindex("\n\nPlease provide")
        ]
        reply = CURRENT["run"].judge[comparison]
        if isinstance(reply, dict):
            raise RuntimeError(reply["raise"])
        return types.SimpleNamespace(content=reply)


class _FakeLLMClient:
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.llm = _FakeModel()


class _FakeOrchestrator:
    def __init__(self, **kwargs: Any) -> None:
        pass

    async def execute(self) -> dict[str, Any]:
        scenario = CURRENT["run"]
        return {
            "final_response": scenario.final_response,
            "conversation_flow": [],
            "tools_used": list(scenario.tools),
            "tool_results": [{"tool_name": t, "arguments": {}} for t in scenario.tools],
        }

    def get_result_metadata(self) -> dict[str, Any]:
        return {}


def install_edges(up: types.SimpleNamespace) -> None:
    def create_database(url: str, seed_file: str) -> str:
        scenario = CURRENT["run"]
        scenario.databases += 1
        return f"db-{scenario.databases - 1}"

    async def connect(self: Any) -> bool:
        return True

    async def no_tools(self: Any) -> None:
        self.available_tools, self.tool_to_server_mapping = [], {}

    up.executor.create_database_from_file = create_database
    up.executor.delete_database = lambda *a, **k: True
    up.executor.LLMClient = _FakeLLMClient
    up.executor.BenchmarkExecutor._discover_and_merge_tools = no_tools
    up.MCPClient.connect = connect
    up.verifier.httpx = types.SimpleNamespace(AsyncClient=_FakeHttpClient, Timeout=httpx.Timeout)


def run_task(up: types.SimpleNamespace, config_path: str, scenario: Scenario) -> dict[str, Any]:
    """Upstream's run record (the verifier's keys) for one run of the task file, or how it failed.

    ``{"load_error": ...}`` when ``load_config`` refuses the file,
    ``{"benchmark_error": ...}`` when the benchmark fails outside its run.
    """
    try:
        config = up.evaluate.load_config(config_path)
    except Exception as exc:
        return {"load_error": f"{type(exc).__name__}: {exc}"}
    config.number_of_runs = 1
    llm = up.models.LLMConfig(llm_provider="fake", llm_model="fake", llm_api_key="k")
    executor = up.executor.BenchmarkExecutor(
        config, llm_config=llm, orchestrator_class=_FakeOrchestrator, config_path=config_path
    )
    CURRENT["run"] = scenario
    try:
        with contextlib.redirect_stdout(io.StringIO()):  # upstream prints the database ids
            result = asyncio.run(executor.execute_benchmark())
    except Exception as exc:
        return {"benchmark_error": f"{type(exc).__name__}: {exc}"}
    run = result["runs"][0]
    return {key: run[key] for key in run if key in RECORD_KEYS}
