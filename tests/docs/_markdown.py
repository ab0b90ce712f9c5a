"""Fenced code blocks of a Markdown page, with the `docs-test` directive that precedes each.

A directive is an HTML comment on the last non-blank line before a fence, for example
``<!-- docs-test: skip -->`` or ``<!-- docs-test: file=conftest.py -->``. It is invisible
on the rendered site and tells the example runner what to do with the block.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
_DIRECTIVE = re.compile(r"^\s*<!--\s*docs-test:(?P<body>.*?)-->\s*$")

#: Directive words without a value, and those that take one (``name=value``).
FLAGS = frozenset({"skip", "output", "run", "raises", "figure"})
VALUED = frozenset({"file", "setup", "needs", "error", "latency"})


class MarkdownError(ValueError):
    """A page the runner cannot read: an unclosed fence or a malformed directive."""


@dataclass(frozen=True)
class Block:
    """One fenced code block."""

    #: The page as shown in messages, e.g. ``docs/getting-started.md``.
    page: str
    #: 1-based line of the opening fence.
    line: int
    #: The first word of the info string, lower-cased (``python``, ``console``, ...).
    lang: str
    #: The block's text, its indentation (inside an admonition) removed.
    code: str
    #: The directive before the block: flags map to ``True``, ``file=x`` to ``"x"``.
    directive: dict[str, str | bool] = field(default_factory=dict)

    @property
    def is_sample(self) -> bool:
        """Whether the block shows text a program prints (so it must be checked).

        A ``text``, ``console`` or unlabelled block, or a shell block whose lines are not
        all commands (``$ cmd`` followed by what it printed).
        """
        if self.lang in ("text", "console", "", "shell-session", "output"):
            return True
        lines = [line for line in self.code.splitlines() if line.strip()]
        return (
            self.lang in ("sh", "bash", "shell")
            and any(line.startswith("$ ") for line in lines)
            and not all(line.startswith(("$ ", "#")) for line in lines)
        )

    @property
    def where(self) -> str:
        """``page:line`` of the opening fence, for messages."""
        return f"{self.page}:{self.line}"


def parse_directive(text: str, where: str) -> dict[str, str | bool]:
    """The words of a ``docs-test:`` comment body, checked against the known ones."""
    words: dict[str, str | bool] = {}
    for word in text.split():
        name, sep, value = word.partition("=")
        if sep and name in VALUED and value:
            words[name] = value
        elif not sep and name in FLAGS:
            words[name] = True
        else:
            known = ", ".join(sorted(FLAGS) + [f"{v}=PATH" for v in sorted(VALUED)])
            raise MarkdownError(f"{where}: unknown docs-test directive {word!r} (known: {known})")
    if not words:
        raise MarkdownError(f"{where}: empty docs-test directive")
    return words


def _dedent(line: str, indent: str) -> str:
    return line[len(indent) :] if line.startswith(indent) else line.lstrip(" \t")


def blocks(text: str, page: str) -> list[Block]:
    """Every fenced block of a page, in order, with its directive."""
    lines = text.splitlines()
    found: list[Block] = []
    pending: tuple[int, dict[str, str | bool]] | None = None
    index = 0
    while index < len(lines):
        line = lines[index]
        directive = _DIRECTIVE.match(line)
        fence = _FENCE.match(line)
        if directive:
            if pending is not None:
                raise MarkdownError(
                    f"{page}:{pending[0]}: docs-test directive not followed by a code block"
                )
            pending = (index + 1, parse_directive(directive["body"], f"{page}:{index + 1}"))
        elif fence:
            opening, indent = fence["fence"], fence["indent"]
            body: list[str] = []
            end = index + 1
            while end < len(lines):
                closing = _FENCE.match(lines[end])
                if (
                    closing
                    and closing["fence"][0] == opening[0]
                    and len(closing["fence"]) >= len(opening)
                    and not closing["info"].strip()
                ):
                    break
                body.append(_dedent(lines[end], indent))
                end += 1
            else:
                raise MarkdownError(f"{page}:{index + 1}: code block is never closed")
            info = fence["info"].strip().split()
            found.append(
                Block(
                    page=page,
                    line=index + 1,
                    lang=info[0].lower() if info else "",
                    code="\n".join(body) + "\n",
                    directive=pending[1] if pending else {},
                )
            )
            pending = None
            index = end
        elif line.strip() and pending is not None:
            raise MarkdownError(
                f"{page}:{pending[0]}: docs-test directive not followed by a code block"
            )
        index += 1
    if pending is not None:
        raise MarkdownError(
            f"{page}:{pending[0]}: docs-test directive not followed by a code block"
        )
    return found


def read_blocks(path: Path, page: str) -> list[Block]:
    """`blocks` of a file."""
    return blocks(path.read_text(encoding="utf-8"), page)
