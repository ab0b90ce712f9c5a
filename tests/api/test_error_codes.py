"""Every error code is in the catalogue of docs/errors.md, and every code there exists.

The codes are those of the ``LlmCassetteError`` classes (each defines its own), of the
``LlmCassetteWarning`` classes that are no milder form of an error (LC304), and the findings
of the ``llmcassette`` commands (``llmcassette.cli.output.CODES``).
"""

from __future__ import annotations

import importlib
import pkgutil
import re
import sys
from pathlib import Path

import llmcassette
from llmcassette.cli import output
from llmcassette.errors import FIELDS, LlmCassetteError, LlmCassetteWarning, docs_anchor

CATALOGUE = Path(__file__).resolve().parents[2] / "docs" / "errors.md"
CODE = re.compile(r"LC\d{3} [a-z][a-z-]*")


def error_classes(base: type = LlmCassetteError) -> list[type]:
    """``base`` and its subclasses in every module of the package."""
    for info in pkgutil.walk_packages(llmcassette.__path__, "llmcassette."):
        if info.name.rsplit(".", 1)[-1] != "__main__":  # would run a command
            importlib.import_module(info.name)
    found, pending = [], [base]
    while pending:
        cls = pending.pop()
        # Only the class its module holds now: an in-process pytester run drops the modules
        # it imported, and one imported again makes a second class of the same name.
        current = getattr(sys.modules.get(cls.__module__), cls.__name__, None) is cls
        if cls.__module__.startswith("llmcassette") and current:
            found.append(cls)
        pending.extend(cls.__subclasses__())
    return found


def code_owners() -> dict[str, str]:
    """Each code, with the class or CLI constant that has it."""
    owners: dict[str, str] = {}
    for cls in error_classes():
        assert "code" in vars(cls), f"{cls.__qualname__} has no code of its own"
        assert cls.code not in owners, f"{cls.code} of {cls.__qualname__} and {owners[cls.code]}"
        owners[cls.code] = cls.__qualname__
    errors = dict(owners)
    for cls in error_classes(LlmCassetteWarning)[1:]:
        # A warning with an error's code is its milder form; any other code is its own.
        if cls.code not in errors:
            assert cls.code not in owners, (
                f"{cls.code} of {cls.__qualname__} and {owners[cls.code]}"
            )
            owners[cls.code] = cls.__qualname__
    for code in output.CODES:
        assert code not in owners, f"{code} of llmcassette.cli.output and {owners[code]}"
        owners[code] = "llmcassette.cli.output"
    return owners


def test_codes_are_well_formed_and_numbers_unique() -> None:
    codes = code_owners()
    assert all(CODE.fullmatch(code) for code in codes), sorted(codes)
    numbers = [code.split()[0] for code in codes]
    assert len(numbers) == len(set(numbers))


def test_the_catalogue_lists_exactly_the_codes_that_exist() -> None:
    documented = re.findall(rf"^### ({CODE.pattern})$", CATALOGUE.read_text(), re.M)
    assert len(documented) == len(set(documented)), "a code is documented twice"
    codes = set(code_owners())
    assert sorted(codes - set(documented)) == [], "codes missing from docs/errors.md"
    assert sorted(set(documented) - codes) == [], "docs/errors.md lists codes that do not exist"


def test_each_entry_has_an_example_and_a_fix() -> None:
    text = CATALOGUE.read_text()
    for code in code_owners():
        entry = text.split(f"### {code}\n", 1)[1].split("\n### ", 1)[0]
        assert "Fix:" in entry or code.startswith("LC000"), code
        assert "```text" in entry or code.startswith(("LC000", "LC301")), code


def test_to_dict_has_the_documented_fields() -> None:
    error = llmcassette.CassetteFormatError("c.jsonl", 3, "response line: no status", "fix it")
    assert error.to_dict() == {
        "code": "LC101 cassette-format",
        "message": str(error),
        "file": "c.jsonl",
        "line": 3,
        "path": None,
        "expected": None,
        "received": None,
        "how_to_fix": "fix it",
        "docs": docs_anchor("LC101 cassette-format"),
    }
    version = llmcassette.CassetteVersionError("c.jsonl", 2, 1, None).to_dict()
    assert (version["code"], version["expected"], version["received"]) == (
        "LC102 cassette-version",
        "<= 1",
        2,
    )
    leak = llmcassette.SecretLeakError("c.jsonl", 2, "headers.authorization", "openai-api-key")
    assert set(leak.to_dict()) == {"code", "message", "docs", "rule", *FIELDS}
    assert leak.to_dict()["path"] == "headers.authorization"


def test_a_mismatch_has_its_code() -> None:
    assert llmcassette.CassetteMismatch.code == "LC301 cassette-mismatch"
