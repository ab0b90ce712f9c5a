"""The placeholders redaction leaves in a cassette's text, and their numbers.

A credential becomes ``<REDACTED:kind>``; another credential of the same kind in the same
cassette ``<REDACTED:kind:2>``, and so on, in the order the redactor met them
(``docs/redaction.md``). The numbers only tell values apart: which placeholder stands for
which value is all they mean. So a re-recording may take the numbers of the file it replaces
(``renumbering``), and the lines of unchanged interactions stay as they were even when
concurrent calls were met in another order.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

#: What a placeholder looks like; nothing inside one is ever matched by a rule.
PLACEHOLDER_PATTERN = r"<REDACTED:[A-Za-z0-9_.\-]+(?::[0-9]+)?>"
_PARTS = re.compile(r"<REDACTED:([A-Za-z0-9_.\-]+)(?::([0-9]+))?>")


def unnumbered(text: str) -> str:
    """``text`` with the number of each placeholder left out."""
    return _PARTS.sub(r"<REDACTED:\1>", text) if "<REDACTED:" in text else text


def renumbering(
    pairs: Iterable[tuple[str, str]], texts: Iterable[str]
) -> Callable[[str], str] | None:
    """What renames the placeholders of new ``texts`` after old ones, or None for no change.

    ``pairs`` are (new text, old text) that are the same but for placeholder numbers: each
    new placeholder takes the name of the old one in its place. The other placeholders of
    ``texts`` keep their numbers where no renamed one took them, else take the lowest free
    ones. The renaming is one for one, so values that shared a placeholder still do and
    others still do not; when the pairs disagree (one placeholder in the place of two),
    nothing is renamed.
    """
    renamed: dict[str, str] = {}
    taken: dict[str, str] = {}  # old name -> the new name renamed to it
    for new, old in pairs:
        if "<REDACTED:" not in new:
            continue
        names = [found.group(0) for found in _PARTS.finditer(new)]
        old_names = [found.group(0) for found in _PARTS.finditer(old)]
        if len(names) != len(old_names):
            return None
        for name, old_name in zip(names, old_names, strict=True):
            if renamed.setdefault(name, old_name) != old_name:
                return None
            if taken.setdefault(old_name, name) != name:
                return None
    if all(name == old_name for name, old_name in renamed.items()):
        return None
    numbers: dict[str, set[int]] = {}
    for old_name in taken:
        kind, number = _kind_and_number(old_name)
        numbers.setdefault(kind, set()).add(number)
    for text in texts:
        if "<REDACTED:" not in text:
            continue
        for found in _PARTS.finditer(text):
            name = found.group(0)
            if name in renamed:
                continue
            kind, number = _kind_and_number(name)
            used = numbers.setdefault(kind, set())
            if name in taken or number in used:
                number = next(n for n in range(1, len(used) + 2) if n not in used)
            used.add(number)
            renamed[name] = _name(kind, number)

    def rename(text: str) -> str:
        if "<REDACTED:" not in text:
            return text
        return _PARTS.sub(lambda found: renamed.get(found.group(0), found.group(0)), text)

    return rename


def _kind_and_number(name: str) -> tuple[str, int]:
    found = _PARTS.fullmatch(name)
    assert found is not None  # only names _PARTS found come here
    return found.group(1), int(found.group(2) or 1)


def _name(kind: str, number: int) -> str:
    return f"<REDACTED:{kind}>" if number == 1 else f"<REDACTED:{kind}:{number}>"
