"""The typed hook facade: one agent's plugins, validated by pluggy, called in pluggy's order.

Every call site in the loop goes through one method per hook, so arguments are checked where
they are written and a hook nobody implements costs one check.
"""

from __future__ import annotations

import functools
import inspect
import logging
import types
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import attrs
import pluggy

from . import hookspecs
from .decisions import FinalAnswer, SendBack
from .errors import BandoneonError, ConfigError, PluginError
from .plugins import PROJECT, installed_plugins, plugin_name

if TYPE_CHECKING:
    from .agent import Agent
    from .context import RunContext
    from .decisions import Compacted, Refuse, Respond, Retry, Stop
    from .events import Event
    from .messages import Message, ModelRequest, ToolCall, ToolResult, Turn
    from .result import RunResult
    from .tools import Tool

__all__ = ["Hooks", "registration_hooks"]

_log = logging.getLogger("bandoneon.hooks")


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

    async def check_answer(self, run: RunContext, answer: FinalAnswer) -> FinalAnswer | SendBack:
        """Chained rewrites of the answer; the first ``SendBack`` ends the chain."""
        for impl in self._impls["check_answer"]:
            verdict = await self._call(impl, "check_answer", {"run": run, "answer": answer})
            if isinstance(verdict, SendBack):
                return verdict
            if verdict is not None:
                if not isinstance(verdict, FinalAnswer):
                    raise PluginError(
                        f"plugin {impl.plugin!r}: check_answer must return None, a FinalAnswer or SendBack, got {verdict!r}",
                        plugin=impl.plugin,
                        hook="check_answer",
                    )
                answer = verdict
        return answer

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



def forget_declarations() -> None:
    """Drop what was learned about plugin classes (``refresh_plugins`` calls this)."""
    _declarations.cache_clear()
    registration_hooks.cache_clear()


@functools.cache
def registration_hooks() -> Hooks:
    """Process-wide hooks over every importable installed plugin *class* (providers, commands)."""
    classes = [entry.load() for entry in installed_plugins().values()]
    return Hooks(cls for cls in classes if cls is not None)
