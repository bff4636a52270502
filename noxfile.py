"""Developer sessions: tests, lint, typecheck, bench, chaos, demo."""

from __future__ import annotations

import nox

nox.options.sessions = ["tests", "lint", "typecheck"]
nox.options.reuse_existing_virtualenvs = True


@nox.session
def tests(session: nox.Session) -> None:
    """The test suite (the same command as README and .ci/run)."""
    session.install("-e", ".[test]")
    session.run("python", "-m", "pytest", *session.posargs)


@nox.session
def properties(session: nox.Session) -> None:
    """The hypothesis property tests with the CI profile (1,000 examples each)."""
    session.install("-e", ".[test]")
    session.run("python", "-m", "pytest", "-m", "property", "-p", "no:randomly", *session.posargs,
                env={"HYPOTHESIS_PROFILE": "ci"})


@nox.session
def lint(session: nox.Session) -> None:
    session.install("ruff")
    session.run("ruff", "check", "src", "tests", "benchmarks", "noxfile.py")


@nox.session
def typecheck(session: nox.Session) -> None:
    session.install("-e", ".[dev]")
    session.run("mypy", "--strict", "src/eog_core")


@nox.session
def bench(session: nox.Session) -> None:
    """Throughput benchmarks (pytest-benchmark); never part of the default test run."""
    session.install("-e", ".[test]")
    session.run("python", "-m", "pytest", "benchmarks", "-o", "python_files=bench_*.py",
                "--benchmark-columns=min,median,mean,ops", "--benchmark-sort=name", *session.posargs)


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
