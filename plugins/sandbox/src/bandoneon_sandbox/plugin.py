"""The ``sandbox`` plugin: adds ``run_code`` to the agent, configured from its options."""

from __future__ import annotations

import logging
import shutil
from typing import ClassVar

import attrs

import bandoneon

from ._limits import INSTALL_HINT, RANGES
from ._tool import run_code_tool

__all__ = ["Sandbox"]

log = logging.getLogger("bandoneon_sandbox")


@attrs.define
class Sandbox(bandoneon.Plugin):
    """Give the agent a ``run_code`` tool that runs its Python in a bubblewrap box.

    Options mirror ``run_code_tool``; see the README's table.
    """

    name: ClassVar[str] = "sandbox"

    timeout: float = attrs.field(default=10.0, validator=RANGES["timeout"])
    memory_mb: int = attrs.field(default=256, validator=RANGES["memory_mb"])
    max_processes: int = attrs.field(default=32, validator=RANGES["max_processes"])
    max_output_bytes: int = attrs.field(default=16_000, validator=RANGES["max_output_bytes"])
    tmp_mb: int = attrs.field(default=64, validator=RANGES["tmp_mb"])
    mount: str | None = None
    mount_at: str = "/data"
    bwrap_path: str = "bwrap"
    python: str | None = None
    tool_name: str = "run_code"

    def __attrs_post_init__(self) -> None:
        # Check every option now (ConfigError naming it), not at the first call.
        self.register_tools(None)

    @bandoneon.hookimpl
    def register_tools(self, agent: bandoneon.Agent | None) -> list[bandoneon.Tool]:
        return [
            run_code_tool(
                timeout=self.timeout,
                memory_mb=self.memory_mb,
                max_processes=self.max_processes,
                max_output_bytes=self.max_output_bytes,
                tmp_mb=self.tmp_mb,
                mount=self.mount,
                mount_at=self.mount_at,
                bwrap_path=self.bwrap_path,
                python=self.python,
                name=self.tool_name,
            )
        ]

    @bandoneon.hookimpl
    def agent_created(self, agent: bandoneon.Agent) -> None:
        # A warning now beats a surprise at the first call; the call itself still refuses.
        if shutil.which(self.bwrap_path) is None:
            log.warning("agent %r has run_code but bubblewrap (%s) is not installed: every call will fail; %s", agent.name, self.bwrap_path, INSTALL_HINT)
