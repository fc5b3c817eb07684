"""Links in the final answer: the way out that needs no tool (level 14's "ways out").

A model fooled by text it read can put private data in a URL of its answer; a markdown image
is fetched by the chat UI the moment it renders, so the data leaves without anyone clicking.
``off_list_links`` finds every link and image whose host is not on the allowlist: markdown
links and images, reference definitions, HTML ``src``/``href`` and bare ``http(s)://`` URLs.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from urllib.parse import urlsplit

import attrs

__all__ = ["LinkCheck", "host_allowed", "off_list_links"]

_TITLE = r"""(?:\s+(?:"[^"]*"|'[^']*'|\([^)]*\)))?"""
_IMAGE = re.compile(r"!\[([^\]]*)\]\(\s*<?([^)\s>]*)>?" + _TITLE + r"\s*\)")
_LINK = re.compile(r"\[([^\]]*)\]\(\s*<?([^)\s>]*)>?" + _TITLE + r"\s*\)")
_REFERENCE = re.compile(r"^[ \t]{0,3}\[[^\]]+\]:[ \t]*<?([^\s>]+)>?.*$", re.MULTILINE)
_HTML = re.compile(r"""<[a-z]+\b[^>]*?\b(?:src|href|srcset|poster|data)\s*=\s*["']?([^"'\s>]+)[^>]*>""", re.IGNORECASE)
_BARE = re.compile(r"""https?://[^\s<>()\[\]"'`]+""", re.IGNORECASE)


@attrs.frozen
class LinkCheck:
    """The text with off-list links taken out, and the hosts they pointed at (in order, once each)."""

    text: str
    hosts: tuple[str, ...]


def host_allowed(host: str, allowed: Sequence[str]) -> bool:
    """``host`` is on the list: equal to an entry, or under a ``*.example.com`` entry."""
    host = host.lower().rstrip(".")
    for entry in allowed:
        entry = entry.lower().rstrip(".")
        if entry.startswith("*.") and host.endswith(entry[1:]):
            return True
        if host == entry:
            return True
    return False


def _host(url: str) -> str | None:
    """The host a URL would reach, or None when it reaches none (a relative path, ``mailto:``)."""
    candidate = url.strip()
    if candidate.startswith("//"):
        candidate = "https:" + candidate
    try:
        parts = urlsplit(candidate)
        host = parts.hostname
    except ValueError:
        return "(unparsable address)"
    if parts.scheme.lower() not in ("http", "https"):
        return None
    return host or "(no host)"


def off_list_links(text: str, allowed: Sequence[str]) -> LinkCheck:
    """Every link or image to a host outside ``allowed`` removed: a link keeps its words, an
    image, a reference definition, an HTML element or a bare URL becomes a short notice."""
    hosts: list[str] = []

    def blocked(url: str) -> str | None:
        host = _host(url)
        if host is None or host_allowed(host, allowed):
            return None
        if host not in hosts:
            hosts.append(host)
        return host

    def image(match: re.Match[str]) -> str:
        host = blocked(match.group(2))
        return match.group(0) if host is None else f"[image removed: {host} is not an allowed host]"

    def link(match: re.Match[str]) -> str:
        return match.group(0) if blocked(match.group(2)) is None else match.group(1)

    def notice(match: re.Match[str]) -> str:
        host = blocked(match.group(1) if match.re.groups else match.group(0))
        return match.group(0) if host is None else f"[link removed: {host} is not an allowed host]"

    for pattern, replace in ((_IMAGE, image), (_LINK, link), (_REFERENCE, notice), (_HTML, notice), (_BARE, notice)):
        text = pattern.sub(replace, text)
    return LinkCheck(text, tuple(hosts))
