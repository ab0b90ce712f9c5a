"""Developer tasks: ``nox -s tests``, ``lint``, ``docs``, ``demo``, ``record``, ``rerecord``, ``bench``."""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
from pathlib import Path

import nox

nox.options.sessions = ["lint", "docs", "tests"]
nox.options.reuse_existing_virtualenvs = True
# uv makes and fills an environment in seconds (pip: minutes for the litellm and langchain
# sets); `pip install 'nox[uv]'` brings it. Without uv, nox uses virtualenv and pip.
nox.options.default_venv_backend = "uv|virtualenv"

# What the test suite drives: the real SDKs and clients, at the versions it was written for.
TEST_DEPS = [
    "pytest>=8.0",
    "pytest-asyncio>=1.0",
    "hypothesis>=6.100",
    "httpx>=0.28",
    # 2.16 needs Python 3.11; on 3.10 (vcrpy_lowest) openai brings the httpx2 it supports
    "httpx2>=2.16; python_version >= '3.11'",
    "openai>=3.50",
    "anthropic>=2.10",
    "requests>=2.31",
    "aiohttp>=3.9",
    "pytest-xdist>=3.8",
    "jsonschema>=4.20",  # tests/cli/test_report.py validates report --json
    "playwright>=1.40",  # tests/cli/test_report_html.py drives Debian's chromium (no download)
    "blockbuster>=1.5.29",  # tests/stream/test_event_loop_never_blocks.py
]
LINT_DEPS = ["ruff>=0.15", "mypy>=1.18", "import-linter>=2.17", "pytest>=8.0", "types-PyYAML"]
DOCS_DEPS = ["mkdocs>=1.6", "mkdocs-material>=9.6"]


# The clients matrix (tests/clients): other clients replaying what the current SDKs recorded.
# Each set gets its own environment, because openai 2.x and 3.x cannot share one. Lower
# bounds are the versions the matrix was written and run against.
CLIENT_SETS: dict[str, list[str]] = {
    # openai 2.x on httpx, with litellm and langchain-openai on top of it.
    "openai2": ["openai>=2.54,<3", "litellm>=1.110", "langchain-openai>=1.7"],
    # litellm, langchain and pydantic-ai on the current openai SDK (httpx2) and anthropic SDK,
    # and for Gemini and Bedrock (#20). pydantic-ai-slim 2.68's google extra holds google-genai
    # below 3. litellm signs Bedrock requests with botocore; langchain-aws drives boto3.
    "frameworks": [
        "openai>=3.50",
        "litellm>=1.110",
        "langchain-openai>=1.7",
        "langchain-anthropic>=1.7",
        "langchain-google-genai>=4.4",
        "langchain-aws>=1.9",
        "boto3>=1.44.8",
        "pydantic-ai-slim[openai,anthropic,google]>=2.68",
        # The Agents SDK sends a prompt_cache_key made up for every run (0.24 tested).
        "openai-agents>=0.24",
        "google-adk>=2.13",
        # Strands Agents on Bedrock (boto3); its graphs run parallel nodes in threads.
        "strands-agents>=1.62",
        # DSPy on both engines (its own, lm15, sends through httpx under a cassette).
        "dspy>=3.4",
    ],
    # Provider SDKs recorded against the local provider (Gemini, Ollama, Groq, Mistral, Cohere,
    # Bedrock through boto3; #20). Lower bounds are the versions tested (mistralai 3 moved
    # Mistral to mistralai.client).
    "providers": [
        "google-genai>=3.6",
        "ollama>=0.6",
        "mistralai>=3.7",
        "groq>=1.7",
        "cohere>=7.3",
        "boto3>=1.44.8",
    ],
}
# Client sets that run only some of tests/clients (the providers set has no openai SDK, which
# the framework modules import).
CLIENT_TESTS: dict[str, list[str]] = {
    "providers": [
        f"tests/clients/test_{name}.py"
        for name in ("gemini", "ollama", "groq", "mistral", "cohere", "bedrock")
    ],
}


def _recipe_sets() -> dict[str, list[str]]:
    """Each recipe of docs/recipes.md and what its set-up installs next to llmcassette.

    A recipe's set-up is a ``<!-- docs-test: setup=NAME needs=A,B -->`` block holding one
    ``pip install llmcassette ...`` line; ``needs`` brings in the lines of the recipes it
    builds on. tests/docs/_recipes.py reads the same blocks and runs the recipe.
    """
    setup = re.compile(
        r"<!-- docs-test: setup=([\w-]+)(?: needs=([\w,-]+))? -->\n```sh\npip install llmcassette(.*)\n"
    )
    page = Path(__file__).parent / "docs" / "recipes.md"
    found = {name: (needs, line.split()) for name, needs, line in setup.findall(page.read_text())}

    def packages(name: str) -> list[str]:
        needs, own = found[name]
        return [p for need in filter(None, needs.split(",")) for p in packages(need)] + own

    return {name: list(dict.fromkeys(packages(name))) for name in found}


# Each recipe runs in an environment made from its stated set-up alone.
RECIPE_SETS = _recipe_sets()


def _parallel() -> list[str]:
    """pytest-xdist's options for the whole suite: two workers per CPU. Many tests wait on
    a subprocess, a server or a pytest run of their own; with one worker per CPU the 2-CPU
    machine was busy 1.5 CPUs of the time (the suite's pytest 362 s), with two 1.9 (289 s)."""
    return ["-n", str(2 * (os.cpu_count() or 1)), "--dist", "worksteal"]


def _test_env(session: nox.Session) -> dict[str, str | None]:
    """The environment of a test run: Python caches bytecode, in the session's environment.

    The suite starts a Python process for each whole pytest run, CLI call and docs page
    (about 200); without a bytecode cache (PYTHONDONTWRITEBYTECODE set) each one compiles
    and assertion-rewrites the same few hundred modules again, about 2 s of CPU apiece. The
    cache lives under .nox, never next to the sources.
    """
    return {
        "PYTHONDONTWRITEBYTECODE": None,
        "PYTHONPYCACHEPREFIX": os.path.join(session.virtualenv.location, "pycache"),
    }


@nox.session
@nox.parametrize("clients", ["current", *CLIENT_SETS, *(f"recipe-{r}" for r in RECIPE_SETS)])
def tests(session: nox.Session, clients: str) -> None:
    """Run the whole test suite, then the clients matrix in one environment per client set.

    ``tests(clients='current')`` is the whole suite (replays the committed cassettes
    offline); the other parametrizations install their client set and run tests/clients,
    or (``recipe-NAME``) install a recipe's set-up from docs/recipes.md and run that recipe.
    The whole suite runs in parallel, two pytest-xdist workers per CPU (``_parallel``;
    ``-- -n 0`` runs it in one process); tests/clients alone is quicker in one process than in workers that
    each import litellm and langchain.
    """
    if clients.startswith("recipe-"):  # docs/recipes.md: the recipe's pip install line only
        recipe = clients.removeprefix("recipe-")
        session.install("-e", ".", *RECIPE_SETS[recipe])
        session.run("python", "-m", "tests.docs._recipes", recipe, env=_test_env(session))
        return
    if clients == "current":
        session.install("-e", ".[brotli,zstd,progress]", *TEST_DEPS)
        session.run("pytest", *_parallel(), *session.posargs, env=_test_env(session))
        return
    base = [dep for dep in TEST_DEPS if not dep.startswith("openai")]
    session.install("-e", ".[brotli,zstd]", *base, *CLIENT_SETS[clients])
    paths = CLIENT_TESTS.get(clients, ["tests/clients"])
    session.run("pytest", *paths, *session.posargs, env=_test_env(session))


@nox.session
def lint(session: nox.Session) -> None:
    """ruff (lint and format check), mypy --strict, and the layer contracts (import-linter)."""
    session.install("-e", ".", *LINT_DEPS, "httpx2>=2.16", "openai>=3.50")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
    session.run("mypy", "--strict", "src/llmcassette")
    session.run("lint-imports")


@nox.session
def docs(session: nox.Session) -> None:
    """Build the documentation site with warnings as errors."""
    session.install("-e", ".", *DOCS_DEPS)
    session.run(
        "mkdocs", "build", "--strict", "--site-dir", os.path.join(session.create_tmp(), "site")
    )


@nox.session
def demo(session: nox.Session) -> None:
    """Record a streamed openai call from the bundled provider, show the redacted cassette,
    replay it offline, show a mismatch and a cut stream."""
    session.install("-e", ".", "openai>=3.50")
    session.run("python", "-m", "llmcassette.demo", *session.posargs)


@nox.session
def record(session: nox.Session) -> None:
    """Re-record the project's example cassettes in cassettes/ against the bundled provider."""
    # The same packages as `tests`: httpx advertises the encodings it can decode, so a
    # different set would change every recorded request's accept-encoding header.
    session.install("-e", ".[brotli,zstd,progress]", *TEST_DEPS)
    session.run("pytest", "tests/examples", "--record-mode=rewrite", *session.posargs)


@nox.session
def rerecord(session: nox.Session) -> None:
    """Re-record only the example cassettes that are missing, stale, expired or outdated."""
    session.install("-e", ".[brotli,zstd,progress]", *TEST_DEPS)
    session.run("python", "-m", "llmcassette.workflow", "tests/examples", *session.posargs)


@nox.session
def bench(session: nox.Session) -> None:
    """Run ../shared/bench with llmcassette as a contender (see benchmarks/README.md)."""
    session.run("python", "benchmarks/run.py", *(session.posargs or ["run"]), external=True)


def _lowest_supported(*names: str) -> list[str]:
    """``name==X`` for each of ``names``, X the ``>=X`` lower bound in pyproject.toml."""
    import tomllib

    with open("pyproject.toml", "rb") as handle:
        dependencies = tomllib.load(handle)["project"]["dependencies"]
    return _lowest_of(dependencies, *names)


def _lowest_of(requirements: list[str], *names: str) -> list[str]:
    """``name==X`` for each of ``names``, X its ``>=X`` lower bound in ``requirements``."""
    pins = []
    for name in names:
        bound = next(r for r in requirements if r.startswith(f"{name}>="))
        pins.append(bound.replace(">=", "==").split(";")[0].split(",")[0])
    return pins


def _lowest_python() -> str | None:
    """A Python 3.10 that runs (pyproject's requires-python), or None: on PATH, or one pyenv
    installed but does not put first (its ``python3.10`` shim then exits 127)."""
    pattern = os.path.expanduser("~/.pyenv/versions/3.10.*/bin/python3.10")
    for candidate in (shutil.which("python3.10"), *sorted(glob.glob(pattern))):
        if candidate is None:
            continue
        try:
            ran = subprocess.run(
                [candidate, "-c", "import sys; print(sys.executable)"],
                capture_output=True,
                text=True,
                timeout=30,
                check=True,
            )
        except (OSError, subprocess.SubprocessError):
            continue
        return ran.stdout.strip() or None
    return None


# The oldest Python llmcassette supports, when this machine has it: a dependency's lower
# bound that needs a newer one (filelock 4.3.1 needs 3.11) would otherwise keep llmcassette
# from installing there unseen.
LOWEST_PYTHON = _lowest_python()


@nox.session(python=LOWEST_PYTHON)
def vcrpy_lowest(session: nox.Session) -> None:
    """The whole suite against the oldest vcrpy, pytest-recording and filelock llmcassette
    supports and the oldest aiohttp the suite drives, on the oldest Python llmcassette
    supports when it is installed (else the one running nox).

    ``tests`` runs against the newest; llmcassette._vcr.compat names what differs between them.
    """
    session.install("-e", ".[brotli,zstd]", *TEST_DEPS)
    session.install(*_lowest_supported("vcrpy", "pytest-recording", "filelock"))
    # vcrpy's aiohttp stub is wrapped (_vcr/aiohttp_stub): run it against the oldest aiohttp
    session.install(*_lowest_of(TEST_DEPS, "aiohttp"))
    session.run("pytest", *_parallel(), *session.posargs, env=_test_env(session))


@nox.session
def fuzz(session: nox.Session) -> None:
    """Fuzz the cassette loader with mutated cassettes: ``nox -s fuzz -- --minutes 10``.

    The same mutations as tests/format/test_loader_fuzz.py, for as long as asked; prints
    how many inputs loaded, raised CassetteFormatError, or raised anything else (a bug).
    """
    session.install("-e", ".")
    session.run("python", "tests/format/loader_mutations.py", *session.posargs)
