"""Which regular expressions may backtrack without end: the shapes a placeholder refuses.

Python's ``re`` backtracks, has no timeout and holds the GIL while it matches, so a
``{{fromRequest:(a+)+$}}`` in a cassette from a stranger could hang a replay on a request
of forty characters. Rather than run patterns under a clock (a thread cannot stop ``re``;
a process per placeholder is slow and fragile), a pattern is refused before it runs when its
structure lets the engine try exponentially (or, pattern length in the exponent, polynomially)
many ways through the same text:

- a repeated group holding a quantifier of its own (``(a+)+``, ``(\\w+\\s?)*``);
- a repeated alternation whose branches may start with the same character, or match nothing
  (``(a|ab)+``, ``(\\w|\\d)*``);
- two quantifiers of variable length in sequence that can take the same characters, with
  nothing between them that the first cannot take (``.*.*=``, ``(.*) (.*)x``, ``\\w+\\d+``).

What is left backtracks at most quadratically in the text searched, and only a pattern with
a long repeat that a failed search may enter from many places in the same stretch of text
does so (``quadratic_repeat``): ``.*!``, ``\\s*x``, ``(\\d+)-(\\d+)``. Such a pattern is
refused only on text with long runs of what that repeat takes (``quadratic_runs``,
``faults/placeholders.py``). The analysis works on
the tree ``re``'s own parser builds; character classes are compared on a sample of
characters (ASCII, Latin-1 and beyond, and every character the pattern names), which is
exact for the classes placeholders use and errs towards refusing otherwise.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

# re's parser: re._parser from Python 3.11, sre_parse before (the same tree).
_parser: Any = importlib.import_module("re._parser" if hasattr(re, "_parser") else "sre_parse")
_compiler: Any = importlib.import_module(
    "re._compiler" if hasattr(re, "_compiler") else "sre_compile"
)

_REPEATS = {"MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"}
_SAMPLE = ([chr(c) for c in range(0x300)] + list("\u00a0\u2003\u3000\u0663\u0967\u4e2d\u0416")) + [
    "\U0001f600"
]


@dataclass(frozen=True)
class _Shape:
    """What a piece of a pattern can consume: its characters, whether it can match nothing,
    whether its length varies (a quantifier inside it) and where the first one is."""

    chars: frozenset[str]
    firsts: frozenset[str]
    nullable: bool
    variable: bool


def backtracking_problem(pattern: str) -> str | None:
    """Why ``pattern`` may backtrack catastrophically, naming the part at fault, or None."""
    try:
        tree = _parser.parse(pattern)
    except re.error:
        return None  # re.compile reports it
    flags = int(tree.state.flags)
    sample = _SAMPLE + sorted(set(pattern) - set(_SAMPLE))
    checker = _Checker(flags, sample)
    try:
        checker.sequence(list(tree))
    except RecursionError:  # the walk goes down two calls a group, re's parser one
        return "its groups nest too deeply to be checked"
    return checker.problem


# A repeat that may take more characters than this is long: its cost is the text's.
_LONG = 100


def quadratic_repeat(pattern: str) -> bool:
    """Whether a failed search for ``pattern`` may take time quadratic in the text's length.

    ``re.search`` tries each start in turn. A long repeat that takes a run of text and is
    followed by something that can fail costs up to the rest of the run at each start that
    reaches it; when what comes before the repeat can itself be made of characters the
    repeat takes (or of nothing: ``.*!``, ``\\s*x``, ``a\\w+-``, ``model (.*)x``), every
    character of a run may be such a start. When it must hold a character the repeat cannot
    take (``"id": "([^"]*)"``, ``/(\\w+)$``), the runs that different starts reach do not
    overlap and the search is linear.
    """
    try:
        tree = _parser.parse(pattern)
    except re.error:
        return False
    flags = int(tree.state.flags)
    checker = _Checker(flags, _SAMPLE + sorted(set(pattern) - set(_SAMPLE)))
    try:
        return any(
            _rerun_at_each_character(checker, repeat, before, after)
            for repeat, before, after in _repeats(list(tree), [], [])
        )
    except RecursionError:  # backtracking_problem refuses such a pattern
        return True


def quadratic_runs(pattern: str, texts: list[str]) -> list[int]:
    """The lengths of the runs of ``texts`` where a failed search for ``pattern`` may start
    over at every character: stretches of the characters a repeat ``quadratic_repeat``
    finds can take. The search costs up to the sum of their squares; a long prompt of words
    holds no long run for ``(\\d+)-(\\d+)``, a line of base64 is one run for ``.*!``.
    Empty for a pattern whose search is linear."""
    try:
        tree = _parser.parse(pattern)
    except re.error:
        return []
    present: set[str] = set().union(*map(set, texts))
    # The texts' own characters join the sample: the runs are exact, not sampled.
    checker = _Checker(int(tree.state.flags), sorted(set(_SAMPLE) | present | set(pattern)))
    runs: list[int] = []
    try:
        for repeat, before, after in _repeats(list(tree), [], []):
            if not _rerun_at_each_character(checker, repeat, before, after):
                continue
            taken = checker.sequence(list(repeat[2])).chars & present
            if taken:
                run = re.compile("[" + "".join(map(re.escape, sorted(taken))) + "]+")
                runs.extend(m.end() - m.start() for text in texts for m in run.finditer(text))
    except RecursionError:  # backtracking_problem refuses such a pattern
        return [sum(map(len, texts))]
    return runs


def _repeats(
    items: list[Any], before: list[Any], after: list[Any]
) -> Iterator[tuple[Any, list[Any], list[Any]]]:
    # Each repeat with what a match passes before reaching it and after leaving it.
    for index, (op, av) in enumerate(items):
        name = str(op)
        ahead = before + items[:index]
        behind = items[index + 1 :] + after
        if name in _REPEATS:
            yield av, ahead, behind
            yield from _repeats(list(av[2]), ahead, behind)
        elif name == "SUBPATTERN":
            yield from _repeats(list(av[-1]), ahead, behind)
        elif name == "ATOMIC_GROUP":
            yield from _repeats(list(av), ahead, behind)
        elif name == "BRANCH":
            for branch in av[1]:
                yield from _repeats(list(branch), ahead, behind)
        elif name in {"ASSERT", "ASSERT_NOT"}:  # a lookaround ends where its body does
            yield from _repeats(list(av[1]), ahead, [])


def _rerun_at_each_character(
    checker: _Checker, repeat: Any, before: list[Any], after: list[Any]
) -> bool:
    _low, high, body = repeat
    if high <= _LONG or all(_cannot_fail(op, av) for op, av in after):
        return False  # short, or a match once it is reached: the search goes on past it
    taken = checker.sequence(list(body)).chars
    # Errs towards "yes": an item counts as made of such characters if it may be empty or
    # holds one of them.
    return all(
        shape.nullable or bool(shape.chars & taken)
        for shape in (checker.item(op, av) for op, av in before)
    )


def _cannot_fail(op: Any, av: Any) -> bool:
    name = str(op)
    if name in _REPEATS:  # passed without failing when it may be taken no times
        return bool(av[0] == 0)
    if name == "SUBPATTERN":
        return all(_cannot_fail(o, a) for o, a in av[-1])
    if name == "ATOMIC_GROUP":
        return all(_cannot_fail(o, a) for o, a in av)
    if name == "BRANCH":
        return any(all(_cannot_fail(o, a) for o, a in branch) for branch in av[1])
    return False  # a character, an anchor, a lookaround, a back reference


class _Checker:
    def __init__(self, flags: int, sample: list[str]) -> None:
        self.flags = flags
        self.sample = sample
        self.problem: str | None = None

    def sequence(self, items: list[Any]) -> _Shape:
        shapes = [self.item(op, av) for op, av in items]
        for index, first in enumerate(shapes):
            if self.problem is None and first.variable:
                self._overlapping_after(first, shapes[index + 1 :])
        chars: frozenset[str] = frozenset().union(*(s.chars for s in shapes))
        firsts: frozenset[str] = frozenset()
        nullable = True
        for shape in shapes:
            firsts |= shape.firsts
            if not shape.nullable:
                nullable = False
                break
        return _Shape(chars, firsts, nullable, any(s.variable for s in shapes))

    def _overlapping_after(self, first: _Shape, rest: list[_Shape]) -> None:
        # The characters the first quantifier takes may be given back to a later one only
        # while everything in between can be taken by the first as well.
        for shape in rest:
            if shape.variable and shape.chars & first.chars:
                self.problem = (
                    "two quantifiers in a row can match the same characters, so a failed "
                    "search tries every way of splitting the text between them"
                )
                return
            if not shape.nullable and not shape.chars & first.chars:
                return

    def item(self, op: Any, av: Any) -> _Shape:
        name = str(op)
        if name in _REPEATS:
            low, high, body = av
            inner = self.sequence(list(body))
            repeats = high > 1
            if repeats and inner.variable and self.problem is None:
                self.problem = (
                    "a quantifier applies to a group that can match the same text in more than "
                    "one way (a quantifier inside it, or alternatives that can start alike), so "
                    "a failed search tries exponentially many ways of dividing the text"
                )
            return _Shape(inner.chars, inner.firsts, low == 0 or inner.nullable, low != high)
        if name == "SUBPATTERN":
            return self.sequence(list(av[-1]))
        if name == "ATOMIC_GROUP":
            return self.sequence(list(av))
        if name == "BRANCH":
            return self._alternatives([self.sequence(list(b)) for b in av[1]])
        if name in {"ASSERT", "ASSERT_NOT"}:
            self.sequence(list(av[1]))
            return _Shape(frozenset(), frozenset(), True, False)
        if name in {"AT", "GROUPREF_EXISTS"}:
            return _Shape(frozenset(), frozenset(), True, False)
        if name == "GROUPREF":  # a back reference: whatever its group took
            everything = frozenset(self.sample)
            return _Shape(everything, everything, True, True)
        chars = self._chars(op, av)
        return _Shape(chars, chars, False, False)

    @staticmethod
    def _alternatives(branches: list[_Shape]) -> _Shape:
        # Alternatives are a choice the engine may revisit (like a quantifier) when two of
        # them can start with the same character, or one matches nothing and another not.
        seen: frozenset[str] = frozenset()
        ambiguous = False
        for branch in branches:
            ambiguous = ambiguous or branch.variable or bool(branch.firsts & seen)
            seen |= branch.firsts
        nullable = [b.nullable for b in branches]
        return _Shape(
            frozenset().union(*(b.chars for b in branches)),
            seen,
            any(nullable),
            ambiguous or (any(nullable) and not all(nullable)),
        )

    def _chars(self, op: Any, av: Any) -> frozenset[str]:
        # One character-matching element, compiled alone and tried on the sample: re's own
        # semantics (categories, ranges, negation, IGNORECASE) without reimplementing them.
        element = _parser.SubPattern(_parser.State(), [(op, av)])
        element.state.flags = self.flags
        try:
            code: re.Pattern[str] = _compiler.compile(element, self.flags)
        except Exception:  # an element re cannot compile alone: count every character
            return frozenset(self.sample)
        return frozenset(c for c in self.sample if code.fullmatch(c) is not None)
