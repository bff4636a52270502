"""Every Python block of the docs runs, and so does every command of the quickstart."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)


def blocks(name: str) -> list[str]:
    return BLOCK.findall((REPO / name).read_text(encoding="utf-8"))


# Every Python block of README.md and docs/*.md runs as written. A block whose first line is
# ``# extra: <name>`` needs that optional extra: it runs in the adapter's nox session
# (tests_integrations/), not here.
DOCUMENTS = ["README.md", *sorted(str(p.relative_to(REPO)) for p in (REPO / "docs").glob("*.md"))]
DOC_BLOCKS = [
    (name, i, code)
    for name in DOCUMENTS
    for i, code in enumerate(blocks(name))
    if not code.startswith(("# extra:", "# fragment:"))
]
# A block whose first line is ``# fragment: <what it needs>`` is a piece of a larger program (the
# body of an async function, names the reader supplies): it is compiled, not run.
FRAGMENTS = [
    (name, i, code)
    for name in DOCUMENTS
    for i, code in enumerate(blocks(name))
    if code.startswith("# fragment:")
]


@pytest.mark.parametrize(
    ("name", "index", "code"), FRAGMENTS, ids=[f"{n}#{i}" for n, i, _ in FRAGMENTS]
)
def test_fragment_compiles(name: str, index: int, code: str) -> None:
    body = "".join(f"    {line}\n" for line in code.splitlines())
    compile(f"async def fragment():\n{body}", f"{name} block {index}", "exec")


def test_the_documents_have_runnable_examples() -> None:
    assert {name for name, _, _ in DOC_BLOCKS} >= {
        "README.md",
        "docs/embedding.md",
        "docs/quickstart.md",
        "docs/run.md",
        "docs/parity.md",
        "docs/performance.md",
    }
    assert len([b for b in DOC_BLOCKS if b[0] == "docs/embedding.md"]) == 1
    extras = {
        code.splitlines()[0]
        for name in DOCUMENTS
        for code in blocks(name)
        if code.startswith("# extra:")
    }
    assert extras == {"# extra: nemo-gym", "# extra: stirrup", "# extra: inspect", "# extra: ray"}
    untested = [
        f"{name}: {fence}"
        for name in DOCUMENTS
        for fence in re.findall(
            r"^```(\w+)$", (REPO / name).read_text(encoding="utf-8"), re.MULTILINE
        )
        if fence in ("py", "python3", "pycon")
    ]
    assert untested == []  # a Python block under another fence name would not be run


@pytest.mark.parametrize(
    ("name", "index", "code"), DOC_BLOCKS, ids=[f"{n}#{i}" for n, i, _ in DOC_BLOCKS]
)
def test_example_runs(name: str, index: int, code: str, tmp_path: Path) -> None:
    script = tmp_path / "example.py"
    script.write_text(code, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-W", "error", str(script)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        check=False,
    )
    assert done.returncode == 0, f"{name} block {index} failed:\n{done.stdout}\n{done.stderr}"


SHELL_BLOCK = re.compile(r"```sh\n(.*?)```", re.DOTALL)


def quickstart_commands() -> list[str]:
    """The quickstart's shell lines, minus the installation (the test runs in this environment)."""
    text = (REPO / "docs/quickstart.md").read_text(encoding="utf-8")
    lines = [line.strip() for block in SHELL_BLOCK.findall(text) for line in block.splitlines()]
    return [line.removeprefix("python -m pip install . && ") for line in lines if line]


def test_the_quickstart_commands_run_from_a_clone_without_the_data(tmp_path: Path) -> None:
    """Each command, in order, from a folder holding only the repository's examples/."""
    shutil.copytree(REPO / "examples", tmp_path / "examples")
    commands = quickstart_commands()
    assert any("verify" in c for c in commands) and any("score" in c for c in commands)
    for command in commands:
        words = shlex.split(command)
        assert words[0] in ("eog-core", "python"), command
        argv = [sys.executable, *(["-m", "eog_core"] if words[0] == "eog-core" else []), *words[1:]]
        for _ in range(2 if words[0] == "python" else 1):  # a reader may well run a step again
            done = subprocess.run(
                argv, capture_output=True, text=True, timeout=300, cwd=tmp_path, check=False
            )
            assert done.returncode == 0, f"{command}\n{done.stdout}\n{done.stderr}"
            assert "Traceback" not in done.stderr
    ignored = (REPO / ".gitignore").read_text(encoding="utf-8").splitlines()
    left = [p.name for p in tmp_path.iterdir() if p.name != "examples"]
    assert all(f"/{name}" in ignored or name in ignored for name in left), left


JSON_BLOCK = re.compile(r"```json\n(.*?)```", re.DOTALL)
TOML_BLOCK = re.compile(r"```toml\n(.*?)```", re.DOTALL)


def test_every_format_example_of_formats_md_is_read_by_our_readers(tmp_path: Path) -> None:
    """The examples of docs/formats.md parse, and the complete ones load with the library's readers."""
    import json
    import tomllib

    from eog_core import load_task
    from eog_core.gym import GymDirectory
    from eog_core.metrics import read_verdicts
    from eog_core.tasks import load_tool_snapshots

    text = (REPO / "docs/formats.md").read_text(encoding="utf-8")
    examples = [json.loads(block) for block in JSON_BLOCK.findall(text)]
    assert len(examples) >= 8
    task = next(
        e
        for e in examples
        if "gym_servers_config" in e and isinstance(e["gym_servers_config"], list)
    )
    assert load_task(task).verifiers
    row = next(e for e in examples if isinstance(e.get("verifiers"), str))
    assert json.loads(
        row["verifiers"].replace(", ...", "")
    )  # the JSON-string fields of a dataset row
    verdict = next(e for e in examples if "policy" in e)
    (tmp_path / "v.jsonl").write_text(json.dumps(verdict) + "\n")
    assert read_verdicts(tmp_path / "v.jsonl")[0].task_id == verdict["task_id"]
    snapshot = next(e for e in examples if "snapshot_at" in e)
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "itsm.json").write_text(json.dumps(snapshot))
    assert load_tool_snapshots(tmp_path / "tools")["gym-itsm-mcp"].tools
    directory = next(
        e
        for e in examples
        if all(isinstance(v, str | list) for v in e.values())
        and all(k.startswith(("sn-", "gym-")) for k in e)
    )
    (tmp_path / "gyms.json").write_text(json.dumps(directory))
    (tmp_path / "gyms.toml").write_text(TOML_BLOCK.findall(text)[0])
    assert tomllib.loads(TOML_BLOCK.findall(text)[0])["gyms"] == directory
    for source in ("gyms.json", "gyms.toml"):
        assert len(GymDirectory.from_file(tmp_path / source).gyms()["sn-csm-server"]) == 2


def offline_recipe(name: str) -> str:
    """The ``sh`` block under a document's "Try it offline" heading."""
    text = (REPO / name).read_text(encoding="utf-8")
    section = text.split("\n## Try it offline\n", 1)[1].split("\n## ", 1)[0]
    [block] = SHELL_BLOCK.findall(section)
    return str(block)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def run_in_bash(recipe: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """A documented recipe in bash, strict, its background servers killed at the end."""
    script = "set -euo pipefail\ntrap 'kill $(jobs -p) 2>/dev/null || true' EXIT\n" + recipe
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    return subprocess.run(
        ["bash", "-c", script],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
        env={**os.environ, "PATH": path},
        check=False,
    )


def test_the_gateway_s_offline_recipe_runs_as_written(tmp_path: Path) -> None:
    """docs/gateway.md "Try it offline", in bash, its two ports made free ones: the demo
    gym, the gateway, one tool call, the finish, the gateway's exit 0, the score."""
    missing = [tool for tool in ("bash", "curl", "jq") if shutil.which(tool) is None]
    if missing:  # .ci/run installs them: in CI a missing one fails, never skips
        message = f"the recipe plays the agent with bash, curl and jq; missing: {missing}"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    recipe = offline_recipe("docs/gateway.md")
    assert "8101" in recipe and "8700" in recipe
    recipe = recipe.replace("8101", str(free_port())).replace("8700", str(free_port()))
    done = run_in_bash(recipe, tmp_path)
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    assert "Harbor Lane Robotics" in done.stdout  # the tool call's answer
    assert '{"success":false,"reward":0,"tools_used":["find_account"]}' in done.stdout
    assert "1 of 1 rollouts evaluated" in done.stdout and "Policy: parity" in done.stdout
    assert "WARNING" not in done.stderr and "Traceback" not in done.stderr, done.stderr
    ignored = (REPO / ".gitignore").read_text(encoding="utf-8").splitlines()
    assert [p.name for p in tmp_path.iterdir()] == ["runs"] and "runs/" in ignored


def test_the_readme_s_offline_run_is_clean(tmp_path: Path) -> None:
    """README "Try `eog-core run` offline" in bash, on free ports instead of 8101 and 8102:
    every rollout succeeds, and nothing is said on stderr (no WARNING)."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## Try `eog-core run` offline\n", 1)[1].split("\n## ", 1)[0]
    [recipe] = SHELL_BLOCK.findall(section)
    gym, model = free_port(), free_port()
    recipe = (
        recipe.replace("serve-local &", f"serve-local --port {gym} &")
        .replace("serve-model &", f"serve-model --port {model} &")
        .replace(":8101", f":{gym}")
        .replace(":8102", f":{model}")
    )
    done = run_in_bash(recipe, tmp_path)
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    records = (tmp_path / "runs" / "demo" / "rollouts.jsonl").read_text().splitlines()
    assert [json.loads(line)["success"] for line in records] == [True, True, True]
    assert done.stderr == ""


def test_the_readme_s_rescore_and_replay_commands_pass(tmp_path: Path) -> None:
    """README "Re-check a run" in bash, after the offline run with --capture-state."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    offline = text.split("\n## Try `eog-core run` offline\n", 1)[1].split("\n## ", 1)[0]
    [run] = SHELL_BLOCK.findall(offline)
    section = text.split("\n## Re-check a run: `eog-core rescore` and `eog-core replay`\n", 1)
    [recheck] = SHELL_BLOCK.findall(section[1].split("\n## ", 1)[0])
    gym, model, again = free_port(), free_port(), free_port()
    run = run.replace("--out runs/demo", "--out runs/checked --capture-state")
    recheck = recheck.replace("serve-local &", f"serve-local --port {again} &")
    recipe = (
        (run + "\n" + recheck.replace(":8101", f":{again}"))
        .replace("serve-local &", f"serve-local --port {gym} &")
        .replace("serve-model &", f"serve-model --port {model} &")
        .replace(":8101", f":{gym}")
        .replace(":8102", f":{model}")
    )
    done = run_in_bash(recipe, tmp_path)
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    assert "strict: no verdict flips" in done.stdout
    assert "3 of 3 rollout(s) reproduced" in done.stdout
    assert (tmp_path / "runs" / "checked-rescored" / "rollouts.jsonl").is_file()
