"""The ``heartbeat`` plugin: the ``bandoneon heartbeat CONFIG`` command.

A heartbeat is not a hook of the loop (it starts runs, it does not change them), so the
plugin itself only registers the command; in code, use ``Heartbeat(agent, ...)``.
"""

from __future__ import annotations

from typing import Any, ClassVar

import attrs

import bandoneon

__all__ = ["HeartbeatPlugin"]


@attrs.define
class HeartbeatPlugin(bandoneon.Plugin):
    name: ClassVar[str] = "heartbeat"

    @staticmethod
    @bandoneon.hookimpl
    def register_commands(subparsers: Any) -> None:
        from ._cli import add_command

        add_command(subparsers)
