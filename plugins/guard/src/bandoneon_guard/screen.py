"""The screen in front of the redactions: a cheap test that text holds no secret shape at all.

Most text a guard sees (tool results, answers, trace attributes) holds no secret, and one
alternation of every pattern cost more than the patterns it stood for: joined, they lose the
regex engine's literal-prefix scan. So each pattern is read once for literal texts one of
which every match must contain (``sk-ant-``, ``AKIA``, ``://``), and text containing none of
them is passed by plain substring search. Patterns with no such literal (``\\d{8}``,
case-insensitive ones) are joined into one alternation as before, or, when they cannot be
joined, the screen lets everything through to the patterns one by one.
"""

from __future__ import annotations

import functools
import re
import string
from collections.abc import Callable, Iterable
from typing import Any

from .rules import Redaction

__all__ = ["Screen", "required_texts", "screen_of"]

# re's parser, public enough to be stable across 3.11+ (``sre_parse`` before it was moved).
try:
    from re import _constants as _sre  # type: ignore[attr-defined]
    from re import _parser as _sre_parse  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - Python < 3.11
    import sre_constants as _sre  # type: ignore[no-redef]
    import sre_parse as _sre_parse  # type: ignore[no-redef]

_MAX_TEXTS = 16  # more alternatives than this and that part of a pattern is not used
_ZERO_WIDTH = {_sre.AT, _sre.ASSERT, _sre.ASSERT_NOT}
_REPEATS = {_sre.MAX_REPEAT, _sre.MIN_REPEAT, getattr(_sre, "POSSESSIVE_REPEAT", _sre.MAX_REPEAT)}


def _better(found: frozenset[str] | None, other: frozenset[str] | None) -> frozenset[str] | None:
    """The more selective of two needle sets: longer shortest text first, then fewer texts."""
    if found is None or other is None:
        return found or other
    return max(found, other, key=lambda texts: (min(map(len, texts)), -len(texts)))


def _literals(op: Any, value: Any) -> set[str] | None:
    """The texts one item matches when it is a plain literal or a small set of them."""
    if op is _sre.LITERAL:
        return {chr(value)}
    if op is _sre.IN and value and len(value) <= _MAX_TEXTS and all(kind is _sre.LITERAL for kind, _ in value):
        return {chr(code) for _, code in value}
    if op is _sre.SUBPATTERN and not value[1] & re.IGNORECASE:
        return _whole(value[3])
    if op is _sre.BRANCH:
        texts: set[str] = set()
        for branch in value[1]:
            more = _whole(branch)
            if more is None:
                return None
            texts |= more
        return texts
    return None


def _whole(items: Any) -> set[str] | None:
    """The texts a sequence matches when it is literals only (a handful), else None."""
    texts = {""}
    for op, value in items:
        if op in _ZERO_WIDTH:
            continue
        more = _literals(op, value)
        if more is None or len(texts) * len(more) > _MAX_TEXTS:
            return None
        texts = {text + extra for text in texts for extra in more}
    return texts


def _required(items: Any) -> frozenset[str] | None:
    """Texts one of which every match of the parsed sequence ``items`` contains (the most
    selective such set found), or None when no literal is certain to appear."""
    best: frozenset[str] | None = None
    run = {""}  # the literal texts just read, one of which the match holds at this point

    def flush() -> None:
        nonlocal best, run
        if "" not in run:
            best = _better(best, frozenset(run))
        run = {""}

    for op, value in items:
        if op in _ZERO_WIDTH:
            continue  # matches no text: the literals on either side still touch
        more = _literals(op, value)
        if more is not None and len(run) * len(more) <= _MAX_TEXTS:
            run = {text + extra for text in run for extra in more}
            continue
        flush()
        if op is _sre.SUBPATTERN and not value[1] & re.IGNORECASE:
            best = _better(best, _required(value[3]))
        elif op is _sre.BRANCH:
            inner = [_required(branch) for branch in value[1]]
            if all(texts is not None for texts in inner) and sum(map(len, inner)) <= _MAX_TEXTS:  # type: ignore[arg-type]
                best = _better(best, frozenset().union(*inner))  # type: ignore[arg-type]
        elif op in _REPEATS and value[0] >= 1:
            best = _better(best, _required(value[2]))
    flush()
    return best


def required_texts(pattern: str) -> frozenset[str] | None:
    """Texts one of which every match of ``pattern`` contains (``sk-ant-``, ``AKIA``, ``://``),
    or None when there are none to rely on (a case-insensitive pattern, or only classes and
    repeats such as ``\\d{8}``)."""
    try:
        parsed = _sre_parse.parse(pattern)
        if parsed.state.flags & re.IGNORECASE:
            return None
        return _required(parsed)
    except Exception:  # a parse this module does not know: no shortcut, the regex screen decides
        return None


#: Up to this many characters, the needles are looked for with one regex (see ``Screen``).
_SHORT_TEXT = 200


class Screen:
    """Answers "could any of these redactions change ``text``?" cheaply; False is certain."""

    def __init__(self, redactions: Iterable[Redaction]):
        needles: set[str] = set()
        rest: list[Redaction] = []
        for redaction in redactions:
            texts = required_texts(redaction.pattern)
            if texts is None:
                rest.append(redaction)
            else:
                needles |= texts
        # A text that contains another needle adds nothing: wherever it is, that one is.
        self._needles = tuple(sorted(n for n in needles if not any(other != n and other in n for other in needles)))
        # The same needles as one regex: on a short text one pass beats a Python loop of
        # substring searches (half the time at 20 characters); on a long one the loop wins.
        self._any_needle = re.compile(_alternation(self._needles)) if self._needles else None
        self._rest, self._rest_one_by_one = _joined(rest)
        #: A first look at ``text``, one call in C: None when it holds none of the characters
        #: every needle has one of, so no redaction can change it (see ``_glance``). The caller
        #: glances first and asks ``may_match`` only of text it passed: neither repeats the other.
        self.glance: Callable[[str], object] = _glance(self._needles) if self._needles and not rest else _EVERY_TEXT

    def may_match(self, text: str) -> bool:
        if len(text) <= _SHORT_TEXT:
            if self._any_needle is not None and self._any_needle.search(text) is not None:
                return True
        else:
            for needle in self._needles:  # a plain loop: a generator's frames cost more than the searches
                if needle in text:
                    return True
        if self._rest_one_by_one:
            return True
        return self._rest is not None and self._rest.search(text) is not None


#: Characters prose and tool output are full of: a glance for one of them would pass nothing by.
_COMMON = frozenset(string.ascii_lowercase + string.digits + string.whitespace + ".,:;!?'\"()%")
#: The glance when characters cannot rule text out (a pattern with no needle): every text passes.
_EVERY_TEXT = re.compile("").search


def _glance(needles: Iterable[str]) -> Callable[[str], object]:
    """A search for one character of each needle, chosen to be rare in ordinary text (``-``
    for ``sk-`` and ``xoxb-``, ``A`` for ``AKIA``): text with none of them holds no needle,
    and one character class costs about half the needle alternation on short text.
    Greedy: the uncommon character in the most needles left, until every needle has one."""
    left = set(needles)
    chosen: set[str] = set()
    while left:
        candidates = sorted({character for needle in left for character in needle})
        best = min(candidates, key=lambda c: (c in _COMMON, -sum(c in needle for needle in left)))
        chosen.add(best)
        left = {needle for needle in left if best not in needle}
    return re.compile("[" + "".join(re.escape(c) for c in sorted(chosen)) + "]").search


def _alternation(texts: Iterable[str]) -> str:
    """A regex matching any of ``texts``, factored on their first characters (``AKIA|ASIA`` as
    ``A(?:KIA|SIA)``): where a plain alternation tries every text at each position that starts
    one of them, this tries one branch per character (a third faster on short text, 3x on a
    run of a needle's first character)."""
    tails: dict[str, list[str]] = {}
    for text in texts:
        if not text:
            return ""  # what came before is a match already
        tails.setdefault(text[0], []).append(text[1:])
    branches = []
    for first, rest in sorted(tails.items()):
        tail = _alternation(rest)
        branches.append(re.escape(first) + (f"(?:{tail})" if "|" in tail else tail))
    return "|".join(branches)


@functools.lru_cache(maxsize=256)
def screen_of(redactions: tuple[Redaction, ...]) -> Screen:
    """The screen for ``redactions``, made once per set of them (equal redactions, equal
    screen): every agent a guard or a policy pack is built for asks for the same ones, and
    parsing their patterns costs more than running the agent."""
    return Screen(redactions)


def _joined(redactions: list[Redaction]) -> tuple[re.Pattern[str] | None, bool]:
    """One alternation of the patterns (None when there are none), or ``(None, True)`` when they
    cannot be joined (backreferences, inline flags) and every text must go to them one by one."""
    if not redactions:
        return None, False
    joined = "|".join(f"(?:{r.pattern})" for r in redactions)
    if re.search(r"\\[1-9]|\(\?P=|\(\?[aiLmsux]+\)", joined):
        return None, True
    try:
        return re.compile(joined), False
    except re.error:
        return None, True
