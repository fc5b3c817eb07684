"""A heartbeat described by a TOML file, for ``bandoneon heartbeat CONFIG``.

Tools and the local condition are named as ``"package.module:function"``. Relative paths
(``state_file``) are relative to the config file, so a scheduler's working folder does not matter.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import ClassVar

import attrs

import bandoneon

from ._heartbeat import RANGES, Heartbeat
from bandoneon import import_object

__all__ = ["HeartbeatConfig", "heartbeat_from_config", "load_heartbeat_config"]


@attrs.frozen
class _HeartbeatKeys:
    """What a heartbeat TOML file may say; every other key is an error."""

    name: ClassVar[str] = "heartbeat"

    check_prompt: str
    interval: float = attrs.field(validator=RANGES["interval"])
    model: str | None = None
    system_prompt: str = ""
    tools: list[str] = attrs.field(factory=list)
    local_condition: str | None = None
    max_ticks: int | None = attrs.field(default=None, validator=RANGES["max_ticks"])
    timeout: float | None = attrs.field(default=None, validator=RANGES["timeout"])
    run_timeout: float | None = attrs.field(default=None, validator=RANGES["run_timeout"])
    max_turns: int | None = attrs.field(default=None, validator=RANGES["max_turns"])
    fresh_session: bool = True
    state_file: str | None = None


@attrs.frozen
class HeartbeatConfig(_HeartbeatKeys):
    """A heartbeat TOML file's keys, and the file they came from (for messages and relative
    paths: not a key anyone writes)."""

    source: str = attrs.field(default="", eq=False)


def load_heartbeat_config(path: str | os.PathLike[str]) -> HeartbeatConfig:
    """Read and check the file; ``ConfigError`` naming the file and the key on any problem."""
    file = Path(path)
    try:
        data = tomllib.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise bandoneon.ConfigError(f"heartbeat config {str(file)!r} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise bandoneon.ConfigError(f"{file}: cannot be read: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise bandoneon.ConfigError(f"{file}: not valid TOML: {exc}") from None
    try:
        keys = bandoneon.structure(data, _HeartbeatKeys)
    except bandoneon.StructureError as exc:
        raise bandoneon.ConfigError(f"{file}: {' '.join(p.removeprefix('heartbeat: ') for p in exc.problems)}") from None
    return HeartbeatConfig(**attrs.asdict(keys, recurse=False), source=str(file))


def heartbeat_from_config(config: HeartbeatConfig, **overrides: object) -> Heartbeat:
    """The agent and its heartbeat, as the config says (``overrides`` go to ``Heartbeat``)."""
    what = f"{config.source or 'heartbeat config'}:"
    tools = [import_object(path, what=f"{what} tool") for path in config.tools]
    condition = import_object(config.local_condition, what=f"{what} local_condition") if config.local_condition else None
    agent = bandoneon.Agent(config.model, tools=tools, system_prompt=config.system_prompt or None, max_turns=config.max_turns)
    folder = Path(config.source).parent if config.source else Path.cwd()
    state = folder / (config.state_file or f"{Path(config.source or 'heartbeat').stem}.state.json")
    options: dict[str, object] = {
        "interval": config.interval,
        "check_prompt": config.check_prompt,
        "local_condition": condition,
        "max_ticks": config.max_ticks,
        "timeout": config.timeout,
        "run_timeout": config.run_timeout,
        "fresh_session": config.fresh_session,
        "state_file": state,
    }
    options.update(overrides)
    return Heartbeat(agent, **options)  # type: ignore[arg-type]
