"""Plugins: discovery through entry points and activation per agent (the hook facade that
calls them is ``bandoneon.hooks``).

A plugin is a class (an attrs class, ideally: its fields are its options) whose methods are
marked with ``@bandoneon.hookimpl``, or a module of such functions. Its distribution declares
it in the ``bandoneon`` entry-point group, and **the entry point's name is the plugin's name**
(a class or module that is not installed is named by its ``name`` attribute, else its class or
module name). Installed is not active: each agent builds its own plugin instances, so two
agents in one process can differ. Attributes steering activation:

- ``is_default``: active in agents built without ``plugins=`` (retry, stop, compaction).
- ``is_policy_pack``: active in *every* agent of the environment; agent code cannot remove it.
- ``hookspecs``: a module of hooks this plugin publishes for other plugins to implement.

Operators control what loads with ``BANDONEON_DISABLED_PLUGINS=a,b`` and the allow-list
``BANDONEON_PLUGINS=a,b``. A plugin that fails to import is skipped with a warning.
"""

from __future__ import annotations

import functools
import os
import time
import types
import warnings
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import attrs

from .errors import ConfigError
from .logs import deferred_logger
from .markers import PROJECT, hookimpl
from .structuring import StructureError, structure

if TYPE_CHECKING:
    import importlib.metadata


__all__ = [
    "PROJECT",
    "InstalledPlugin",
    "Plugin",
    "PluginImportWarning",
    "build_plugin",
    "hookimpl",
    "installed_plugins",
    "load_plugin",
    "plugin_name",
    "published_hookspecs",
    "refresh_plugins",
]

_log = deferred_logger("bandoneon.plugins")

class PluginImportWarning(UserWarning):
    """An installed plugin could not be imported and was skipped."""


class PluginNameWarning(UserWarning):
    """Two names for one plugin, or one name for two plugins: which one counts is said."""


class Plugin:
    """Optional base class documenting the attributes the core reads. Plain classes work too."""

    #: The name of a plugin that is not installed (an installed one is named by its entry point).
    name: ClassVar[str] = ""
    #: A module of hookspecs this plugin publishes (declared with ``bandoneon.hookspec``).
    hookspecs: ClassVar[types.ModuleType | None] = None
    is_default: ClassVar[bool] = False
    is_policy_pack: ClassVar[bool] = False
    #: This plugin asks a person about ``needs_approval`` tools. Without one active, the core
    #: refuses those calls: an approval nobody can give is a no, never a silent yes.
    handles_approvals: ClassVar[bool] = False
    #: Hooks of this plugin's class that this instance does not need, for its options (a guard
    #: without allow rules has nothing to say before a tool runs): an agent built with it never
    #: calls them. Read when the agent is built, and kept for it. Best a property of the
    #: options (an attrs class's assignment in ``__attrs_post_init__`` goes through its
    #: option-validating ``__setattr__``, on every new agent). Each name must be a hook the
    #: class implements.
    #: Ignored for policy packs: the operator's policy is always called in full.
    unused_hooks: frozenset[str] = frozenset()


#: Loaded entry-point objects (classes, modules) -> their entry-point names.
_entry_point_names: dict[object, str] = {}


def plugin_name(plugin: object) -> str:
    """The plugin's one name: its entry point's name if it is installed, else its ``name``
    attribute, else its class name (lower case) or its module's last name."""
    key = plugin if isinstance(plugin, (type, types.ModuleType)) else type(plugin)
    installed = _entry_point_names.get(key)
    if installed is not None:
        return installed
    name = getattr(key, "name", None)
    if isinstance(name, str) and name:
        return name
    return key.__name__.rpartition(".")[2] if isinstance(key, types.ModuleType) else key.__name__.lower()


def published_hookspecs(plugin: object) -> types.ModuleType | type | None:
    """The module of hookspecs ``plugin`` publishes, if any."""
    key = plugin if isinstance(plugin, (type, types.ModuleType)) else type(plugin)
    specs = getattr(key, "hookspecs", None)
    if specs is not None and not isinstance(specs, (types.ModuleType, type)):
        raise ConfigError(f"plugin {plugin_name(plugin)!r}: hookspecs must be a module of hookspecs, got {specs!r}")
    return specs


# ---------------------------------------------------------------- discovery


@attrs.define(eq=False)
class InstalledPlugin:
    """An entry point of group ``bandoneon``: known without importing it."""

    name: str
    value: str
    distribution: str | None
    version: str | None
    entry_point: importlib.metadata.EntryPoint
    import_seconds: float | None = None
    error: str | None = None
    _loaded: type | types.ModuleType | None = attrs.field(default=None, alias="loaded")

    def load(self) -> type | types.ModuleType | None:
        """Import the plugin (a class or a module) once; on failure warn, remember the error
        and return None. A ``name`` attribute that disagrees with the entry point is a warning:
        the entry point's name is the one that counts."""
        if self._loaded is not None or self.error is not None:
            return self._loaded
        started = time.perf_counter()
        try:
            self._loaded = self.entry_point.load()
        except Exception as exc:  # any import-time failure of a third-party plugin
            self.error = f"{type(exc).__name__}: {exc}"
            warnings.warn(
                f"bandoneon plugin {self.name!r} (distribution {self.distribution}) could not be imported "
                f"and is skipped: {self.error}",
                PluginImportWarning,
                stacklevel=3,
            )
        finally:
            self.import_seconds = time.perf_counter() - started
        if self._loaded is not None:
            _entry_point_names[self._loaded] = self.name
            declared = getattr(self._loaded, "name", None)
            if isinstance(declared, str) and declared and declared != self.name:
                warnings.warn(
                    f"bandoneon plugin {self.value} says its name is {declared!r} but is installed as {self.name!r} "
                    f"(distribution {self.distribution}); it is called {self.name!r}",
                    PluginNameWarning,
                    stacklevel=3,
                )
        return self._loaded


def _env_names(variable: str) -> set[str] | None:
    value = os.environ.get(variable)
    if value is None:
        return None
    return {name.strip() for name in value.split(",") if name.strip()}


@functools.cache
def installed_plugins() -> dict[str, InstalledPlugin]:
    """Every plugin the environment offers, minus what the operator disabled. Nothing is imported."""
    import importlib.metadata  # here, not at import time: scanning distributions is for the first agent

    disabled = _env_names("BANDONEON_DISABLED_PLUGINS") or set()
    allowed = _env_names("BANDONEON_PLUGINS")
    found: dict[str, InstalledPlugin] = {}
    for entry_point in importlib.metadata.entry_points(group=PROJECT):
        if entry_point.name in disabled or (allowed is not None and entry_point.name not in allowed):
            continue
        dist = entry_point.dist
        if entry_point.name in found:
            kept = found[entry_point.name]
            warnings.warn(
                f"two installed plugins are named {entry_point.name!r}: {kept.value} ({kept.distribution}) and "
                f"{entry_point.value} ({dist.name if dist else None}); using {kept.value}",
                PluginNameWarning,
                stacklevel=2,
            )
            continue
        metadata = dist.metadata if dist else None  # parsed once: dist.name and dist.version would each parse it
        found[entry_point.name] = InstalledPlugin(
            name=entry_point.name,
            value=entry_point.value,
            distribution=metadata["Name"] if metadata is not None else None,
            version=metadata["Version"] if metadata is not None else None,
            entry_point=entry_point,
        )
    return found


def refresh_plugins() -> None:
    """Forget what discovery found (after installing a plugin, or changing the env vars)."""
    from .hooks import forget_declarations
    from .providers.base import forget_plugin_providers

    installed_plugins.cache_clear()
    _flagged.cache_clear()
    _packs_by_name.cache_clear()
    _defaults_besides_packs.cache_clear()
    installed_hookspecs.cache_clear()
    _entry_point_names.clear()
    forget_declarations()
    forget_plugin_providers()


def load_plugin(name: str) -> type | types.ModuleType:
    """The class (or module) of the installed plugin ``name``; ``ConfigError`` if it is unknown or broken."""
    entry = installed_plugins().get(name)
    if entry is None:
        known = ", ".join(sorted(installed_plugins())) or "none installed"
        raise ConfigError(f"no plugin named {name!r} is installed (or it is disabled); available: {known}")
    cls = entry.load()
    if cls is None:
        raise ConfigError(f"plugin {name!r} is installed but could not be imported: {entry.error}")
    return cls


@functools.cache
def installed_hookspecs() -> tuple[types.ModuleType | type, ...]:
    """The hookspec modules every importable installed plugin publishes."""
    loaded = (entry.load() for entry in installed_plugins().values())
    return tuple(dict.fromkeys(specs for plugin in loaded if plugin is not None and (specs := published_hookspecs(plugin)) is not None))


@functools.cache
def _flagged(flag: str) -> tuple[type | types.ModuleType, ...]:
    classes = (entry.load() for entry in installed_plugins().values())
    return tuple(cls for cls in classes if cls is not None and getattr(cls, flag, False))


def default_plugin_classes() -> tuple[type | types.ModuleType, ...]:
    """Installed plugins every agent should have unless it says ``plugins=[...]``."""
    return _flagged("is_default")


def policy_pack_classes() -> tuple[type | types.ModuleType, ...]:
    """Installed policy packs: active in every agent, whatever its code says."""
    return _flagged("is_policy_pack")


def build_plugin(cls: type | types.ModuleType, options: Mapping[str, Any] | None = None, *, source: str = "arguments") -> object:
    """An instance of plugin ``cls`` from an options mapping, every key checked (a module
    plugin is its own instance and takes no options)."""
    if isinstance(cls, types.ModuleType):
        if options:
            raise ConfigError(f"{source}: plugin {plugin_name(cls)!r} is a module and takes no options, got {', '.join(sorted(options))}")
        return cls
    try:
        if not options:
            return cls()  # the defaults: every new agent builds its default plugins this way
        if attrs.has(cls):
            return structure(dict(options), cls)
        return cls(**options)
    except StructureError as exc:
        problems = exc.problems
    except (TypeError, ValueError) as exc:
        problems = [str(exc)]
    # A range check names its owner ("compaction: threshold must be ..."); said once here.
    name = plugin_name(cls)
    raise ConfigError(f"{source}: options of plugin {name!r}: {' '.join(p.removeprefix(f'{name}: ') for p in problems)}") from None


PluginsArgument = Sequence[object | str] | Mapping[str, Mapping[str, Any] | None] | None


def configured_plugins(configured: Mapping[str, Mapping[str, Any]] | None = None, *, source: str = "bandoneon.toml") -> list[object]:
    """What an agent built without ``plugins=`` gets: the recommended defaults, plus the
    options and additions of ``[plugins.*]`` in the configuration (``configured``)."""
    if not configured:
        return [build_plugin(cls, source="default plugins") for cls in default_plugin_classes()]
    chosen: dict[str, Mapping[str, Any]] = {plugin_name(cls): {} for cls in default_plugin_classes()}
    chosen.update(configured)
    return [
        build_plugin(_configured_plugin(name, source), options, source=source) if name in configured
        else build_plugin(load_plugin(name), options, source="default plugins")
        for name, options in chosen.items()
    ]


def _configured_plugin(name: str, source: str) -> type | types.ModuleType:
    """``load_plugin`` for a name a configuration file gave: the error names the file."""
    try:
        return load_plugin(name)
    except ConfigError as exc:
        raise ConfigError(f"{source}: [plugins.{name}]: {exc}") from None


def activate(plugins: PluginsArgument, *, source: str = "arguments") -> list[object]:
    """The plugin instances for one agent: what it asked for (or the defaults), then policy packs.

    Installed policy packs are built here, fresh for every agent, from the environment. What
    agent code passes cannot stand in for one: an instance of an installed pack (a parent's,
    handed to a subagent or a fork) is the same enforcement and is dropped in favour of the
    fresh one; anything else that uses a pack's name or calls itself a policy pack (a subclass,
    the same policy under another name) is refused. Only ``BANDONEON_DISABLED_PLUGINS`` and
    ``BANDONEON_PLUGINS`` (the operator's environment) switch a pack off.
    """
    # policy_pack_classes() loads the installed plugins first, so that every one is known by its name.
    packs = _packs_by_name()
    if plugins is None:  # every Agent() without plugins=: nothing of agent code to check
        defaults = [build_plugin(cls, source="default plugins") for cls in _defaults_besides_packs()]
        return [*defaults, *(build_plugin(cls, source="policy pack") for cls in packs.values())]
    if isinstance(plugins, Mapping):
        for name, options in plugins.items():
            if name in packs and options:
                raise ConfigError(_pack_refusal(name, "configure"))
        chosen = [build_plugin(load_plugin(name), options, source=source) for name, options in plugins.items()]
    else:
        chosen = [build_plugin(load_plugin(p), source=source) if isinstance(p, str) else p for p in plugins]
    kept = []
    for plugin in chosen:
        cls = plugin if isinstance(plugin, type) else type(plugin)
        name = plugin_name(plugin)
        if name in packs and cls is packs[name]:
            continue  # the installed pack itself: the fresh instance below is the one that enforces
        if name in packs:
            raise ConfigError(_pack_refusal(name, "replace"))
        if getattr(cls, "is_policy_pack", False):
            raise ConfigError(
                f"plugin {name!r} calls itself a policy pack, but it is not installed as one: policy packs come "
                "from the environment (an installed distribution), never from agent code; pass it as an ordinary "
                "plugin without is_policy_pack, or install it"
            )
        kept.append(plugin)
    return [*kept, *(build_plugin(cls, source="policy pack") for cls in packs.values())]


@functools.cache
def _packs_by_name() -> dict[str, type | types.ModuleType]:
    return {plugin_name(cls): cls for cls in policy_pack_classes()}


@functools.cache
def _defaults_besides_packs() -> tuple[type | types.ModuleType, ...]:
    """The default plugins ``activate`` keeps: a pack flagged default is built once, as a pack."""
    packs = _packs_by_name()
    return tuple(cls for cls in default_plugin_classes() if packs.get(plugin_name(cls)) is not cls)


def _pack_refusal(name: str, verb: str) -> str:
    return (
        f"{name!r} is an installed policy pack: it is active in every agent as the operator installed it, and agent "
        f"code can neither replace nor configure it (asked to {verb} it; operators: BANDONEON_DISABLED_PLUGINS)"
    )
