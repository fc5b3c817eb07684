"""``bandoneon.toml``: read with tomllib, checked with cattrs, written with tomli-w.

Looked up as ``$BANDONEON_CONFIG`` or ``./bandoneon.toml``. Every key is checked: a typo
is a ``ConfigError`` that names the file, the key and what is expected.
"""

from __future__ import annotations

import os
import time
from stat import S_ISREG
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from .errors import ConfigError
from .files import stat_if_present, write_atomically
from .ranges import Range, in_range
from .structuring import StructureError, structure

__all__ = ["OPTION_RANGES", "Config", "configured_base_url", "configured_model", "load_config", "write_default_config"]

CONFIG_FILE = "bandoneon.toml"

#: The core's numeric options, in ``bandoneon.toml`` and as ``Agent`` arguments. None is "unset".
#: A window under 256 tokens holds no system prompt and tool schema worth sending: a typo.
OPTION_RANGES: dict[str, Range] = {
    "max_turns": in_range(at_least=1, integer=True, optional=True),
    "context_window": in_range(at_least=256, unit="tokens", integer=True, optional=True),
    "run_timeout": in_range(above=0, unit="seconds", optional=True),
    "tool_timeout": in_range(above=0, unit="seconds", optional=True),
    "turn_timeout": in_range(above=0, unit="seconds", optional=True),
    "hook_timeout": in_range(above=0, unit="seconds", optional=True),
    "max_tool_concurrency": in_range(at_least=1, integer=True, optional=True),
    "output_retries": in_range(at_least=0, integer=True),
    "max_send_backs": in_range(at_least=0, integer=True),
}


def _windows(instance: Any, attribute: attrs.Attribute[Any], value: dict[str, int] | None) -> None:
    for model, window in (value or {}).items():
        if ":" not in model:
            raise ConfigError(f"context_windows: key {model!r} must be 'PROVIDER:MODEL', like 'openai:gpt-4o'")
        OPTION_RANGES["context_window"].check(f"context_windows[{model!r}]", window)


@attrs.frozen
class _ConfigKeys:
    """What ``bandoneon.toml`` may say: every key a person may write, and only those."""

    model: str | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    context_window: int | None = attrs.field(default=None, validator=OPTION_RANGES["context_window"])
    system_prompt: str | None = None
    max_turns: int | None = attrs.field(default=None, validator=OPTION_RANGES["max_turns"])
    run_timeout: float | None = attrs.field(default=None, validator=OPTION_RANGES["run_timeout"])
    tool_timeout: float | None = attrs.field(default=None, validator=OPTION_RANGES["tool_timeout"])
    #: ``"PROVIDER:MODEL" = tokens``: windows of hosted models the built-in table lacks or gets
    #: wrong (see ``bandoneon.providers.windows``).
    context_windows: dict[str, int] | None = attrs.field(default=None, validator=_windows)
    plugins: dict[str, dict[str, Any]] | None = None


@attrs.frozen
class Config(_ConfigKeys):
    """What ``bandoneon.toml`` says, and where it came from (for messages: not a key anyone
    writes). Arguments to ``Agent`` always win over it."""

    source: str = attrs.field(default="arguments", eq=False)


def load_config(path: str | os.PathLike[str] | None = None) -> Config:
    """The configuration at ``path`` (or the default location); an empty one if there is none."""
    named = (os.environ.get("BANDONEON_CONFIG") or None) if path is None else None  # empty is unset, as the shell clears it
    explicit = path is not None or named is not None
    location = path or named or CONFIG_FILE
    stat = stat_if_present(location)
    if stat is None or not S_ISREG(stat.st_mode):
        if explicit:
            problem = "does not exist" if stat is None else "is not a file"
            raise ConfigError(f"configuration file {os.fspath(location)!r} {problem}")
        return _EMPTY  # the common case of every Agent(): no file, nothing to build
    file = Path(location)
    # Every Agent() reads the configuration: parse a file once until it changes.
    key = (str(file.absolute()), stat.st_mtime_ns, stat.st_ctime_ns, stat.st_size)
    cached = _parsed.get(key[0])
    if cached is not None and cached[0] == key:
        return cached[1]
    config = _parse_config(file)
    # As git does with racily clean files: a file changed within the clock's coarse tick could
    # change again with the same stat, so only a file that has been still for a while is cached.
    if time.time_ns() - stat.st_mtime_ns > 2_000_000_000:
        _parsed[key[0]] = (key, config)
    return config


def configured_model(config: Config) -> str | None:
    """The model an agent given none uses: ``model`` in ``config``, else ``$BANDONEON_MODEL``."""
    return config.model or os.environ.get("BANDONEON_MODEL")


def configured_base_url(config: Config) -> str | None:
    """The server a model without one goes to: ``base_url`` in ``config``, else
    ``$BANDONEON_BASE_URL``, else ``$OPENAI_BASE_URL``."""
    return config.base_url or os.environ.get("BANDONEON_BASE_URL") or os.environ.get("OPENAI_BASE_URL")


_parsed: dict[str, tuple[tuple[str, int, int, int], Config]] = {}
#: What an absent file says (Config is frozen, so one instance serves every agent).
_EMPTY = Config()


def _parse_config(file: Path) -> Config:
    import tomllib

    try:
        data = tomllib.loads(file.read_text(encoding="utf-8-sig"))  # a byte-order mark (Notepad's "UTF-8 with BOM") is not a key
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{file}: cannot be read: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{file}: not valid TOML: {exc}") from None
    return config_from_mapping(data, source=str(file))


def config_from_mapping(data: Mapping[str, Any], *, source: str) -> Config:
    plugins = data.get("plugins")
    if plugins is not None and not (isinstance(plugins, dict) and all(isinstance(v, dict) for v in plugins.values())):
        raise ConfigError(f"{source}: [plugins] must hold one table per plugin, like [plugins.compaction]")
    try:
        keys = structure(dict(data), _ConfigKeys)
    except StructureError as exc:
        owner = f"{_ConfigKeys.__name__.lower()}: "  # a range's message names its class; the file is named instead
        raise ConfigError(f"{source}: " + " ".join(p.removeprefix(owner) for p in exc.problems)) from None
    return Config(**attrs.asdict(keys, recurse=False), source=source)


DEFAULT_CONFIG_TEXT = '''\
# bandoneon configuration. Arguments given in code always win over this file.

# The model: "PROVIDER:MODEL". Examples:
#   "local:"                                   the embedded model (bandoneon-local)
#   "ollama:llama3.1"                          Ollama on localhost:11434
#   "openai:gpt-4o-mini"                       OpenAI (key from OPENAI_API_KEY)
#   "openai-compatible:MODEL@http://host:8000/v1"   vLLM, LM Studio, llama.cpp, a proxy
'''


def write_default_config(path: Path, *, model: str = "local:", max_turns: int = 25) -> None:
    """Write a commented starting ``bandoneon.toml`` (the values through tomli-w)."""
    import tomli_w

    if path.exists():
        raise ConfigError(f"{path} already exists; not overwriting it")
    if ":" not in model:  # the file names no server, so a bare name could never be resolved
        raise ConfigError(f"model {model!r} has no provider prefix; write it as 'PROVIDER:MODEL', e.g. 'ollama:{model}' or 'local:'")
    body = tomli_w.dumps({"model": model, "max_turns": max_turns})
    plugins = tomli_w.dumps({"plugins": {"retry": {"max_attempts": 5}}})
    text = (
        DEFAULT_CONFIG_TEXT
        + body
        + "\n# The model's context window in tokens, when the server does not say it.\n# context_window = 8192\n"
        + "\n# Plugins to activate, with their options (see `bandoneon plugins`).\n"
        + "\n".join("# " + line if line else "" for line in plugins.splitlines())
        + "\n"
    )
    write_atomically(path, text)
