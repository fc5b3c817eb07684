"""Plugins: discovery through entry points, activation per agent, and the typed hook facade.

A plugin is a class (an attrs class, ideally: its fields are its options) whose methods are
marked with ``@bandoneon.hookimpl``. Its distribution declares it in the ``bandoneon``
entry-point group. Installed is not active: each agent builds its own plugin instances, so
two agents in one process can differ. Three class attributes steer activation:

- ``name``: the plugin's name (the entry point's name).
- ``is_default``: active in agents built without ``plugins=`` (retry, stop, compaction).
- ``is_policy_pack``: active in *every* agent of the environment; agent code cannot remove it.

Operators control what loads with ``BANDONEON_DISABLED_PLUGINS=a,b`` and the allow-list
``BANDONEON_PLUGINS=a,b``. A plugin that fails to import is skipped with a warning.
"""

from __future__ import annotations

import functools
import inspect
import logging
import os
import time
import types
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import attrs
import pluggy

from . import hookspecs
from .errors import BandoneonError, ConfigError, PluginError
from .structuring import StructureError, structure

if TYPE_CHECKING:
    import importlib.metadata

    from .agent import Agent, RunResult
    from .context import RunContext
    from .decisions import Compacted, Refuse, Respond, Retry, Stop
    from .events import Event
    from .messages import Message, ModelRequest, ToolCall, ToolResult, Turn
    from .tools import Tool

__all__ = [
    "PROJECT",
    "Hooks",
    "InstalledPlugin",
    "Plugin",
    "PluginImportWarning",
    "build_plugin",
    "hookimpl",
    "installed_plugins",
    "load_plugin",
    "plugin_name",
    "refresh_plugins",
]

_log = logging.getLogger("bandoneon.plugins")

PROJECT = "bandoneon"
hookimpl = pluggy.HookimplMarker(PROJECT)


class PluginImportWarning(UserWarning):
    """An installed plugin could not be imported and was skipped."""


class Plugin:
    """Optional base class documenting the attributes the core reads. Plain classes work too."""

    name: ClassVar[str] = ""
    is_default: ClassVar[bool] = False
    is_policy_pack: ClassVar[bool] = False
    #: Subagents started by an agent with this plugin get it too (tracing, guard rules).
    inherits_to_subagents: ClassVar[bool] = False
    #: Attributes of the plugin offered on the agent itself (``agent.plan``, ``agent.steer``).
    agent_attributes: ClassVar[tuple[str, ...]] = ()
    #: This plugin asks a person about ``needs_approval`` tools. Without one active, the core
    #: refuses those calls: an approval nobody can give is a no, never a silent yes.
    handles_approvals: ClassVar[bool] = False


def plugin_name(plugin: object) -> str:
    cls = plugin if isinstance(plugin, type) else type(plugin)
    name = getattr(cls, "name", None)
    return name if isinstance(name, str) and name else cls.__name__.lower()


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
    _loaded: type | None = attrs.field(default=None, alias="loaded")

    def load(self) -> type | None:
        """Import the plugin class once; on failure warn, remember the error and return None."""
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
        found[entry_point.name] = InstalledPlugin(
            name=entry_point.name,
            value=entry_point.value,
            distribution=dist.name if dist else None,
            version=dist.version if dist else None,
            entry_point=entry_point,
        )
    return found


def refresh_plugins() -> None:
    """Forget what discovery found (after installing a plugin, or changing the env vars)."""
    from .providers.base import forget_plugin_providers

    installed_plugins.cache_clear()
    _flagged.cache_clear()
    _declarations.cache_clear()
    registration_hooks.cache_clear()
    forget_plugin_providers()


def load_plugin(name: str) -> type:
    """The class of the installed plugin ``name``; ``ConfigError`` if it is unknown or broken."""
    entry = installed_plugins().get(name)
    if entry is None:
        known = ", ".join(sorted(installed_plugins())) or "none installed"
        raise ConfigError(f"no plugin named {name!r} is installed (or it is disabled); available: {known}")
    cls = entry.load()
    if cls is None:
        raise ConfigError(f"plugin {name!r} is installed but could not be imported: {entry.error}")
    return cls


@functools.cache
def _flagged(flag: str) -> tuple[type, ...]:
    classes = (entry.load() for entry in installed_plugins().values())
    return tuple(cls for cls in classes if cls is not None and getattr(cls, flag, False))


def default_plugin_classes() -> tuple[type, ...]:
    """Installed plugins every agent should have unless it says ``plugins=[...]``."""
    return _flagged("is_default")


def policy_pack_classes() -> tuple[type, ...]:
    """Installed policy packs: active in every agent, whatever its code says."""
    return _flagged("is_policy_pack")


def build_plugin(cls: type, options: Mapping[str, Any] | None = None, *, source: str = "arguments") -> object:
    """An instance of plugin ``cls`` from an options mapping, every key checked."""
    options = dict(options or {})
    try:
        if attrs.has(cls):
            return structure(options, cls)
        return cls(**options)
    except StructureError as exc:
        raise ConfigError(f"{source}: options of plugin {plugin_name(cls)!r}: {' '.join(exc.problems)}") from None
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{source}: options of plugin {plugin_name(cls)!r}: {exc}") from None


PluginsArgument = Sequence[object | str] | Mapping[str, Mapping[str, Any] | None] | None


def activate(plugins: PluginsArgument, *, source: str = "arguments") -> list[object]:
    """The plugin instances for one agent: what it asked for (or the defaults), then policy packs."""
    if plugins is None:
        chosen = [build_plugin(cls, source="default plugins") for cls in default_plugin_classes()]
    elif isinstance(plugins, Mapping):
        chosen = [build_plugin(load_plugin(name), options, source=source) for name, options in plugins.items()]
    else:
        chosen = [build_plugin(load_plugin(p), source=source) if isinstance(p, str) else p for p in plugins]
    names = {plugin_name(p) for p in chosen}
    for cls in policy_pack_classes():
        if plugin_name(cls) in names:
            raise ConfigError(
                f"{plugin_name(cls)!r} is an installed policy pack: it is active in every agent as the operator "
                "installed it, and agent code can neither replace nor configure it (operators: BANDONEON_DISABLED_PLUGINS)"
            )
        chosen.append(build_plugin(cls, source="policy pack"))
    return chosen


# ---------------------------------------------------------------- the facade


@attrs.frozen
class _Declaration:
    """One hook implementation of a plugin class, validated by pluggy once per class."""

    hook: str
    attribute: str
    argnames: tuple[str, ...]
    order: int  # 0 tryfirst, 1 normal, 2 trylast


@attrs.frozen
class _Impl:
    plugin: str
    function: Callable[..., Any]
    argnames: tuple[str, ...]
    is_async: bool


@functools.cache
def _declarations(key: object) -> tuple[_Declaration, ...]:
    """What ``key`` (a plugin class, or a module) implements, checked against the hookspecs.

    pluggy does the checking (marker parsing, argument names, unknown hooks); the result is
    cached so that building an agent does not re-inspect every attribute of every plugin.
    """
    name = plugin_name(key)
    probe = pluggy.PluginManager(PROJECT)
    probe.add_hookspecs(hookspecs)
    try:
        probe.register(key, name=name)
        probe.check_pending()
    except pluggy.PluginValidationError as exc:
        raise PluginError(f"plugin {name!r} is not valid: {exc}", plugin=name) from None
    found = []
    for hook in _HOOK_NAMES:
        for impl in getattr(probe.hook, hook).get_hookimpls():
            if impl.hookwrapper or impl.wrapper:
                raise PluginError(f"plugin {name!r}: bandoneon hooks cannot be wrappers ({hook})", plugin=name, hook=hook)
            order = 0 if impl.tryfirst else 2 if impl.trylast else 1
            found.append(_Declaration(hook, impl.function.__name__, tuple(impl.argnames), order))
    return tuple(found)


class Hooks:
    """One agent's plugin registry, behind one typed method per hook.

    Plugins are validated by pluggy (once per class) and called in pluggy's order: ``tryfirst``
    implementations, then the others, then ``trylast``; later-registered first within each
    group. Implementation lists are computed once, so a hook nobody implements costs one check.
    """

    def __init__(self, plugins: Iterable[object]):
        self.plugins: tuple[object, ...] = tuple(plugins)
        self._by_name: dict[str, object] = {}
        ranked: dict[str, list[tuple[int, int, _Impl]]] = {hook: [] for hook in _HOOK_NAMES}
        for position, plugin in enumerate(self.plugins):
            name = plugin_name(plugin)
            if name in self._by_name:
                raise ConfigError(f"plugin {name!r} is activated twice in one agent; pass it once")
            self._by_name[name] = plugin
            key = plugin if isinstance(plugin, (type, types.ModuleType)) else type(plugin)
            for declaration in _declarations(key):
                function = getattr(plugin, declaration.attribute)
                impl = _Impl(name, function, declaration.argnames, inspect.iscoroutinefunction(function))
                ranked[declaration.hook].append((declaration.order, -position, impl))
        self._impls: dict[str, tuple[_Impl, ...]] = {
            hook: tuple(impl for *_, impl in sorted(entries, key=lambda entry: entry[:2])) for hook, entries in ranked.items()
        }

    def implements(self, hook: str) -> bool:
        return bool(self._impls[hook])

    def get(self, name: str) -> object | None:
        """The active plugin instance called ``name``, or None."""
        return self._by_name.get(name)

    # -------- the four calling styles

    async def _call(self, impl: _Impl, hook: str, kwargs: dict[str, Any]) -> Any:
        try:
            if impl.is_async:
                result = await impl.function(*[kwargs[a] for a in impl.argnames])
            else:
                result = impl.function(*[kwargs[a] for a in impl.argnames])
        except BandoneonError as exc:
            exc.add_note(f"raised by plugin {impl.plugin!r} in {hook}")
            raise
        except Exception as exc:
            raise PluginError(
                f"plugin {impl.plugin!r} failed in {hook}: {type(exc).__name__}: {exc}", plugin=impl.plugin, hook=hook
            ) from exc
        return result

    async def first(self, hook: str, **kwargs: Any) -> Any:
        for impl in self._impls[hook]:
            result = await self._call(impl, hook, kwargs)
            if result is not None:
                return result
        return None

    async def chain(self, hook: str, key: str, **kwargs: Any) -> Any:
        for impl in self._impls[hook]:
            result = await self._call(impl, hook, kwargs)
            if result is not None:
                kwargs[key] = result
        return kwargs[key]

    async def collect(self, hook: str, **kwargs: Any) -> list[Any]:
        results = []
        for impl in self._impls[hook]:
            result = await self._call(impl, hook, kwargs)
            if result is not None:
                results.append(result)
        return results

    def collect_sync(self, hook: str, **kwargs: Any) -> list[Any]:
        """For hooks called outside a run (agent creation): implementations must not be async."""
        results = []
        for impl in self._impls[hook]:
            try:
                result = impl.function(*[kwargs[a] for a in impl.argnames])
            except BandoneonError:
                raise
            except Exception as exc:
                raise PluginError(f"plugin {impl.plugin!r} failed in {hook}: {type(exc).__name__}: {exc}", plugin=impl.plugin, hook=hook) from exc
            if inspect.iscoroutine(result):
                result.close()
                raise PluginError(f"plugin {impl.plugin!r}: {hook} must not be async", plugin=impl.plugin, hook=hook)
            if result is not None:
                results.append(result)
        return results

    # -------- one typed method per hook

    async def before_turn(self, run: RunContext) -> Stop | None:
        return await self.first("before_turn", run=run)

    async def before_provider_call(self, run: RunContext, request: ModelRequest) -> ModelRequest:
        return await self.chain("before_provider_call", "request", run=run, request=request)

    async def before_tool_execution(self, run: RunContext, call: ToolCall, tool: Tool, arguments: dict[str, Any]) -> Refuse | Respond | None:
        return await self.first("before_tool_execution", run=run, call=call, tool=tool, arguments=arguments)

    async def after_tool_execution(self, run: RunContext, call: ToolCall, tool: Tool | None, result: ToolResult) -> str:
        for impl in self._impls["after_tool_execution"]:
            text = await self._call(impl, "after_tool_execution", {"run": run, "call": call, "tool": tool, "result": result})
            if text is not None:
                result = attrs.evolve(result, content=text)
        return result.content

    async def after_turn(self, run: RunContext, turn: Turn) -> None:
        await self.collect("after_turn", run=run, turn=turn)

    async def should_stop(self, run: RunContext, turn: Turn) -> Stop | None:
        return await self.first("should_stop", run=run, turn=turn)

    async def compact_history(self, run: RunContext, request: ModelRequest, window: int | None) -> Compacted | None:
        return await self.first("compact_history", run=run, request=request, window=window)

    async def retry_delay(self, run: RunContext, error: Exception, attempt: int) -> Retry | None:
        return await self.first("retry_delay", run=run, error=error, attempt=attempt)

    async def wrap_up(self, run: RunContext, stop: Stop) -> Message | None:
        return await self.first("wrap_up", run=run, stop=stop)

    async def system_prompt_sections(self, run: RunContext) -> list[str]:
        return await self.collect("system_prompt_sections", run=run)

    async def before_run(self, run: RunContext) -> None:
        await self.collect("before_run", run=run)

    async def after_run(self, run: RunContext, result: RunResult) -> None:
        await self.collect("after_run", run=run, result=result)

    async def on_event(self, run: RunContext, event: Event) -> None:
        for impl in self._impls["on_event"]:
            try:
                await self._call(impl, "on_event", {"run": run, "event": event})
            except PluginError as exc:
                _log.warning("%s (observer errors are not fatal)", exc)

    def register_skills(self, agent: Agent, register: Callable[..., None]) -> None:
        self.collect_sync("register_skills", agent=agent, register=register)

    def register_memory(self, agent: Agent, register: Callable[..., None]) -> None:
        self.collect_sync("register_memory", agent=agent, register=register)

    async def agent_closed(self, agent: Agent) -> None:
        await self.collect("agent_closed", agent=agent)

    def agent_created(self, agent: Agent) -> None:
        self.collect_sync("agent_created", agent=agent)

    def register_tools(self, agent: Agent) -> list[Tool]:
        return [t for tools in self.collect_sync("register_tools", agent=agent) for t in tools]

    def register_providers(self, register: Callable[..., None]) -> None:
        self.collect_sync("register_providers", register=register)

    def register_commands(self, subparsers: Any) -> None:
        self.collect_sync("register_commands", subparsers=subparsers)


_HOOK_NAMES = tuple(name for name, value in vars(hookspecs).items() if callable(value) and hasattr(value, "bandoneon_spec"))



@functools.cache
def registration_hooks() -> Hooks:
    """Process-wide hooks over every importable installed plugin *class* (providers, commands)."""
    classes = [entry.load() for entry in installed_plugins().values()]
    return Hooks(cls for cls in classes if cls is not None)
