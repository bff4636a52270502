"""Run upstream's ReAct loop against a loopback gym and write tests/golden/model_view.json.

    EOG_UPSTREAM_DIR=/path/to/EnterpriseOps-Gym python tests/golden/generators/gen_model_view.py

Upstream's ``ReactOrchestrator`` runs as is, with its own ``MCPClient`` (httpx)
calling a local aiohttp server that answers each tool with a chosen HTTP body,
and a scripted model in place of the LangChain LLM. Only
``langchain_core.messages`` is stubbed (three plain message classes): the
observation string, final response and ``tools_used`` are computed by upstream's
code. Recorded: the tool observation for each answer, and per scripted run the
model's turns, the observations, ``final_response``, ``tools_used`` and the tool
calls its ``tool_execution`` verifiers receive.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import types
from pathlib import Path
from typing import Any

from aiohttp import web

HERE = Path(__file__).resolve().parent
OUT = HERE.parent / "model_view.json"


def _message_class(name: str) -> type:
    def __init__(self: Any, content: Any = "", **fields: Any) -> None:
        self.content = content
        self.__dict__.update(fields)

    return type(name, (), {"__init__": __init__})


def import_upstream() -> tuple[Any, Any, Any]:
    folder = os.environ.get("EOG_UPSTREAM_DIR")
    if not folder or not (Path(folder) / "orchestrators" / "react.py").is_file():
        sys.exit(
            "set EOG_UPSTREAM_DIR to a checkout of ServiceNow/EnterpriseOps-Gym "
            "(the folder holding orchestrators/react.py)"
        )
    messages = types.ModuleType("langchain_core.messages")
    for name in ("SystemMessage", "HumanMessage", "ToolMessage"):
        setattr(messages, name, _message_class(name))
    sys.modules.setdefault("langchain_core", types.ModuleType("langchain_core"))
    sys.modules["langchain_core.messages"] = messages
    sys.path.insert(0, folder)
    from benchmark.mcp_client import MCPClient
    from benchmark.models import BenchmarkConfig
    from orchestrators.react import ReactOrchestrator

    return MCPClient, BenchmarkConfig, ReactOrchestrator


JSON = "application/json"
#: (case id, HTTP status, content type, exact body text) the gym answers to tools/call.
ANSWERS: list[tuple[str, int, str, str]] = [
    (
        "text",
        200,
        JSON,
        '{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text",'
        '"text":"{\\"user_id\\": 32, \\"name\\": \\"Jose\\"}"}],"isError":false}}',
    ),
    (
        "is_error",
        200,
        JSON,
        '{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text",'
        '"text":"Error: x-database-id header is required"}],"isError":true}}',
    ),
    (
        "structured",
        200,
        JSON,
        '{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"5"}],'
        '"structuredContent":{"result":5},"isError":false}}',
    ),
    (
        "unicode",
        200,
        "application/json; charset=utf-8",
        '{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"Café ✓ 日本 😀"}],"isError":false}}',
    ),
    (
        "numbers",
        200,
        JSON,
        '{"jsonrpc":"2.0","id":2,"result":{"content":[],"structuredContent":'
        '{"a":1.0,"b":1e2,"c":-0.0,"d":12345678901234567890,"e":0.1,"f":1.5E-7,"g":-3},'
        '"isError":false}}',
    ),
    (
        "key_order",
        200,
        JSON,
        '{"jsonrpc":"2.0","id":2,"result":{"isError":false,'
        '"content":[{"text":"x","type":"text"}]}}',
    ),
    (
        "escapes",
        200,
        JSON,
        '{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":'
        '"q\\"b\\\\n\\nt\\t\\u2028c\\u0001</script>/"}],"isError":false}}',
    ),
    (
        "pretty_body",
        200,
        JSON,
        '{\n  "jsonrpc": "2.0",\n  "id": 2,\n  "result": {\n    "content": [\n'
        '      {"type": "text", "text": "spaced"}\n    ],\n    "isError": false\n  }\n}',
    ),
    (
        "meta_fields",
        200,
        JSON,
        '{"jsonrpc":"2.0","id":2,"result":{"_meta":{"k":"v"},"content":[],"isError":false}}',
    ),
    (
        "duplicate_key",
        200,
        JSON,
        '{"jsonrpc":"2.0","id":2,"result":{"content":[],"isError":false,"isError":true}}',
    ),
    ("empty_result", 200, JSON, '{"jsonrpc":"2.0","id":2,"result":{}}'),
    ("null_result", 200, JSON, '{"jsonrpc":"2.0","id":2,"result":null}'),
    (
        "jsonrpc_error",
        200,
        JSON,
        '{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"Unknown tool: x"}}',
    ),
    ("http_500", 500, JSON, '{"detail":"boom"}'),
    ("http_404", 404, "text/plain", "Not Found"),
    ("not_json", 200, "text/plain", "oops"),
]

#: Scripted runs: (id, max_iterations, turns); a turn is (content, [tool names called]).
RUNS: list[tuple[str, int, list[tuple[Any, list[str]]]]] = [
    ("answer_string", 50, [("", ["text", "is_error"]), ("Done: case CS0001 created.", [])]),
    (
        "answer_blocks",
        50,
        [
            ("", ["text"]),
            (
                [
                    {"type": "reasoning", "summary": []},
                    {"type": "text", "text": "First"},
                    {"type": "text", "text": "Second"},
                ],
                [],
            ),
        ],
    ),
    (
        "answer_without_text_block",
        50,
        [("", ["text"]), ([{"type": "reasoning", "summary": []}], [])],
    ),
    ("answer_empty", 50, [("", ["structured"]), ("", [])]),
    ("budget_exhausted", 2, [("Looking.", ["text"]), ("Still looking.", ["is_error", "unicode"])]),
    (
        "repeats",
        50,
        [("", ["structured", "text"]), ("Again.", ["text", "unicode", "structured"]), ("ok", [])],
    ),
    ("no_tools", 50, [("Hello, nothing to do.", [])]),
]


class ScriptedModel:
    """Stands in for upstream's LLMClient: answers each turn from a script."""

    def __init__(self, turns: list[tuple[Any, list[str]]]) -> None:
        self.turns = list(turns)
        self.count = 0

    async def invoke_with_tools(self, messages: list[Any], tools: list[Any]) -> Any:
        content, names = self.turns.pop(0)
        calls = []
        for name in names:
            self.count += 1
            calls.append({"name": name, "args": {"n": self.count}, "id": f"call_{self.count}"})
        return types.SimpleNamespace(
            content=content,
            tool_calls=calls,
            usage_metadata={},
            response_metadata={},
            additional_kwargs={},
        )


async def serve() -> tuple[web.AppRunner, str]:
    answers = {case: (status, ctype, body) for case, status, ctype, body in ANSWERS}

    async def mcp(request: web.Request) -> web.Response:
        message = await request.json()
        status, ctype, body = answers[message["params"]["name"]]
        return web.Response(status=status, body=body.encode(), headers={"Content-Type": ctype})

    app = web.Application()
    app.router.add_post("/mcp", mcp)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    return runner, f"http://127.0.0.1:{runner.addresses[0][1]}"


async def run_once(
    upstream: tuple[Any, Any, Any],
    url: str,
    max_iterations: int,
    turns: list[tuple[Any, list[str]]],
) -> dict[str, Any]:
    mcp_client, config_class, orchestrator_class = upstream
    names = [case for case, *_ in ANSWERS]
    orchestrator = orchestrator_class(
        llm_client=ScriptedModel(turns),
        mcp_clients={"gym": mcp_client(url)},
        tool_to_server_mapping=dict.fromkeys(names, "gym"),
        available_tools=[],
        config=config_class(
            system_prompt="system", user_prompt="user", verifiers=[], number_of_runs=1
        ),
        max_iterations=max_iterations,
    )
    result = await orchestrator.execute()
    observations = [m.content for m in result["messages"] if type(m).__name__ == "ToolMessage"]
    return {
        "final_response": result["final_response"],
        "tools_used": result["tools_used"],
        "observations": observations,
        "verifier_tool_calls": [r["tool_name"] for r in result["tool_results"]],
    }


async def main() -> None:
    upstream = import_upstream()
    runner, url = await serve()
    try:
        every = await run_once(
            upstream, url, 50, [("", [case for case, *_ in ANSWERS]), ("done", [])]
        )
        observations = [
            {
                "id": case,
                "status": status,
                "content_type": ctype,
                "body": body,
                "observation": observed,
            }
            for (case, status, ctype, body), observed in zip(
                ANSWERS, every["observations"], strict=True
            )
        ]
        runs = []
        for run_id, max_iterations, turns in RUNS:
            runs.append(
                {
                    "id": run_id,
                    "max_iterations": max_iterations,
                    "turns": [
                        {"content": content, "tool_calls": names} for content, names in turns
                    ],
                    **await run_once(upstream, url, max_iterations, turns),
                }
            )
    finally:
        await runner.cleanup()
    golden = {
        "generator": "tests/golden/generators/gen_model_view.py",
        "upstream": "ServiceNow/EnterpriseOps-Gym orchestrators/react.py + benchmark/mcp_client.py",
        "observations": observations,
        "runs": runs,
    }
    OUT.write_text(json.dumps(golden, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {OUT}: {len(observations)} observations, {len(runs)} runs")


if __name__ == "__main__":
    asyncio.run(main())
