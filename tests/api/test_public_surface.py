"""Exceptions, warnings and option types are part of the API: one tree, all exported."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import get_args

import pytest
import vcr

import llmcassette
from llmcassette import errors
from llmcassette._vcr import install, stubs
from llmcassette.config import EXPIRED_ACTIONS, ExpiredAction
from llmcassette.matching.normalize import VOLATILE_PRESETS, MatchOptions, VolatileShape

# Exception classes outside the tree, in modules other people are rewriting right now
# (llmcassette.cassette, the vcrpy compatibility check); drop a name once its class derives
# from LlmCassetteError.
NOT_YET_IN_THE_TREE = {
    "llmcassette.cassette.jsontext._NoConstants",
    "llmcassette.cassette.migrations.MissingMigrationError",
}
# Internal exceptions that never reach a caller: the event-stream codec, which the local
# provider shares and which therefore imports nothing of the package, raises a ValueError
# that the cassette reader turns into a CassetteFormatError naming the line, and that
# integrity and the recorder catch (a frame kept as base64). A body past the decoded-size
# limit (DecodedTooLarge) is left as stored, or refused as a CassetteFormatError naming its
# line; a YAML alias bomb (AliasBombError) is a CassetteFormatError naming the file. JSON
# nested past the depth llmcassette reads (TooDeep, a ValueError as for text that is no
# JSON) is read as text, or a too-deep-json finding of the scan (a SecretLeakError).
INTERNAL = {
    "llmcassette._eventstream.EventStreamError",
    "llmcassette.cassette.compression.DecodedTooLarge",
    "llmcassette.cassette.jsontext.TooDeep",
    "llmcassette.cassette.vcrpy_files.AliasBombError",
}


def modules() -> Iterator[ModuleType]:
    """Every module of the package, imported (``__main__`` modules would run a command)."""
    yield llmcassette
    for info in pkgutil.walk_packages(llmcassette.__path__, "llmcassette."):
        if info.name.rsplit(".", 1)[-1] != "__main__":
            yield importlib.import_module(info.name)


def defined_classes() -> list[type]:
    """The classes defined at the top of a module of the package (not re-exports)."""
    return [
        cls
        for module in modules()
        for _, cls in inspect.getmembers(module, inspect.isclass)
        if cls.__module__ == module.__name__
    ]


def qualified(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def exported_names() -> set[str]:
    """Every name some module of the package lists in its ``__all__``."""
    return {name for module in modules() for name in getattr(module, "__all__", ())}


def test_every_warning_derives_from_llmcassette_warning() -> None:
    outside = [
        qualified(cls)
        for cls in defined_classes()
        if issubclass(cls, Warning) and not issubclass(cls, errors.LlmCassetteWarning)
    ]
    assert outside == []


def test_every_exception_derives_from_llmcassette_error() -> None:
    outside = {
        qualified(cls)
        for cls in defined_classes()
        if issubclass(cls, BaseException)
        and not issubclass(cls, Warning)
        and not issubclass(cls, errors.LlmCassetteError)
    }
    assert outside - NOT_YET_IN_THE_TREE - INTERNAL == set()


def test_the_walk_finds_the_classes_it_should() -> None:
    found = {qualified(cls) for cls in defined_classes()}
    assert "llmcassette._vcr.mismatch.CassetteMismatch" in found
    assert "llmcassette.faults.model.FieldError" in found
    assert "llmcassette.errors.ConfigError" in found


def public_in_errors() -> list[type]:
    return [
        cls
        for _, cls in inspect.getmembers(errors, inspect.isclass)
        if cls.__module__ == errors.__name__ and issubclass(cls, BaseException)
    ]


def test_every_exception_and_warning_of_errors_py_is_exported() -> None:
    names = {cls.__name__ for cls in public_in_errors()}
    assert {"OverridesError", "FaultError", "PlaceholderError", "ConfigError"} <= names
    assert {"LlmCassetteError", "LlmCassetteWarning"} <= names
    assert names - set(llmcassette.__all__) == set()
    for cls in public_in_errors():
        assert getattr(llmcassette, cls.__name__) is cls


def test_an_exception_outside_errors_py_is_private_unless_it_is_cassette_mismatch() -> None:
    exported = exported_names()
    public_elsewhere = [
        qualified(cls)
        for cls in defined_classes()
        if issubclass(cls, BaseException)
        and cls.__module__ != errors.__name__
        and (cls.__name__ in exported and not cls.__name__.startswith("_"))
    ]
    assert public_elsewhere == ["llmcassette._vcr.mismatch.CassetteMismatch"]


def test_every_name_in_all_is_importable_from_llmcassette() -> None:
    for name in llmcassette.__all__:
        assert getattr(llmcassette, name) is not None, name
    assert llmcassette.CassetteMismatch.__module__ == "llmcassette._vcr.mismatch"
    assert issubclass(llmcassette.CassetteMismatch, llmcassette.LlmCassetteError)
    assert issubclass(
        llmcassette.CassetteMismatch, vcr.errors.CannotOverwriteExistingCassetteException
    )
    assert callable(llmcassette.check_unused)


def test_an_unknown_attribute_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'RedactionConfigError'"):
        _ = llmcassette.RedactionConfigError  # type: ignore[attr-defined]


def test_errors_py_imports_nothing_from_the_package() -> None:
    assert errors.__file__ is not None
    tree = ast.parse(Path(errors.__file__).read_text(encoding="utf-8"))
    imported = []
    for node in ast.walk(tree):  # imports inside functions count too
        if isinstance(node, ast.Import):
            imported += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            imported.append("." * node.level + (node.module or ""))
    assert [name for name in imported if name.startswith((".", "llmcassette"))] == []


def test_option_names_and_literal_types_agree() -> None:
    assert get_args(install.IncompleteStreams) == stubs.INCOMPLETE_STREAM_POLICIES
    assert get_args(ExpiredAction) == EXPIRED_ACTIONS
    assert set(get_args(VolatileShape)) == set(VOLATILE_PRESETS)
    assert set(get_args(install.RecordModeName)) == {mode.value for mode in vcr.mode}
    assert set(MatchOptions.__annotations__) == {
        "ignore",
        "volatile",
        "hosts",
        "normalizers",
        "sdk_defaults",
    }


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty project as the working directory, so no pyproject.toml settings apply."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"match": {"ignor": ["$.id"]}}, r"unknown match option\(s\) \['ignor'\]"),
        ({"match": "ignore"}, "match must be a MatchConfig or a dict"),
        ({"match": {"volatile": ["uid"]}}, r"unknown volatile shape\(s\) \['uid'\]"),
        ({"match": {"ignore": ["$.a[x"]}}, "cannot read the JSON path"),
        ({"match": {"hosts": {"localhost:4000": "https://x"}}}, "must be an origin"),
        ({"redaction": {"header": ["x-key"]}}, "unknown redaction setting 'header'"),
        ({"redaction": {"headers": "x-key"}}, "'headers' must be a list of strings"),
        ({"redaction": {"fail_closed": "no"}}, "'fail_closed' must be true or false"),
        ({"max_age": "a month"}, "max_age 'a month' is not a duration"),
        ({"max_age": 0}, "max_age must be more than zero"),
        ({"max_age": True}, "max_age must be a duration"),
        ({"expired": "never"}, "expired='never' is not one of"),
        ({"incomplete_streams": "maybe"}, "incomplete_streams must be one of"),
        ({"pace": "fast"}, "pace must be 'instant', 'recorded' or a number"),
        ({"record_mode": "sometimes"}, "record_mode='sometimes' is not one of"),
    ],
)
def test_a_bad_option_is_a_config_error(
    project: Path, options: dict[str, object], message: str
) -> None:
    with pytest.raises(llmcassette.ConfigError, match=message) as caught:
        llmcassette.use_cassette(project / "c.jsonl", **options)  # type: ignore[call-overload]
    assert isinstance(caught.value, ValueError)  # what `except ValueError` used to catch


def test_a_bad_option_leaves_the_vcr_as_it_was(project: Path) -> None:
    my_vcr = vcr.VCR()
    before = (my_vcr.serializer, my_vcr.persister, my_vcr.match_on, my_vcr._custom_patches)
    with pytest.raises(llmcassette.ConfigError):
        llmcassette.configure(my_vcr, match={"hosts": {"a": "b"}})
    with pytest.raises(llmcassette.ConfigError):
        llmcassette.configure(my_vcr, max_age="soon")
    after = (my_vcr.serializer, my_vcr.persister, my_vcr.match_on, my_vcr._custom_patches)
    assert after == before
    assert my_vcr.before_record_request is None


def test_bad_overrides_are_an_overrides_error(project: Path) -> None:
    with pytest.raises(llmcassette.OverridesError, match="the `overrides` option"):
        llmcassette.use_cassette(project / "c.jsonl", overrides={"entries": [{"at": -1}]})


def test_good_options_are_accepted(project: Path) -> None:
    import datetime

    context = llmcassette.use_cassette(
        project / "c.jsonl",
        record_mode="none",
        pace=0.5,
        redaction={"headers": ["x-key"]},
        incomplete_streams="error",
        match={"ignore": ["$.id"], "volatile": ["uuid"], "hosts": {"http://a:1": "https://b"}},
        max_age=datetime.timedelta(days=3),
        expired="fail",
    )
    assert hasattr(context, "__enter__")
    assert llmcassette.configure(vcr.VCR(), record_mode="rewrite", max_age=60).serializer == (
        "jsonl"
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[tool.llmcassette]\nmode = [\n", "pyproject.toml: not valid TOML"),
        ("[tool.llmcassette.redaction]\nbogus = 1\n", "pyproject.toml: unknown redaction setting"),
        ("[tool.llmcassette]\nredaction = 1\n", "pyproject.toml: [tool.llmcassette.redaction]"),
    ],
)
def test_a_pyproject_error_names_it_as_pytest_names_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, message: str
) -> None:
    """A config file from a pull request is read from the working directory: the message
    names it relative to it, not by a path of the reader's machine."""
    (tmp_path / "pyproject.toml").write_text(text)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(llmcassette.ConfigError) as caught:
        llmcassette.use_cassette(tmp_path / "c.jsonl")
    assert str(caught.value).startswith(message)
    assert str(tmp_path) not in str(caught.value)
