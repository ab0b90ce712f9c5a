"""Developer tasks: ``nox -s tests``, ``lint``, ``docs``, ``demo``, ``record``, ``bench``."""

from __future__ import annotations

import os

import nox

nox.options.sessions = ["lint", "docs", "tests"]
nox.options.reuse_existing_virtualenvs = True

# What the test suite drives: the real SDKs and clients, at the versions it was written for.
TEST_DEPS = [
    "pytest>=8.0",
    "pytest-asyncio>=1.0",
    "hypothesis>=6.100",
    "httpx>=0.28",
    "httpx2>=2.16",
    "openai>=3.50",
    "anthropic>=2.10",
    "requests>=2.31",
    "aiohttp>=3.9",
]
LINT_DEPS = ["ruff>=0.15", "mypy>=1.18", "pytest>=8.0", "types-PyYAML"]
DOCS_DEPS = ["mkdocs>=1.6", "mkdocs-material>=9.6"]


@nox.session
def tests(session: nox.Session) -> None:
    """Run the whole test suite (replays the committed cassettes offline)."""
    session.install("-e", ".[brotli,zstd]", *TEST_DEPS)
    session.run("pytest", *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    """ruff (lint and format check) and mypy --strict on the package."""
    session.install("-e", ".", *LINT_DEPS, "httpx2>=2.16", "openai>=3.50")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
    session.run("mypy", "--strict", "src/llmcassette")


@nox.session
def docs(session: nox.Session) -> None:
    """Build the documentation site with warnings as errors."""
    session.install("-e", ".", *DOCS_DEPS)
    session.run(
        "mkdocs", "build", "--strict", "--site-dir", os.path.join(session.create_tmp(), "site")
    )


@nox.session
def demo(session: nox.Session) -> None:
    """Record a streamed openai call from the bundled provider, replay it, show a mismatch."""
    session.install("-e", ".", "openai>=3.50")
    session.run("python", "-m", "llmcassette.demo", *session.posargs)


@nox.session
def record(session: nox.Session) -> None:
    """Re-record the project's example cassettes in cassettes/ against the bundled provider."""
    # The same packages as `tests`: httpx advertises the encodings it can decode, so a
    # different set would change every recorded request's accept-encoding header.
    session.install("-e", ".[brotli,zstd]", *TEST_DEPS)
    session.run("pytest", "tests/examples", "--record-mode=rewrite", *session.posargs)


@nox.session
def bench(session: nox.Session) -> None:
    """Run ../shared/bench with llmcassette as a contender (see benchmarks/README.md)."""
    session.run("python", "benchmarks/run.py", *(session.posargs or ["run"]), external=True)
