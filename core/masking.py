"""What a tool's exception may tell the model: its message, without where things live or the
credentials inside connection strings.

An exception raised by a tool goes back to the model (level 5: it can often fix the call), but
exception messages are written for developers: they carry absolute paths (the user's name, the
project's layout) and connection strings with passwords in them. ``mask_error_message`` rewrites
those parts; the full message stays in the log. ``ToolError`` messages are written for the model
and are never rewritten.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

__all__ = ["mask_error_message"]

# ``scheme://user:password@host`` (URLs and DSNs): keep the user, hide the password.
_URL_PASSWORD = re.compile(r"\b([A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]*):[^/\s@]+@")
# ``password=...`` / ``pwd: ...`` pairs of libpq / ODBC style connection strings and configs.
_KEY_VALUE_SECRET = re.compile(r"(?i)\b(password|passwd|pwd|secret|token|api[_-]?key)(\s*[=:]\s*)('[^']*'|\"[^\"]*\"|[^\s;,&'\"]+)")


def _literally(text: str) -> Callable[[re.Match[str]], str]:
    """A ``re.sub`` replacement that is ``text`` as it is (never read as a template)."""
    return lambda _match: text


def _prefixes(project: Path | None) -> list[tuple[str, str]]:
    """(absolute folder, what the model reads instead), the longest first, so a project inside
    the home folder reads as ``<project>`` rather than ``~/...``."""
    found = []
    if project is not None:
        found.append((str(project.resolve()), "<project>"))
    home = os.path.expanduser("~")
    if home not in ("", "/", "~"):
        found.append((str(Path(home).resolve()), "~"))
    return sorted(found, key=lambda pair: len(pair[0]), reverse=True)


def mask_error_message(message: str, *, project: str | os.PathLike[str] | None = None) -> str:
    """``message`` with the home folder and ``project`` folder of any path replaced by ``~`` and
    ``<project>``, and passwords inside URLs, DSNs and ``password=`` pairs replaced by ``***``."""
    for folder, shown in _prefixes(Path(project) if project is not None else None):
        # A whole path component only: /home/ana must not rewrite /home/anatole.
        message = re.sub(re.escape(folder) + r"(?=[/\\\s'\":),]|$)", _literally(shown), message)
    message = _URL_PASSWORD.sub(r"\1:***@", message)
    return _KEY_VALUE_SECRET.sub(lambda m: f"{m.group(1)}{m.group(2)}***", message)
