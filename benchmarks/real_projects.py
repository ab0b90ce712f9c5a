#!/usr/bin/env python3
"""Issue 19's first bar: real projects' vcrpy suites, before and after llmcassette.

    python benchmarks/real_projects.py                      # every project below
    python benchmarks/real_projects.py traceloop-openai     # some of them
    python benchmarks/real_projects.py --reps 2 --work /tmp/real-projects --json out.json

For each project (its sdist from PyPI, which ships its tests and cassettes) this makes two
venvs with the versions of the project's own ``uv.lock`` (its ``test`` group; for an sdist
without one, what ``uv pip compile`` resolves for ``Project.compile_from``): ``base``
without llmcassette and ``llmc`` with this checkout's HEAD (``git archive``, not the work
tree, so the commits measured are the ones named). Then it runs the project's VCR tests
offline (``-m vcr --record-mode=none --block-network``):

- ``baseline``: ``base``, the YAML cassettes as shipped;
- ``installed``: ``llmc``, the same tree (``drift`` at its default, ``warn``);
- ``control``: ``llmc`` with ``-p no:llmcassette``: what the upgrades llmcassette pulls in
  (vcrpy, pytest-recording) change on their own;
- ``strict``: ``llmc`` with ``--llmcassette-drift=strict``;
- ``converted``: ``llmc`` on a copy whose cassettes ``llmcassette convert`` turned into
  JSONL, the YAML moved out of the tree (for a project that configures its own vcrpy
  serializer and persister, its conftest is patched as ``Patch`` says, and the report
  says so).

baseline, installed and converted run ``--reps`` times, interleaved; the time is the best
wall time, with the CPU time (user + sys of the run) beside it, which a busy shared machine
disturbs less. Outcomes per test come from ``--junitxml``. It prints a markdown table and,
per project, the tests whose outcome differs from the baseline, the drift summary of the
installed run and the strict failures. Needs ``uv`` and PyPI; stdlib only, Python 3.10+.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tarfile
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# The interpreter of the venvs (--python): one on this machine, as uv would fetch one.
PYTHON = sys.executable


@dataclass(frozen=True)
class Patch:
    """An edit of the converted copy (``re.sub`` in the files ``glob`` names, which must
    change at least one): what a user adopting JSONL cassettes does."""

    glob: str
    pattern: str
    new: str
    why: str


@dataclass(frozen=True)
class Project:
    """A real project whose tests replay vcrpy cassettes of LLM traffic."""

    name: str
    sdist: str  # name==version on PyPI
    tests: tuple[str, ...]  # paths given to pytest
    cassettes: str  # the cassette tree (converted in the converted copy)
    env: dict[str, str] = field(default_factory=dict)
    pytest_args: tuple[str, ...] = ()
    # Lock pins the package index here does not have, replaced by these requirements.
    replace: dict[str, str] = field(default_factory=dict)
    # Packages the lock takes from the project's monorepo (editable paths), from PyPI here.
    extra: tuple[str, ...] = ()
    patches: tuple[Patch, ...] = ()
    # For an sdist without a uv.lock: requirements that ``uv pip compile`` pins (today's
    # versions, so a later run may resolve others).
    compile_from: tuple[str, ...] = ()
    # The uv.lock dependency group that holds the test tools.
    group: str = "test"
    # For an sdist without tests: "GIT_DIR:subfolder" of a repository snapshot (as the
    # search tool's fetch leaves one) whose HEAD holds the package; its tree replaces the sdist.
    tree: str = ""
    # Files under ``cassettes`` with a legacy suffix that are not cassettes (fnmatch on the
    # path relative to the tree): neither converted nor moved.
    not_cassettes: tuple[str, ...] = ()
    # Put the tree run on PYTHONPATH: an editable install of a repository root puts the
    # sdist tree's top-level packages (tests/) on sys.path, ahead of the converted copy's
    # when a plugin imports them first (pytest-django's settings module).
    pythonpath_tree: bool = False
    # pytest arguments for the runs in the llmcassette venv only (installed, converted,
    # control, strict): what the baseline venv could not import.
    llmc_args: tuple[str, ...] = ()
    # Requirements installed together with llmcassette (what keeps its upgrades, pytest
    # above all, within what the project's other test tools take).
    llmc_with: tuple[str, ...] = ()


# What every OpenInference instrumentation depends on (its pyproject at 1fe497f1d).
_OPENINFERENCE = (
    "opentelemetry-api",
    "opentelemetry-instrumentation",
    "opentelemetry-semantic-conventions",
    "openinference-instrumentation>=0.1.51",
    "openinference-semantic-conventions>=0.1.31",
    "wrapt",
    "typing-extensions",
)


_LANGCHAIN_EXTRA = (
    "langchain-core==1.8.3",
    "langchain==1.5.2",
    "langchain-tests==1.1.9",
    "langchain-protocol==0.0.20",
)
_LANGCHAIN_PATCHES = (
    Patch(
        "tests/conftest.py",
        r'    config\["serializer"\] = "yaml.gz"\n    config\["path_transformer"\] = .*\n',
        "",
        "drop its own vcrpy serializer (yaml.gz) and cassette suffix: JSONL cassettes need "
        "llmcassette's",
    ),
    Patch(
        "tests/conftest.py",
        r"    vcr.register_persister\(CustomPersister\(\)\)\n    vcr.register_serializer\(.*\n",
        "    pass\n",
        "drop its own persister, which would replace llmcassette's (the one reading JSONL)",
    ),
    Patch(
        "tests/integration_tests/**/*.py",
        r'(default_cassette\("[^"]*)\.yaml\.gz"',
        r'\1.yaml"',
        'default_cassette("x.yaml.gz") -> "x.yaml", the name llmcassette reads as x.jsonl',
    ),
)

PROJECTS = {
    p.name: p
    for p in (
        Project(
            "traceloop-anthropic",
            "opentelemetry-instrumentation-anthropic==0.62.4",
            ("tests",),
            "tests/cassettes",
            pytest_args=("-W", "ignore::DeprecationWarning"),
        ),
        Project(
            "traceloop-openai",
            "opentelemetry-instrumentation-openai==0.62.4",
            ("tests",),
            "tests",
            pytest_args=("-W", "ignore::DeprecationWarning"),
        ),
        Project(
            "traceloop-bedrock",
            "opentelemetry-instrumentation-bedrock==0.62.4",
            ("tests",),
            "tests",
            pytest_args=("-W", "ignore::DeprecationWarning"),
        ),
        Project(
            "traceloop-ollama",
            "opentelemetry-instrumentation-ollama==0.62.4",
            ("tests",),
            "tests",
            pytest_args=("-W", "ignore::DeprecationWarning"),
        ),
        Project(
            "traceloop-cohere",
            "opentelemetry-instrumentation-cohere==0.62.4",
            ("tests",),
            "tests",
            pytest_args=("-W", "ignore::DeprecationWarning"),
        ),
        Project(
            "traceloop-mistralai",
            "opentelemetry-instrumentation-mistralai==0.62.4",
            ("tests",),
            "tests",
            pytest_args=("-W", "ignore::DeprecationWarning"),
        ),
        Project(
            "traceloop-openai-agents",
            "opentelemetry-instrumentation-openai-agents==0.62.4",
            ("tests",),
            "tests",
            pytest_args=("-W", "ignore::DeprecationWarning"),
        ),
        Project(
            "traceloop-groq",
            "opentelemetry-instrumentation-groq==0.62.4",
            ("tests",),
            "tests",
            pytest_args=("-W", "ignore::DeprecationWarning"),
        ),
        Project(
            "traceloop-langchain",
            "opentelemetry-instrumentation-langchain==0.62.4",
            ("tests",),
            "tests",
            pytest_args=("-W", "ignore::DeprecationWarning"),
            extra=(
                "opentelemetry-instrumentation-bedrock==0.62.4",
                "opentelemetry-instrumentation-openai==0.62.4",
            ),
        ),
        Project(
            "traceloop-llamaindex",
            "opentelemetry-instrumentation-llamaindex==0.62.4",
            ("tests",),
            "tests",
            pytest_args=("-W", "ignore::DeprecationWarning"),
            extra=(
                "opentelemetry-instrumentation-chromadb==0.62.4",
                "opentelemetry-instrumentation-cohere==0.62.4",
                "opentelemetry-instrumentation-openai==0.62.4",
            ),
        ),
        Project(
            "traceloop-writer",
            "opentelemetry-instrumentation-writer==0.62.4",
            ("tests",),
            "tests",
            pytest_args=("-W", "ignore::DeprecationWarning"),
        ),
        Project(
            "traceloop-replicate",
            "opentelemetry-instrumentation-replicate==0.62.4",
            ("tests",),
            "tests",
            pytest_args=("-W", "ignore::DeprecationWarning"),
        ),
        Project(
            "traceloop-together",
            "opentelemetry-instrumentation-together==0.62.4",
            ("tests",),
            "tests",
            pytest_args=("-W", "ignore::DeprecationWarning"),
        ),
        Project(
            "traceloop-google-generativeai",
            "opentelemetry-instrumentation-google-generativeai==0.62.4",
            ("tests",),
            "tests",
            pytest_args=("-W", "ignore::DeprecationWarning"),
        ),
        Project(
            "traceloop-sagemaker",
            "opentelemetry-instrumentation-sagemaker==0.62.4",
            ("tests",),
            "tests",
            pytest_args=("-W", "ignore::DeprecationWarning"),
        ),
        Project(
            "traceloop-alephalpha",
            "opentelemetry-instrumentation-alephalpha==0.62.4",
            ("tests",),
            "tests",
            pytest_args=("-W", "ignore::DeprecationWarning"),
        ),
        Project(
            "langchain-anthropic",
            "langchain-anthropic==1.7.10",
            ("tests/integration_tests",),
            "tests/cassettes",
            env={"ANTHROPIC_API_KEY": "test"},
            replace={"certifi": "certifi"},
            extra=_LANGCHAIN_EXTRA,
            patches=_LANGCHAIN_PATCHES,
        ),
        Project(
            "langchain-openai",
            "langchain-openai==1.8.1",
            ("tests/integration_tests",),
            "tests/cassettes",
            env={"OPENAI_API_KEY": "test"},
            # Azure's standard tests need Azure settings even to replay.
            pytest_args=("--ignore=tests/integration_tests/chat_models/test_azure_standard.py",),
            replace={"certifi": "certifi"},
            extra=_LANGCHAIN_EXTRA,
            patches=_LANGCHAIN_PATCHES,
        ),
        Project(
            "langchain-groq",
            "langchain-groq==1.1.3",
            ("tests/integration_tests",),
            "tests/cassettes",
            env={"GROQ_API_KEY": "test"},
            replace={
                "certifi": "certifi",
                "langchain-protocol": "langchain-protocol==0.0.20",
                "langsmith": "langsmith==0.14.11",
            },
            extra=_LANGCHAIN_EXTRA,
            patches=_LANGCHAIN_PATCHES,
        ),
        # Without a uv.lock: their requirements are compiled (2026-12-06).
        Project(
            "chatlas",
            "chatlas==0.23.0",
            ("tests",),
            "tests/_vcr",
            compile_from=(
                "chatlas[test,anthropic,bedrock,google,mcp]",
                "google-genai==2.14.0",  # 3.x calls /v1/ where the cassettes hold /v1beta/
                "databricks-sdk",
                "tenacity",
                "pillow",
                "matplotlib",
                "inspect-ai",
            ),
        ),
        Project(
            "oi-google-genai",
            "openinference-instrumentation-google-genai==1.4.14",
            ("tests",),
            "tests",
            env={"GOOGLE_API_KEY": "test", "GEMINI_API_KEY": "test"},
            compile_from=(
                "openinference-instrumentation-google-genai[test]==1.4.14",
                "google-genai<3",  # 3.x calls /v1/ where the cassettes hold /v1beta/
                "pytest",
                "pytest-asyncio",
                "pytest-recording",
                "vcrpy",
                "respx",
            ),
        ),
        Project(
            "magentic",
            "magentic==0.41.1",
            ("tests",),
            "tests",
            # The suite's addopts measure coverage; its keys come from its .env.template.
            pytest_args=("--no-cov",),
            replace={"litellm": "litellm==1.53.1"},  # 1.52.6 is gone from PyPI
            group="dev",
        ),
        Project(
            "oi-litellm",
            "openinference-instrumentation-litellm==0.1.51",
            ("tests",),
            "tests",
            env={"OPENAI_API_KEY": "test", "ANTHROPIC_API_KEY": "test"},
            compile_from=(
                "openinference-instrumentation-litellm==0.1.51",
                "litellm!=1.107.*",  # 1.107.0 is reported compromised
                "openai",
                "anthropic",
                "pytest",
                "pytest-asyncio",
                "pytest-recording",
                "vcrpy",
            ),
        ),
        Project(
            "oi-anthropic",
            "openinference-instrumentation-anthropic",  # its sdist ships no tests
            ("tests",),
            "tests",
            env={"ANTHROPIC_API_KEY": "test"},
            tree="/work/.mirror/Arize-ai+openinference/repo:"
            "python/instrumentation/openinference-instrumentation-anthropic",
            compile_from=(  # its dependencies and test-requirements.txt (1fe497f1d)
                *_OPENINFERENCE,
                "anthropic==0.84.0",
                "opentelemetry-sdk",
                "pytest-asyncio",
                "pytest-recording",
                "httpx<0.28",
                "respx",
                "vcrpy",
                "pytest",
            ),
        ),
        Project(
            "oi-mistralai",
            "openinference-instrumentation-mistralai==2.2.2",
            ("tests",),
            "tests",
            env={"MISTRAL_API_KEY": "test"},
            compile_from=(
                "openinference-instrumentation-mistralai==2.2.2",
                "mistralai",  # 3.x sends through httpx2
                "respx",
                "pytest",
                "pytest-asyncio",
                "pytest-recording",
                "vcrpy",
            ),
        ),
        Project(
            "oi-haystack",
            "openinference-instrumentation-haystack",  # its sdist ships no tests
            ("tests",),
            "tests",
            tree="/work/.mirror/Arize-ai+openinference/repo:"
            "python/instrumentation/openinference-instrumentation-haystack",
            compile_from=(  # its dependencies and test-requirements.txt (1fe497f1d)
                *_OPENINFERENCE,
                "haystack-ai==2.18.0",
                "cohere-haystack",
                "opentelemetry-sdk",
                "vcrpy",
                "pytest-recording",
                "pytest-asyncio",
                "pytest",
            ),
        ),
        Project(
            "oi-dspy",
            "openinference-instrumentation-dspy",  # its sdist ships no tests
            ("tests",),
            "tests",
            tree="/work/.mirror/Arize-ai+openinference/repo:"
            "python/instrumentation/openinference-instrumentation-dspy",
            compile_from=(  # its dependencies and test-requirements.txt (1fe497f1d)
                *_OPENINFERENCE,
                "dspy==3.1.0",
                "opentelemetry-sdk",
                "pytest-recording",
                "litellm<1.82.7",  # later ones are reported compromised
                "urllib3<3.0",
                "vcrpy",
                "pytest",
                "pytest-asyncio",
            ),
        ),
        Project(
            "oi-google-adk",
            "openinference-instrumentation-google-adk",  # its sdist ships no tests
            ("tests",),
            "tests",
            tree="/work/.mirror/Arize-ai+openinference/repo:"
            "python/instrumentation/openinference-instrumentation-google-adk",
            compile_from=(  # its dependencies and test-requirements.txt (1fe497f1d)
                *_OPENINFERENCE,
                "google-adk==1.2.1",
                "opentelemetry-resourcedetector-gcp>=1.5.0.dev0",
                "opentelemetry-sdk",
                "pytest",
                "pytest-asyncio",
                "pytest-recording",
            ),
        ),
        Project(
            "oi-ollama",
            "openinference-instrumentation-ollama",  # its sdist ships no tests
            ("tests",),
            "tests",
            tree="/work/.mirror/Arize-ai+openinference/repo:"
            "python/instrumentation/openinference-instrumentation-ollama",
            compile_from=(  # its dependencies and test-requirements.txt (1fe497f1d)
                *_OPENINFERENCE,
                "ollama==0.6.2",
                "opentelemetry-sdk",
                "pytest-asyncio",
                "pytest-recording",
                "pytest",
            ),
        ),
        Project(
            "simonw-llm",
            "llm",  # its sdist ships no cassettes
            ("tests",),
            "tests/cassettes",
            tree="/work/.mirror/simonw+llm/repo:",
            compile_from=(  # its dependencies and dev group (f3f4f29), less the docs tools
                "click>=8.2.0",
                "condense-json>=1.1",
                "openai>=2.32.0",
                "click-default-group>=1.2.3",
                "sqlite-utils>=4.0",
                "pydantic>=2.0.0",
                "PyYAML",
                "pluggy",
                "python-ulid",
                "setuptools",
                "pip",
                "puremagic",
                "pytest",
                "numpy",
                "pytest-httpx>=0.33.0",
                "pytest-asyncio",
                "cogapp",
                "pytest-recording",
                "syrupy",
                "llm-echo==0.3a3",
            ),
        ),
        Project(
            "oi-openai",
            "openinference-instrumentation-openai",  # its sdist ships no tests
            ("tests",),
            "tests",
            env={"OPENAI_API_KEY": "sk-"},
            tree="/work/.mirror/Arize-ai+openinference/repo:"
            "python/instrumentation/openinference-instrumentation-openai",
            compile_from=(  # its dependencies and test-requirements.txt (1fe497f1d)
                *_OPENINFERENCE,
                "openai==2.8.0",
                "opentelemetry-sdk",
                "opentelemetry-instrumentation-httpx",
                "respx",
                "numpy",
                "pytest-recording",
                "httpx<0.28",
                "vcrpy",
                "pytest",
                "pytest-asyncio",
            ),
        ),
        Project(
            "oi-together",
            "openinference-instrumentation-together",  # its sdist ships no tests
            ("tests",),
            "tests",
            tree="/work/.mirror/Arize-ai+openinference/repo:"
            "python/instrumentation/openinference-instrumentation-together",
            compile_from=(  # its dependencies and test-requirements.txt (1fe497f1d)
                *_OPENINFERENCE,
                "together==2.22.0",
                "opentelemetry-sdk",
                "pytest-asyncio",
                "pytest-recording",
                "respx",
                "vcrpy",
                "pytest",
            ),
        ),
        Project(
            "oi-llama-index",
            "openinference-instrumentation-llama-index",  # its sdist ships no tests
            ("tests",),
            "tests",
            tree="/work/.mirror/Arize-ai+openinference/repo:"
            "python/instrumentation/openinference-instrumentation-llama-index",
            compile_from=(  # its dependencies and test-requirements.txt (1fe497f1d)
                *_OPENINFERENCE,
                "anthropic<0.121",
                "llama-index-core==0.14.19",
                "llama_index-llms-anthropic<0.11.0",
                "llama-index-llms-groq",
                "llama-index-llms-openai",
                "llama-index-llms-vertex",
                "llama-index-multi-modal-llms-openai>=0.6.2",
                "llama-index-workflows>=2.17.1",
                "openinference-instrumentation-openai",
                "opentelemetry-sdk",
                "pytest-recording",
                "respx",
                "vcrpy",
                "pytest",
                "pytest-asyncio",
            ),
        ),
        Project(
            "oi-smolagents",
            "openinference-instrumentation-smolagents",  # its sdist ships no tests
            ("tests",),
            "tests",
            tree="/work/.mirror/Arize-ai+openinference/repo:"
            "python/instrumentation/openinference-instrumentation-smolagents",
            compile_from=(  # its dependencies and test-requirements.txt (1fe497f1d)
                *_OPENINFERENCE,
                "smolagents[litellm]==1.24.0",
                "litellm<1.82.7",  # later ones are reported compromised
                "opentelemetry-sdk",
                "openai",
                "pytest",
                "pytest-recording",
                "vcrpy",
            ),
        ),
        Project(
            "oi-pydantic-ai",
            "openinference-instrumentation-pydantic-ai",  # its sdist ships no tests
            ("tests",),
            "tests",
            env={"OPENAI_API_KEY": "sk-"},
            tree="/work/.mirror/Arize-ai+openinference/repo:"
            "python/instrumentation/openinference-instrumentation-pydantic-ai",
            compile_from=(  # its dependencies and test-requirements.txt (1fe497f1d)
                *_OPENINFERENCE,
                "pydantic-ai==1.56.0",
                "genai-prices<0.1",
                "opentelemetry-sdk",
                "opentelemetry-exporter-otlp-proto-http",
                "pytest-recording",
                "vcrpy",
                "pytest",
                "pytest-asyncio",
            ),
        ),
        Project(
            "oi-autogen-agentchat",
            "openinference-instrumentation-autogen-agentchat",  # its sdist ships no tests
            ("tests",),
            "tests",
            tree="/work/.mirror/Arize-ai+openinference/repo:"
            "python/instrumentation/openinference-instrumentation-autogen-agentchat",
            compile_from=(  # its dependencies and test-requirements.txt (1fe497f1d)
                *_OPENINFERENCE,
                "autogen-agentchat==0.5.1",
                "autogen-ext[openai]==0.5.1",
                "opentelemetry-sdk",
                "pytest-asyncio",
                "pytest-recording",
                "httpx<0.28",
                "vcrpy",
                "pytest",
            ),
        ),
        Project(
            "oi-crewai",
            "openinference-instrumentation-crewai",  # its sdist ships no tests
            ("tests",),
            "tests",
            env={"OPENAI_API_KEY": "sk-"},
            tree="/work/.mirror/Arize-ai+openinference/repo:"
            "python/instrumentation/openinference-instrumentation-crewai",
            compile_from=(  # its dependencies and test-requirements.txt (1fe497f1d)
                *_OPENINFERENCE,
                "crewai==1.10.1",
                "opentelemetry-sdk",
                "responses",
                "pytest-recording",
                "vcrpy",
                "pytest",
            ),
        ),
        Project(
            "simonw-llm-anthropic",
            "llm-anthropic",  # its sdist ships no tests
            ("tests",),
            "tests/cassettes",
            tree="/work/.mirror/simonw+llm-anthropic/repo:",
            compile_from=(  # its dependencies and dev group (3ae428f)
                "llm>=0.32a1",
                "anthropic>=0.96.0,<1",  # 1.x dropped stream()'s temperature, which it sends
                "pytest",
                "pytest-recording",
                "pytest-asyncio",
                "cogapp",
                "inline-snapshot[black]",
            ),
        ),
        Project(
            "simonw-llm-gemini",
            "llm-gemini",  # its sdist ships no tests
            ("tests",),
            "tests/cassettes",
            tree="/work/.mirror/simonw+llm-gemini/repo:",
            compile_from=(  # its dependencies and dev group (2a8c855)
                "llm>=0.32",
                "httpx",
                "ijson",
                "pytest",
                "pytest-recording",
                "pytest-asyncio",
                "cogapp",
            ),
        ),
        Project(
            "simonw-llm-openai-plugin",
            "llm-openai-plugin",  # its sdist ships no cassettes
            ("tests",),
            "tests/cassettes",
            tree="/work/.mirror/simonw+llm-openai-plugin/repo:",
            compile_from=(  # its dependencies and test extra (4f1787d)
                "llm>=0.23",
                "openai>=1.67.0",
                "pytest",
                "pytest-asyncio",
                "pytest-recording",
                "syrupy",
                "cogapp",
            ),
        ),
        Project(
            "oi-langchain",
            "openinference-instrumentation-langchain",  # its sdist ships no tests
            ("tests",),
            "tests",
            env={"OPENAI_API_KEY": "sk-test", "GOOGLE_API_KEY": "test"},
            tree="/work/.mirror/Arize-ai+openinference/repo:"
            "python/instrumentation/openinference-instrumentation-langchain",
            patches=(
                Patch(
                    "tests/test_instrumentor.py",
                    r'vcr\.use_cassette\(path=(f"tests/cassettes/test_instrumentor/'
                    r'\{cassette_name\})\.yaml"\)',
                    r'__import__("llmcassette").use_cassette(\1.jsonl")',
                    "the Gemini tests open their cassette with vcrpy's own vcr.use_cassette("
                    "path='x.yaml'), which llmcassette does not reach: llmcassette's, on x.jsonl",
                ),
            ),
            compile_from=(  # its dependencies and test-requirements.txt (1fe497f1d)
                *_OPENINFERENCE,
                "langchain-core==1.4.6",
                "langchain==1.3.9",
                "langchain-classic==1.0.7",
                "langchain-openai==1.1.14",
                "langchain-community==0.4.0",
                "langchain-google-vertexai==3.0.3",
                "opentelemetry-sdk",
                "respx",
                "pytest-recording",
                "pytest-rerunfailures",
                "langsmith",
                "portpicker",
                "starlette",
                "uvicorn",
                "vcrpy",
                "pytest",
                "pytest-asyncio",
            ),
        ),
        Project(
            "oi-agent-framework",
            "openinference-instrumentation-agent-framework",  # its sdist ships no tests
            ("tests",),
            "tests",
            env={"OPENAI_API_KEY": "sk-test"},
            tree="/work/.mirror/Arize-ai+openinference/repo:"
            "python/instrumentation/openinference-instrumentation-agent-framework",
            compile_from=(  # its dependencies and test-requirements.txt (1fe497f1d)
                "opentelemetry-api>=1.39.0",
                "opentelemetry-sdk>=1.39.0",
                "opentelemetry-semantic-conventions>=0.52b0",
                "openinference-semantic-conventions>=0.1.31",
                "typing-extensions",
                "agent-framework-core==1.0.0",
                "agent-framework-openai==1.0.0",
                "opentelemetry-semantic-conventions-ai==0.4.13",
                "pytest",
                "pytest-asyncio",
                "pytest-recording",
            ),
        ),
        Project(
            "oi-beeai",
            "openinference-instrumentation-beeai",  # its sdist ships no tests
            ("tests",),
            "tests",
            tree="/work/.mirror/Arize-ai+openinference/repo:"
            "python/instrumentation/openinference-instrumentation-beeai",
            compile_from=(  # its dependencies and test extra (1fe497f1d)
                *_OPENINFERENCE,
                "beeai-framework[duckduckgo]==0.1.51",
                "opentelemetry-sdk",
                "opentelemetry-exporter-otlp",
                "pytest-recording",
                "vcrpy",
                "brotli",
                "pytest-asyncio",
                "pytest",
                "aiohttp>=3.14.1",
                "litellm[proxy]>=1.84.0,!=1.107.*",
                "python-dotenv>=1.2.2",
            ),
        ),
        Project(
            "traceloop-agno",
            "opentelemetry-instrumentation-agno==0.62.4",
            ("tests",),
            "tests",
            env={"OPENAI_API_KEY": "sk-test"},
            pytest_args=("-W", "ignore::DeprecationWarning"),
            extra=("opentelemetry-instrumentation-openai==0.62.4",),
        ),
        Project(
            "traceloop-haystack",
            "opentelemetry-instrumentation-haystack==0.62.4",
            ("tests",),
            "tests",
            env={"OPENAI_API_KEY": "sk-test"},
            pytest_args=("-W", "ignore::DeprecationWarning"),
        ),
        Project(
            "oi-openllmetry",
            "openinference-instrumentation-openllmetry",  # its sdist ships no tests
            ("tests",),
            "tests",
            env={"OPENAI_API_KEY": "sk-test"},
            tree="/work/.mirror/Arize-ai+openinference/repo:"
            "python/instrumentation/openinference-instrumentation-openllmetry",
            compile_from=(  # its dependencies and test-requirements.txt (1fe497f1d)
                "opentelemetry-sdk>=1.20.0",
                "openinference-instrumentation>=0.1.51",
                "openinference-semantic-conventions>=0.1.31",
                "opentelemetry-semantic-conventions-ai>=0.4.13,<0.5.0",
                "opentelemetry-instrumentation-openai==0.50.1",
                "openai==1.109.1",
                "opentelemetry-exporter-otlp-proto-http",
                "pytest-recording",
                "pytest",
                "vcrpy",
            ),
        ),
        Project(
            "logfire",
            "logfire",  # its sdist ships no tests: the repository at e484a6b5
            (
                "tests/otel_integrations/test_openai.py",
                "tests/otel_integrations/test_anthropic.py",
                "tests/otel_integrations/test_google_genai.py",
                "tests/otel_integrations/test_litellm.py",
                "tests/otel_integrations/test_dspy.py",
                "tests/otel_integrations/test_langchain.py",
                "tests/otel_integrations/test_openai_agents.py",
                "tests/otel_integrations/test_openai_agents_mcp.py",
                "tests/otel_integrations/test_pydantic_ai_mcp.py",
            ),
            "tests/otel_integrations/cassettes",
            # Its filterwarnings = ["error"] would make each LC304 drift warning an error.
            llmc_args=("-W", "default::llmcassette.LegacyCassetteDriftWarning"),
            tree="/work/.mirror/pydantic+logfire/repo:",
            # claude-agent-sdk transcripts the suite replays itself, not vcrpy cassettes
            not_cassettes=("tests/otel_integrations/cassettes/test_claude_agent_sdk/*",),
            pythonpath_tree=True,
            group="dev",
            # the workspace's logfire-api (an editable path in the lock)
            extra=("/tmp/llmcassette-real-projects/logfire/src/logfire-api",),
        ),
        Project(
            "ecologits",
            "ecologits",  # its sdist ships no tests: the repository at 2d0a1c7 (0.9.1)
            ("tests",),
            "tests/cassettes",
            # conftest.py loads tiktoken's cl100k_base at import, before --block-network:
            # the file as litellm's wheel ships it (tiktoken's cache key), not downloaded.
            env={"TIKTOKEN_CACHE_DIR": "/tmp/rp-round6/tiktoken-cache"},
            tree="/work/.mirror/genai-impact+ecologits/repo:",
            # llmcassette needs pytest>=8, and uv takes 9, which its pytest-asyncio 0.23.8
            # (pytest<9) cannot collect under: 8.x, which both take.
            llmc_with=("pytest<9",),
            compile_from=(  # its extras and dev group at the versions of its poetry.lock
                "wrapt>=1.14.1,<2.0.0",
                "pydantic==2.12.3",
                "packaging>=24.2,<25.0",
                "openai==1.109.1",
                "mistralai==1.9.11",
                "anthropic==0.45.2",
                "cohere==5.20.0",
                "huggingface-hub==0.28.1",
                "tiktoken==0.9.0",
                "aiohttp==3.13.2",
                "minijinja==2.12.0",
                "google-genai==1.48.0",
                "litellm==1.79.1",
                "rapidfuzz==3.14.3",
                "opentelemetry-api==1.38.0",
                "opentelemetry-sdk==1.38.0",
                "opentelemetry-exporter-otlp==1.38.0",
                "httpx==0.28.1",
                "pytest==7.4.4",
                "pytest-recording==0.13.4",
                "vcrpy==7.0.0",
                "pytest-dotenv==0.5.2",
                "pytest-asyncio==0.23.8",
                "numpy",
                "toml==0.10.2",
                "setuptools",
            ),
        ),
        Project(
            "simonw-llm-openrouter",
            "llm-openrouter",  # its sdist ships no cassettes
            ("tests",),
            "tests/cassettes",
            tree="/work/.mirror/simonw+llm-openrouter/repo:",
            compile_from=(  # its dependencies and dev group (107aa35, release 0.7)
                "llm>=0.32",
                "httpx",
                "openai>=2.32.0",
                "pytest",
                "pytest-recording",
                "inline-snapshot",
            ),
        ),
        Project(
            "datasette-extract",
            "datasette-extract",  # its sdist ships no cassettes
            ("tests",),
            "tests/cassettes",
            tree="/work/.mirror/datasette+datasette-extract/repo:",
            compile_from=(  # its dependencies and dev group (4456f54, release 0.3a0)
                "datasette==1.0a26",  # later alphas set no ds_csrftoken cookie, which the test reads
                "sqlite-utils",
                "ijson",
                "python-ulid",
                "datasette-llm>=0.1a5",
                "pytest",
                "pytest-asyncio",
                "pytest-recording",
                "llm-echo",
            ),
        ),
    )
}

VCR_ARGS = ("-p", "no:cacheprovider", "-m", "vcr", "--record-mode=none", "--block-network")
LEGACY_SUFFIXES = (".yaml", ".yml", ".json", ".yaml.gz", ".yml.gz", ".json.gz")


def run(command: list[str], **options: object) -> subprocess.CompletedProcess[str]:
    """``subprocess.run`` that fails loudly, with the output of the failed command."""
    done = subprocess.run(command, capture_output=True, text=True, **options)
    if done.returncode != 0:
        sys.exit(f"failed ({done.returncode}): {' '.join(command)}\n{done.stdout}{done.stderr}")
    return done


def prepare(project: Project, work: Path, llmcassette: Path) -> dict[str, Path]:
    """The unpacked sdist and the two venvs (reused when already there; the llmcassette
    one per commit)."""
    root = work / project.name
    root.mkdir(parents=True, exist_ok=True)
    source = root / "src"
    if not source.exists() and project.tree:
        git_dir, folder = project.tree.split(":", 1)
        archive = root / "tree.tar"
        run(["git", "--git-dir", git_dir, "archive", "-o", str(archive), f"HEAD:{folder}"])
        with tarfile.open(archive) as tar:
            tar.extractall(source, filter="data")
    if not source.exists():
        download = root / "download"
        run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
             project.sdist, "-d", str(download), "-q"])  # fmt: skip
        archive = next(download.glob("*.tar.gz"))
        with tarfile.open(archive) as tar:
            tar.extractall(root / "unpacked", filter="data")
        next((root / "unpacked").iterdir()).rename(source)
    requirements = root / "requirements.txt"
    if not requirements.exists() and project.compile_from:
        wanted = root / "requirements.in"
        wanted.write_text("\n".join(project.compile_from) + "\n")
        run(["uv", "pip", "compile", "-q", "--python", PYTHON, str(wanted), "-o",
             str(requirements)], cwd=root)  # fmt: skip
    if not requirements.exists():
        exported = run(["uv", "export", "--project", str(source), "--frozen",
                        "--group", project.group, "--no-hashes", "--no-emit-project",
                        "--no-header", "--no-annotate"],
                       cwd=root)  # fmt: skip
        lines = []
        for line in exported.stdout.splitlines():
            name = re.split(r"[=<>\[; ]", line.strip(), maxsplit=1)[0]
            if not line.strip() or line.startswith(("#", "-e")):
                continue  # the monorepo's editable packages come from `extra`
            lines.append(project.replace.get(name, line))
        requirements.write_text("\n".join([*lines, *project.extra]) + "\n")
    venvs = {}
    for kind in ("base", "llmc"):
        venv = root / (f"venv-{kind}" if kind == "base" else f"venv-{llmcassette.name}")
        venvs[kind] = venv
        if (venv / "bin" / "pytest").exists():
            continue
        env = {**os.environ, "VIRTUAL_ENV": str(venv)}
        run(["uv", "venv", "-q", "-p", PYTHON, str(venv)], cwd=root)
        run(["uv", "pip", "install", "-q", "--no-deps", "-r", str(requirements)], env=env, cwd=root)
        run(["uv", "pip", "install", "-q", "--no-deps", "--no-sources", "-e", str(source)],
            env=env, cwd=root)  # fmt: skip
        if kind == "llmc":
            run(["uv", "pip", "install", "-q", str(llmcassette), *project.llmc_with],
                env=env, cwd=root)  # fmt: skip
    return {"src": source, **venvs}


def convert_copy(project: Project, source: Path, root: Path, venv: Path) -> tuple[Path, int]:
    """A copy of the tree with its cassettes converted and the vcrpy files moved out."""
    copy = root / "converted"
    moved = root / "moved-away"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.rmtree(moved, ignore_errors=True)
    shutil.copytree(source, copy)
    files = sorted(
        p for p in (copy / project.cassettes).rglob("*") if p.name.endswith(LEGACY_SUFFIXES)
    )
    files = [p for p in files if {"cassettes", "_vcr"} & set(p.relative_to(copy).parts)]
    files = [
        p
        for p in files
        if not any(fnmatch.fnmatch(str(p.relative_to(copy)), g) for g in project.not_cassettes)
    ]
    run([str(venv / "bin" / "llmcassette"), "convert", *map(str, files)], cwd=copy)
    for file in files:
        target = moved / file.relative_to(copy)
        target.parent.mkdir(parents=True, exist_ok=True)
        file.rename(target)
    for patch in project.patches:
        changed = 0
        for path in copy.glob(patch.glob):
            text = path.read_text()
            new, count = re.subn(patch.pattern, patch.new, text)
            changed += count
            path.write_text(new)
        if not changed:
            sys.exit(f"{project.name}: nothing in {patch.glob} matches {patch.pattern!r}")
    return copy, len(files)


def pytest_run(venv: Path, tree: Path, project: Project, extra: tuple[str, ...], out: Path) -> dict:
    """One run: outcome per test, wall and CPU seconds, the output."""
    junit = out.with_suffix(".xml")
    if venv.name != "venv-base":
        extra = (*project.llmc_args, *extra)
    command = [str(venv / "bin" / "pytest"), *VCR_ARGS, *project.pytest_args, *extra,
               f"--junitxml={junit}", *project.tests]  # fmt: skip
    env = {**os.environ, **project.env}
    env.pop("VIRTUAL_ENV", None)
    if project.pythonpath_tree:
        env["PYTHONPATH"] = str(tree)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    out.write_text(done.stdout + done.stderr)
    found, messages = outcomes(junit)
    return {"outcomes": found, "messages": messages, "wall": wall, "cpu": cpu,
            "output": done.stdout}  # fmt: skip


def outcomes(junit: Path) -> tuple[dict[str, str], dict[str, str]]:
    """passed / failed / error / skipped per test id, and the failure text of each failed
    one, from a junit XML file."""
    found: dict[str, str] = {}
    messages: dict[str, str] = {}
    for case in ET.parse(junit).iter("testcase"):
        test = f"{case.get('classname')}::{case.get('name')}"
        found[test] = "passed"
        for child in case:
            if child.tag in ("error", "failure", "skipped"):
                found[test] = {"failure": "failed"}.get(child.tag, child.tag)
                messages[test] = f"{child.get('message', '')}\n{child.text or ''}"
                break
    return found, messages


def junit_id(nodeid: str) -> str:
    """``tests/a.py::Class::test`` as junit names it: ``tests.a.Class::test``."""
    *scope, name = nodeid.split("::")
    return ".".join([scope[0].removesuffix(".py").replace("/", "."), *scope[1:]]) + "::" + name


def counts(result: dict) -> str:
    values = list(result["outcomes"].values())
    return "/".join(str(values.count(kind)) for kind in ("passed", "failed", "skipped", "error"))


def drift_summary(output: str) -> list[str]:
    """The lines of llmcassette's end-of-run drift summary."""
    lines = output.splitlines()
    for index, line in enumerate(lines):
        if "llmcassette: legacy cassette drift" in line and line.startswith("="):
            summary = []
            for rest in lines[index + 1 :]:
                if rest.startswith("=") or rest.startswith("re-record"):
                    break
                summary.append(rest)
            return summary
    return []


def drift_values(output: str) -> list[str]:
    """The distinct LC304 warnings (file, path, both values) of the warnings summary."""
    found = re.findall(r"LegacyCassetteDriftWarning: (.*?: legacy cassette drift: .*)", output)
    return sorted(set(found))


def measure(project: Project, work: Path, llmcassette: Path, reps: int) -> dict:
    """Every run of one project, and what they say."""
    paths = prepare(project, work, llmcassette)
    root = work / project.name
    logs = root / "logs"
    logs.mkdir(exist_ok=True)
    converted, files = convert_copy(project, paths["src"], root, paths["llmc"])
    runs: dict[str, list[dict]] = {"baseline": [], "installed": [], "converted": []}
    for rep in range(reps):  # interleaved, so the machine's drift hits each alike
        for kind, venv, tree in (
            ("baseline", paths["base"], paths["src"]),
            ("installed", paths["llmc"], paths["src"]),
            ("converted", paths["llmc"], converted),
        ):
            runs[kind].append(pytest_run(venv, tree, project, (), logs / f"{kind}-{rep}.txt"))
    control = pytest_run(paths["llmc"], paths["src"], project, ("-p", "no:llmcassette"),
                         logs / "control.txt")  # fmt: skip
    strict = pytest_run(paths["llmc"], paths["src"], project, ("--llmcassette-drift=strict",),
                        logs / "strict.txt")  # fmt: skip
    best = {kind: min(results, key=lambda r: r["wall"]) for kind, results in runs.items()}
    baseline = best["baseline"]["outcomes"]
    summary = drift_summary(best["installed"]["output"])
    drifted = {junit_id(line.strip().split(": ", 1)[0]) for line in summary[1:]}
    strict_failed = sorted(t for t, o in strict["outcomes"].items() if o in ("failed", "error"))
    newly_failed = [t for t in strict_failed if baseline.get(t) == "passed"]
    return {
        "project": project.name,
        "sdist": project.sdist,
        "cassette_files": files,
        "patched": [f"{p.glob}: {p.why}" for p in project.patches],
        "counts": {kind: counts(result) for kind, result in best.items()}
        | {"control": counts(control), "strict": counts(strict)},
        "wall": {kind: min(r["wall"] for r in results) for kind, results in runs.items()},
        "cpu": {kind: min(r["cpu"] for r in results) for kind, results in runs.items()},
        "differ": {
            kind: sorted(
                f"{test}: {baseline.get(test)} -> {outcome}"
                for test, outcome in best[kind]["outcomes"].items()
                if outcome != baseline.get(test)
            )
            for kind in ("installed", "converted")
        }
        | {
            "control": sorted(
                f"{test}: {baseline.get(test)} -> {outcome}"
                for test, outcome in control["outcomes"].items()
                if outcome != baseline.get(test)
            )
        },
        "drift_summary": summary,
        "drift_values": drift_values(best["installed"]["output"]),
        "drifted_tests": len(drifted),
        # Strict must fail each drifted test, and nothing else that passed with warn.
        "drifted_passing_strict": sorted(drifted - set(strict_failed)),
        "strict_failing_undrifted": sorted(set(newly_failed) - drifted),
        "strict_newly_failed": newly_failed,
        # Each test that fails under strict only: does the output name its drifted path?
        "strict_without_path": [
            test
            for test in newly_failed
            if not re.search(r"body\.\w|#\d+: [A-Z]+ ", strict["messages"].get(test, ""))
        ],
    }


def table(results: list[dict]) -> str:
    """The markdown table of counts (passed/failed/skipped/error) and times."""
    rows = [
        "| project | baseline | installed | converted | control | strict | drifted tests | "
        "wall s: baseline / installed / converted | ratio | CPU s: baseline / installed / "
        "converted | ratio |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        c, w, u = r["counts"], r["wall"], r["cpu"]
        rows.append(
            f"| {r['project']} | {c['baseline']} | {c['installed']} | {c['converted']} | "
            f"{c['control']} | {c['strict']} | {r['drifted_tests']} | "
            f"{w['baseline']:.1f} / {w['installed']:.1f} / {w['converted']:.1f} | "
            f"{w['installed'] / w['baseline']:.2f}x | "
            f"{u['baseline']:.1f} / {u['installed']:.1f} / {u['converted']:.1f} | "
            f"{u['installed'] / u['baseline']:.2f}x |"
        )
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("projects", nargs="*", help=f"some of: {', '.join(PROJECTS)}")
    parser.add_argument("--work", type=Path, default=Path("/tmp/llmcassette-real-projects"))
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--python", default=sys.executable, help="the venvs' interpreter")
    parser.add_argument("--json", type=Path, help="write every result here")
    args = parser.parse_args()
    unknown = set(args.projects) - set(PROJECTS)
    if unknown:
        parser.error(f"unknown project(s): {', '.join(sorted(unknown))}")
    args.work.mkdir(parents=True, exist_ok=True)
    global PYTHON
    PYTHON = args.python
    head = run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"]).stdout.strip()
    llmcassette = args.work / f"llmcassette-{head}"
    if not llmcassette.exists():
        archive = run(["git", "-C", str(REPO), "archive", "--format=tar.gz",
                       "-o", str(args.work / "head.tar.gz"), "HEAD"])  # fmt: skip
        del archive
        llmcassette.mkdir()
        with tarfile.open(args.work / "head.tar.gz") as tar:
            tar.extractall(llmcassette, filter="data")
    results = []
    for name in args.projects or list(PROJECTS):
        print(f"{name} ...", file=sys.stderr, flush=True)
        result = measure(PROJECTS[name], args.work, llmcassette, args.reps)
        results.append(result)
        print(json.dumps(result, indent=1), file=sys.stderr, flush=True)
    print(f"llmcassette {head}, best of {args.reps}, counts passed/failed/skipped/error\n")
    print(table(results))
    if args.json:
        args.json.write_text(json.dumps({"head": head, "results": results}, indent=1))


if __name__ == "__main__":
    main()
