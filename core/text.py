"""Text for people: counts in words ("1 tool", "2 tools"), and outside text made safe to keep
and to show.

``plural`` writes a count with its noun. ``as_unicode`` is what the core applies where text
enters a run (the prompt, a tool's result, JSON from a server or a model), so every store can
write what a run holds as UTF-8. ``for_terminal`` is how every command of bandoneon and its
plugins shows text it did not write itself (a model's reply, a tool's output, a saved session,
a trace or memory file) on a terminal: shown, never obeyed; ``visible_text`` is outside text
as a person would see it, before a model reads it (a guard looking for a wrapper's tags, an MCP
server's descriptions); ``markdown_code`` and ``markdown_text`` are how such text goes into
Markdown that someone's viewer renders.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["as_unicode", "for_terminal", "json_for_terminal", "markdown_code", "markdown_text", "plural", "visible_text"]


def plural(count: int, noun: str, many: str | None = None) -> str:
    """``count`` and ``noun``, the noun in the plural unless the count is one (``many`` for
    irregular plurals): ``plural(1, "turn")`` is ``"1 turn"``, ``plural(3, "turn")`` ``"3 turns"``."""
    return f"{count} {noun if count == 1 else (many or noun + 's')}"


_SURROGATE = re.compile("[\ud800-\udfff]")


def as_unicode(text: str) -> str:
    """``text`` with each lone surrogate replaced by U+FFFD, the replacement character.

    A Python string may hold one where no text can: a file name with bytes that are not UTF-8
    (``os.listdir`` decodes them so), or a JSON ``\\ud800`` escape without its pair. Nothing
    can encode it as UTF-8, so a tool that lists such a file would fail every store that saves
    its result; replaced where it enters a run, it is one visible character instead."""
    return text if text.isascii() else _SURROGATE.sub("\ufffd", text)


#: What a terminal would obey rather than show: the C0 controls but tab and newline (ESC
#: starts the sequences that move the cursor, recolour, retitle the window or write the
#: clipboard; a carriage return or a backspace writes over what is already shown), DEL, the C1
#: controls (an 8-bit CSI is ESC [ to some terminals), the bidirectional embeddings, overrides
#: and isolates that reorder a line as it is drawn, and lone surrogates (which cannot be
#: written as UTF-8 at all: printing one raises).
_OBEYED = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def _written_out(match: re.Match[str]) -> str:
    char = match.group()
    if char == "\r":  # moves the cursor only: dropped, so CRLF text reads as LF text
        return ""
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def for_terminal(text: str) -> str:
    """``text`` as a terminal should show it: every character a terminal would act on instead
    of drawing is written out as its escape (``\\x1b``, ``\\u202e``), so text from a model, a
    tool or a file cannot move the cursor, hide or rewrite lines, set the clipboard or reorder
    what a person reads (before approving a call, say). Newlines and tabs stay; carriage
    returns are dropped. Text with none of these is returned as it is."""
    return _OBEYED.sub(_written_out, text)


#: Characters that draw nothing and are not found by their category (``_UNSEEN``): the controls
#: but tab and newline, the combining grapheme joiner, Hangul fillers, Khmer and Mongolian
#: invisibles, variation selectors, Unicode tags and the rest of the default-ignorable code points.
_INVISIBLE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u3164"
    "\ufe00-\ufe0f\uffa0\ufff0-\ufff8\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff]"
)
#: Categories that draw nothing a person could read: format characters (bidirectional controls,
#: zero-width characters), surrogates, private-use and unassigned code points.
_UNSEEN = frozenset({"Cf", "Cs", "Co", "Cn"})


def visible_text(text: str) -> str:
    """``text`` without the characters a person does not see but a model reads: controls (tab
    and newline kept; a carriage return dropped), format characters (bidirectional controls,
    zero-width characters), Unicode tags and the other default-ignorable code points,
    surrogates, private-use and unassigned code points. Hidden instructions, and a tag split
    by an invisible character, show as what a reader takes them for."""
    text = _INVISIBLE.sub("", text)
    if text.isascii():
        return text
    # Looked up once per distinct character (a page has a few hundred), not per character.
    for unseen in [c for c in set(text) if unicodedata.category(c) in _UNSEEN]:
        text = text.replace(unseen, "")
    return text


def json_for_terminal(text: str) -> str:
    """JSON text as a terminal should show it: every character a terminal would act on instead
    of drawing (``for_terminal``'s) as its ``\\u`` escape, so it is the same JSON, still
    readable (other characters, accents and scripts, stay as written). JSON already escapes
    the C0 controls; this escapes DEL, the C1 controls, the bidirectional overrides and lone
    surrogates, which JSON may hold as they are."""
    return _OBEYED.sub(_json_escape, text)


def _json_escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


_BACKTICKS = re.compile("`+")


def markdown_code(text: str, info: str = "") -> str:
    """``text`` as a fenced Markdown code block that nothing in it can end early: the fence is
    one backtick longer than the longest run of backticks in the text. A tool's result or a
    model's answer in a saved chat or a report is then shown as it is, never rendered (an image
    the reader's viewer would fetch, a link, a heading of its own). ``info`` names the language."""
    fence = "`" * max(3, max((len(run) for run in _BACKTICKS.findall(text)), default=0) + 1)
    return f"{fence}{info}\n{text}\n{fence}"


_PUNCTUATION = re.compile(r"""([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~])""")


def markdown_text(text: str) -> str:
    """``text`` for one line of Markdown (a list item, a table cell), read as it is: every
    ASCII punctuation character is backslash-escaped (CommonMark lets each be), so no link,
    image, code span, emphasis, HTML or table cell can start in it, and each run of white space,
    line breaks included, becomes one space (four at the start would make a code block)."""
    return _PUNCTUATION.sub(r"\\\1", " ".join(text.split()))
