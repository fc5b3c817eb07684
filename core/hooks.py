"""The typed hook facade: one agent's plugins, validated by pluggy, called as pluggy calls them.

Every call site in the loop goes through one method per hook, so arguments are checked where
they are written; hooks published by plugins are called through ``call`` / ``call_sync`` with
their spec. How a hook is called is read from its spec (``bandoneon.markers.CallStyle``);
``_start`` is the one place an implementation is called.
"""

from __future__ import annotations

import functools
import inspect
import operator
import types
import weakref
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import attrs
import pluggy

from . import hookspecs
from .errors import ConfigError, PluginError
from .markers import PROJECT, Calls, CallStyle, call_style
from .plugins import installed_hookspecs, installed_plugins, plugin_name, published_hookspecs
from .dispatch import Binder, Callers, Impl, compile_binder, not_a_coroutine, raise_named, start
from .hooktiming import HookProfile, clock
from .logs import deferred_logger

if TYPE_CHECKING:
    from .agent import Agent
    from .context import RunContext
    from .decisions import Compacted, FinalAnswer, Refuse, Respond, Retry, SendBack, Stop
    from .events import Event
    from .messages import Message, ModelRequest, ToolCall, ToolResult, Turn
    from .result import RunResult
    from .tools import Tool

__all__ = ["Hooks", "registration_hooks"]

_log = deferred_logger("bandoneon.hooks")

SpecModules = tuple[types.ModuleType | type, ...]
_FIRST, _CHAINED, _COLLECTING, _OBSERVING = Calls.FIRST, Calls.CHAINED, Calls.COLLECTING, Calls.OBSERVING


@attrs.frozen
class _Declaration:
    """One hook implementation of a plugin, validated by pluggy once per plugin class."""

    hook: str
    attribute: str
    argnames: tuple[str, ...]  # passed by position, as pluggy does
    kwargnames: tuple[str, ...]  # parameters with a default that the spec provides: by keyword
    order: int  # 0 tryfirst, 1 normal, 2 trylast
    binds_class: bool  # a process-wide hook written as a plain method: called with the class as self
    is_async: bool
    #: How ``_start`` takes the arguments out of a call's keyword dict: ``shape`` 1, one
    #: argument (``pick`` returns it); 2, several (``pick`` returns them as a tuple); 0, the
    #: general case (none, or some by keyword). A C getter, where a list comprehension would
    #: make a frame per hook call.
    shape: int = attrs.field(init=False, eq=False)
    pick: Callable[[dict[str, Any]], Any] | None = attrs.field(init=False, eq=False)
    #: The plain function of the plugin's class that pluggy binds to the instance, when that is
    #: what the implementation is (almost always): then one ``Impl`` per plan serves every
    #: agent, calling it with the agent's instance, and a new agent binds nothing. None for
    #: anything else (a module's function, a static or class method, a function set on an
    #: instance, a process-wide hook called on a class): bound to each agent's plugin.
    shared: Callable[..., Any] | None = attrs.field(default=None, eq=False)

    def __attrs_post_init__(self) -> None:
        general = bool(self.kwargnames) or not self.argnames
        object.__setattr__(self, "shape", 0 if general else min(len(self.argnames), 2))
        object.__setattr__(self, "pick", None if general else operator.itemgetter(*self.argnames))


@functools.cache
def _styles(specs: SpecModules) -> dict[str, CallStyle]:
    """Hook name -> calling style, for every spec in ``specs`` (a spec without one is refused)."""
    styles: dict[str, CallStyle] = {}
    for module in specs:
        for name, value in vars(module).items():
            if callable(value) and hasattr(value, f"{PROJECT}_spec"):
                if name in styles:
                    raise PluginError(f"hook {name!r} is declared twice (again by {module.__name__}); a hook has one owner", hook=name)
                styles[name] = call_style(value)
    return styles


@functools.cache
def _argnames(specs: SpecModules) -> dict[str, tuple[str, ...]]:
    """Hook name -> its arguments in the spec's order, for every spec in ``specs``."""
    return {name: tuple(inspect.signature(spec).parameters) for module in specs for name, spec in vars(module).items() if name in _styles(specs)}


def _process_wide_specs(specs: SpecModules) -> dict[str, Callable[..., Any]]:
    styles = _styles(specs)
    return {name: getattr(module, name) for module in specs for name in vars(module) if name in styles and styles[name].is_process_wide}


_IMPL_MARKER = f"{PROJECT}_impl"


def _has_instance_hooks(plugin: object) -> bool:
    """Implementations set on the instance itself: then the instance, not its class, is validated."""
    own = getattr(plugin, "__dict__", None)
    if not own:
        return False
    # pluggy looks only at routines, and only a Python function (or a method of one) can carry
    # the marker: other values (most of an options instance) are skipped without a lookup.
    for value in own.values():
        kind = type(value)
        if kind is types.MethodType:
            value = value.__func__
            kind = type(value)
        if kind is types.FunctionType and _IMPL_MARKER in value.__dict__:
            return True
    return False


_known: dict[tuple[object, SpecModules, bool], tuple[_Declaration, ...]] = {}


def _declarations(plugin: object, specs: SpecModules, *, process_wide: bool = False) -> tuple[_Declaration, ...]:
    """What ``plugin`` implements, checked by pluggy against ``specs``.

    Validation is pluggy's own, on the object being registered (marker parsing, argument names
    of the bound methods, unknown hooks). The result is kept per class, so building an agent
    does not re-inspect every attribute of every plugin; an instance carrying implementations
    of its own is validated by itself.
    """
    if not isinstance(plugin, (type, types.ModuleType)) and _has_instance_hooks(plugin):
        return _validate(plugin, specs, process_wide)
    key = (plugin if isinstance(plugin, (type, types.ModuleType)) else type(plugin), specs, process_wide)
    found = _known.get(key)
    if found is None:
        found = _known[key] = _validate(plugin, specs, process_wide)
    return found


def _validate(plugin: object, specs: SpecModules, process_wide: bool) -> tuple[_Declaration, ...]:
    name = plugin_name(plugin)
    styles = _styles(specs)
    manager = pluggy.PluginManager(PROJECT)
    if process_wide:  # only these hooks are called on the class; its other hooks are checked on its instances
        namespace = types.ModuleType("process_wide_hookspecs")
        namespace.__dict__.update(_process_wide_specs(specs))
        manager.add_hookspecs(namespace)
    else:
        for module in specs:
            manager.add_hookspecs(module)
    try:
        manager.register(plugin, name=name)
        if not process_wide:
            manager.check_pending()
    except pluggy.PluginValidationError as exc:
        raise PluginError(f"plugin {name!r} is not valid: {exc}", plugin=name) from None
    found = []
    for hook, style in styles.items():
        if process_wide and not style.is_process_wide:
            continue
        for impl in getattr(manager.hook, hook).get_hookimpls():
            if impl.hookwrapper or impl.wrapper:
                raise PluginError(
                    f"plugin {name!r}: {hook} is declared as a hook wrapper, which bandoneon does not call "
                    "(its hooks may be async). Use tryfirst=True to run before the others, trylast=True to run "
                    "after them, or before_run/after_run to bracket a run.",
                    plugin=name,
                    hook=hook,
                )
            if style.is_sync and inspect.iscoroutinefunction(impl.function):
                raise PluginError(f"plugin {name!r}: {hook} must not be async (it is called outside the event loop)", plugin=name, hook=hook)
            spec_arguments = set(getattr(manager.hook, hook).spec.argnames)
            attribute = _attribute_of(plugin, impl.function)
            binds_class = style.is_process_wide and isinstance(plugin, type) and inspect.isfunction(inspect.getattr_static(plugin, attribute))
            order = 0 if impl.tryfirst else 2 if impl.trylast else 1
            method = impl.function
            # Shared only when the class attribute itself is the function bound (not a
            # property, a function set on the instance, or a method of another object).
            shared = (
                method.__func__
                if isinstance(method, types.MethodType) and method.__self__ is plugin
                and inspect.getattr_static(type(plugin), attribute, None) is method.__func__
                and attribute not in getattr(plugin, "__dict__", ())
                else None
            )
            found.append(
                _Declaration(
                    hook,
                    attribute,
                    tuple(impl.argnames),
                    tuple(a for a in impl.kwargnames if a in spec_arguments),
                    order,
                    binds_class,
                    inspect.iscoroutinefunction(impl.function),
                    shared=shared,
                )
            )
    return tuple(found)


def _attribute_of(plugin: object, function: Callable[..., Any]) -> str:
    """The attribute name under which pluggy found ``function`` (it may differ from ``__name__``)."""
    underlying = getattr(function, "__func__", function)
    candidate = getattr(plugin, function.__name__, None)
    if getattr(candidate, "__func__", candidate) is underlying:
        return function.__name__
    for attribute in dir(plugin):
        try:
            value = getattr(plugin, attribute)
        except Exception:  # pluggy skips attributes that fail the same way
            continue
        if value is function or getattr(value, "__func__", value) is underlying:
            return attribute
    raise PluginError(f"plugin {plugin_name(plugin)!r}: cannot find the attribute of {function!r}")


@attrs.frozen
class _Plan:
    """What a combination of plugin classes means for an agent, worked out once: the plugins'
    names, the hookspecs in force, and per hook the plugins (by position) and declarations to
    call, in pluggy's order. A new agent only binds its instances to it."""

    names: tuple[str, ...]
    specs: SpecModules
    styles: dict[str, CallStyle]
    #: Every hook in force, each with its implementations in calling order: the shared ones
    #: (``_Declaration.shared``), and None where a new agent binds its own plugin's.
    impls: dict[str, tuple[Impl | None, ...]]
    #: The hooks with an implementation to bind per agent, with their (position, declaration)
    #: entries; empty for the usual plugins, whose agents then share ``impls`` as it is.
    to_bind: tuple[tuple[str, tuple[tuple[int, _Declaration], ...]], ...]
    implemented: frozenset[str]
    #: The hooks whose implementations are all plain functions (and those nobody implements):
    #: unmeasured, ``Hooks.now`` answers them on the spot.
    sync_hooks: frozenset[str]
    #: Some plugin asks people about ``needs_approval`` tools (``Plugin.handles_approvals``).
    handles_approvals: bool
    #: Per hook, its arguments in the spec's order.
    argnames: dict[str, tuple[str, ...]]
    #: The hooks implemented whose implementations are all plain functions: unmeasured, their
    #: callers are bound when an agent is built.
    bound_hooks: tuple[str, ...]
    #: The compiled binders of hook callers (``dispatch``), by the hooks each binds, once asked
    #: for: the shape of the implementations is the same for every agent of the plan.
    binders: dict[tuple[str, ...], Binder] = attrs.field(factory=dict, eq=False)


_plans: dict[tuple[object, ...], _Plan] = {}
_NONE_UNUSED: frozenset[str] = frozenset()


def _plan(plugins: tuple[object, ...], process_wide: bool) -> _Plan:
    """The plan for ``plugins``: cached per combination of classes and their ``unused_hooks``,
    unless an instance carries implementations of its own (then it is validated by itself,
    every time). Whose ``unused_hooks`` count is decided once per plan, in ``_make_plan``."""
    kinds, unused, cacheable = [], [], True
    for p in plugins:  # one pass (each comprehension would be a call): every new agent comes here
        if isinstance(p, (type, types.ModuleType)):
            kinds.append(p)
        else:
            kinds.append(type(p))
            if cacheable and _has_instance_hooks(p):
                cacheable = False
        unused.append(getattr(p, "unused_hooks", None))
    classes, unused_hooks = tuple(kinds), tuple(unused)
    key = (classes, unused_hooks, process_wide)
    try:
        found = _plans.get(key) if cacheable else None
    except TypeError:  # an unhashable unused_hooks: _make_plan says what is wrong with it
        found, cacheable = None, False
    if found is None:
        found = _make_plan(plugins, classes, unused_hooks, process_wide)
        if cacheable:
            _plans[key] = found
    return found


def _make_plan(plugins: tuple[object, ...], kinds: tuple[object, ...], unused: tuple[object, ...], process_wide: bool) -> _Plan:
    """Policy packs first, then tryfirst, the others, trylast; later-registered first within
    each, except among trylast (pluggy inserts those at the front, so earlier-registered ones
    run first). A plugin's ``unused_hooks`` are left out."""
    published = [m for m in map(published_hookspecs, kinds) if m is not None]
    specs: SpecModules = _known_specs() if not published else tuple(dict.fromkeys([*_known_specs(), *published]))
    styles = _styles(specs)
    ranked: dict[str, list[tuple[bool, int, int, tuple[int, _Declaration]]]] = {}
    for position, (plugin, kind) in enumerate(zip(plugins, kinds, strict=True)):
        is_pack = bool(getattr(kind, "is_policy_pack", False))
        declarations = _declarations(plugin, specs, process_wide=process_wide)
        # An instance's own choice only: a class or a module has no options to narrow its hooks
        # by, and a policy pack is never narrowed (agent code could reach its class, and the
        # operator's policy is called in full).
        narrows = plugin is not kind and not isinstance(plugin, types.ModuleType) and not is_pack
        skipped = _checked_unused(plugin, unused[position], declarations) if narrows else _NONE_UNUSED
        for declaration in declarations:
            if declaration.hook in skipped:
                continue
            ranked.setdefault(declaration.hook, []).append(
                (not is_pack, declaration.order, position if declaration.order == 2 else -position, (position, declaration))
            )
    order = tuple((hook, tuple(entry for *_, entry in sorted(entries, key=_rank))) for hook, entries in ranked.items())
    names = tuple(plugin_name(kind) for kind in kinds)
    impls: dict[str, tuple[Impl | None, ...]] = {hook: () for hook in styles}
    for hook, entries in order:
        impls[hook] = tuple(
            None if d.shared is None else Impl(names[position], d.shared, position, d.shape, d.pick, d.argnames, d.kwargnames, d.is_async)
            for position, d in entries
        )
    return _Plan(
        names=names,
        specs=specs,
        styles=styles,
        impls=impls,
        to_bind=tuple((hook, entries) for hook, entries in order if None in impls[hook]),
        implemented=frozenset(hook for hook, _ in order),
        sync_hooks=frozenset(styles).difference(hook for hook, entries in order if any(d.is_async for _, d in entries)),
        handles_approvals=any(getattr(kind, "handles_approvals", False) for kind in kinds),
        argnames=_argnames(specs),
        bound_hooks=tuple(hook for hook, entries in order if not any(d.is_async for _, d in entries)),
    )


def _checked_unused(plugin: object, unused: object, declarations: tuple[_Declaration, ...]) -> frozenset[str]:
    """``plugin``'s ``unused_hooks``, each a hook it implements (a misspelt name would leave a
    hook called that its author meant to switch off)."""
    if not unused:
        return _NONE_UNUSED
    if not isinstance(unused, frozenset) or not all(isinstance(hook, str) for hook in unused):
        raise PluginError(f"plugin {plugin_name(plugin)!r}: unused_hooks must be a frozenset of hook names, got {unused!r}", plugin=plugin_name(plugin))
    strangers = sorted(unused - {d.hook for d in declarations})
    if strangers:
        raise PluginError(
            f"plugin {plugin_name(plugin)!r}: unused_hooks names {', '.join(map(repr, strangers))}, which it does not implement",
            plugin=plugin_name(plugin),
        )
    return unused


def _as_is(text: str) -> str:
    """The ``text_redaction`` of an agent without rules: one function for all of them."""
    return text


def _bound(plugin: object, name: str, d: _Declaration) -> Impl:
    """The implementation ``d`` bound to this agent's ``plugin`` (one that is not a shared function)."""
    function = types.MethodType(getattr(plugin, d.attribute), plugin) if d.binds_class else getattr(plugin, d.attribute)
    return Impl(name, function, -1, d.shape, d.pick, d.argnames, d.kwargnames, d.is_async)


class Hooks:
    """One agent's plugin registry, behind one typed method per core hook.

    Plugins are validated by pluggy (once per class) and called in pluggy's order: ``tryfirst``
    implementations, then the others, then ``trylast``; later-registered first within the first
    two groups, earlier-registered first among ``trylast`` (a conformance test holds this).
    Policy packs come before all of them, whatever the others declare: no plugin of agent code
    can answer, refuse or rewrite ahead of the operator's policy. Implementation lists are
    computed once, so a hook nobody implements costs one check.
    """

    def __init__(self, plugins: Iterable[object], *, process_wide: bool = False):
        self.plugins: tuple[object, ...] = tuple(plugins)
        self._timeout: float | None = None
        self._profile: HookProfile | None = None
        #: Unmeasured (no hook_timeout, no profile): implementations are called straight from
        #: ``_run``; otherwise each goes through ``_invoke``, which ``measure`` swaps.
        self._direct = True
        plugins = self.plugins
        plan = _plan(plugins, process_wide)
        names = plan.names
        self._by_name: dict[str, object] = dict(zip(names, plugins, strict=True))
        if len(self._by_name) < len(names):
            twice = next(name for name in names if names.count(name) > 1)
            raise ConfigError(f"plugin {twice!r} is activated twice in one agent; pass it once")
        self.specs: SpecModules = plan.specs
        self._plan = plan
        self._styles = plan.styles
        impls = plan.impls
        if plan.to_bind:  # a module's functions, static methods, functions set on an instance...
            impls = impls.copy()
            for hook, entries in plan.to_bind:
                impls[hook] = tuple(
                    shared if shared is not None else _bound(plugins[position], names[position], d)
                    for shared, (position, d) in zip(plan.impls[hook], entries, strict=True)
                )
        self._impls: dict[str, tuple[Impl, ...]] = impls  # type: ignore[assignment]  # every None bound above
        self._implemented = plan.implemented
        self._sync_hooks = plan.sync_hooks
        #: The hooks ``now`` answers on the spot: every all-sync hook, unmeasured; measured,
        #: only those declared sync (they are never measured).
        self._now = plan.sync_hooks
        #: Some active plugin asks people about ``needs_approval`` tools (``Agent.handles_approvals``).
        self.handles_approvals = plan.handles_approvals
        #: Every ``redact_text`` rule as one function of the text, when no rule takes the agent:
        #: it holds the rules' plugins, not the agent, so a store may keep it and redact later
        #: (``Agent.text_redaction``). The hook is declared sync, so it is never measured.
        self.text_redaction: Callable[[str], str] | None = self._text_redaction()
        #: Each hook's call compiled for these implementations (``dispatch``):
        #: ``hooks.callers["before_turn"](run)`` answers what ``now("before_turn", {"run": run})`` does.
        self.callers = self._bound_callers()

    def measure(self, *, timeout: float | None, profile: HookProfile | None) -> None:
        """Time every hook call into ``profile``, and/or fail a call of an async hook that takes
        longer than ``timeout`` seconds with a ``PluginError`` naming the plugin and the hook.

        With neither, hook calls go straight to the plugins: the measured path is swapped in
        only when asked for, so the loop pays nothing for it by default. A *sync* hook that
        blocks cannot be cut short (it holds the event loop); it is timed all the same.
        """
        self._timeout = timeout
        self._profile = profile
        self._direct = timeout is None and profile is None
        self._now = self._sync_hooks if self._direct else frozenset(h for h in self._sync_hooks if self._styles[h].is_sync)
        self.callers = self._bound_callers()  # what is answered on the spot changed
        if self._direct:
            self.__dict__.pop("_invoke", None)
        else:
            self._invoke = self._measured_invoke  # type: ignore[method-assign]

    async def _measured_invoke(self, impl: Impl, hook: str, kwargs: dict[str, Any]) -> Any:
        profile = self._profile
        if profile is None:
            return await self._limited_invoke(impl, hook, kwargs)
        wall, started = clock()
        failed = True
        try:
            result = await self._limited_invoke(impl, hook, kwargs)
            failed = False
            return result
        finally:
            profile.record(impl.plugin, hook, wall, clock()[1] - started, kwargs.get("run"), failed)

    async def _limited_invoke(self, impl: Impl, hook: str, kwargs: dict[str, Any]) -> Any:
        """``_invoke`` under ``hook_timeout`` for an async implementation (a sync one cannot be cut)."""
        if self._timeout is None or not impl.is_async:
            return await Hooks._invoke(self, impl, hook, kwargs)
        import asyncio  # loaded by the running loop already; kept out of `import bandoneon`

        try:
            async with asyncio.timeout(self._timeout):
                return await Hooks._invoke(self, impl, hook, kwargs)
        except TimeoutError:
            raise PluginError(
                f"plugin {impl.plugin!r} hung in {hook}: no answer within hook_timeout={self._timeout:g}s",
                plugin=impl.plugin,
                hook=hook,
            ) from None

    def deliver(self, run: RunContext | None, event: Event) -> Awaitable[None] | None:
        """``on_event`` for ``event``: delivered right here, and None returned, when every
        implementation is sync and calls are not measured (the common case, a dozen events a
        run: no coroutine each); otherwise the coroutine that delivers it. Errors are as in
        ``_run``: a plugin's failure is logged, never raised. The compiled caller itself (a run
        with no listeners calls it straight: a frame less per event)."""
        answer: Awaitable[None] | None = self.callers["on_event"](run, event)
        return answer

    def _text_redaction(self) -> Callable[[str], str] | None:
        """``text_redaction`` (see ``__init__``), made once per registry: None when a rule takes
        more than the text (the agent), so the rules cannot be held without it."""
        chain = []
        for impl in self._impls["redact_text"]:
            if impl.argnames != ("text",) or impl.kwargnames:
                return None
            chain.append((impl.function if impl.position < 0 else types.MethodType(impl.function, self.plugins[impl.position]), impl))
        if not chain:
            return _as_is

        def redact(text: str) -> str:
            for function, impl in chain:
                try:
                    result = function(text)
                except Exception as exc:
                    raise_named(exc, impl, "redact_text")
                if result is not None:
                    text = not_a_coroutine(result, impl, "redact_text")
            return text

        return redact

    def implements(self, spec: Callable[..., Any]) -> bool:
        """Whether any active plugin implements the hook ``spec`` (a hookspec function)."""
        return spec.__name__ in self._implemented

    def get(self, name: str) -> object | None:
        """The active plugin instance called ``name``, or None."""
        return self._by_name.get(name)

    # -------- the one call path

    async def _invoke(self, impl: Impl, hook: str, kwargs: dict[str, Any]) -> Any:
        """Call one implementation as pluggy would, await it if it is async, name it in errors."""
        result = start(impl, hook, kwargs, self.plugins)
        return await self._finish(impl, hook, result) if impl.is_async or type(result) is types.CoroutineType else result

    @staticmethod
    async def _finish(impl: Impl, hook: str, awaitable: Any) -> Any:
        try:
            return await awaitable
        except Exception as exc:
            raise_named(exc, impl, hook)

    def _invoke_sync(self, impl: Impl, hook: str, kwargs: dict[str, Any]) -> Any:
        """``_invoke`` for hooks called outside the event loop (their implementations are plain functions)."""
        return not_a_coroutine(start(impl, hook, kwargs, self.plugins), impl, hook)

    async def call(self, spec: Callable[..., Any], /, **kwargs: Any) -> Any:
        """Call the hook ``spec`` (a core hookspec or one a plugin publishes) in its declared style.

        First answer: the answer or None. Chained: the final value of the chained argument.
        Collecting: the list of non-None answers. Observing: None.
        """
        hook = spec.__name__
        self._style(hook)
        return await self._run(hook, kwargs)

    def call_sync(self, spec: Callable[..., Any], /, **kwargs: Any) -> Any:
        """``call`` for a hook declared ``sync=True`` (or process-wide): no event loop needed."""
        hook = spec.__name__
        if not self._style(hook).is_sync:
            raise TypeError(f"hook {hook!r} is not declared sync; await hooks.call(...) instead")
        return self.now(hook, kwargs)

    def now(self, hook: str, kwargs: dict[str, Any]) -> Any:
        """Call ``hook`` with ``kwargs`` (its arguments by name), as ``call`` does: the answer,
        worked out right here when every implementation is a plain function and calls are not
        measured (most hook calls of a run: no coroutine each); otherwise the coroutine that
        works it out (also when a plain function answers a coroutine: it has to wait, and the
        rest of the calls wait with it). No hook's answer is a coroutine, so the loop tells the
        two apart with ``if type(answer) is CoroutineType: answer = await answer``. Hooks
        declared sync are always answered here; a coroutine from one of them is refused.

        The loop calls ``callers[hook](...)`` instead, with the arguments by position: the same
        answer, without the dict."""
        style = self._style(hook)
        if not self._impls[hook]:  # nobody implements it (most of the hooks an agent calls once): nothing to bind
            return kwargs[style.chains] if style.chains is not None else [] if style.calls is _COLLECTING else None
        return self.callers[hook](*[kwargs[name] for name in self._plan.argnames[hook]])

    def _bound_callers(self) -> Callers:
        """Callers for this registry as it calls hooks now (bound when first used: ``_bind``)."""
        return Callers(weakref.ref(self))

    def _bind(self, callers: Callers) -> None:
        """Put into ``callers`` the caller of every hook answered on the spot that some plugin
        implements, in one call (one by one, each would cost a failed lookup and a call of its own)."""
        if self._direct:
            self._binder(self._plan.bound_hooks)(callers, weakref.ref(self), self._impls, self.plugins)

    def _binder(self, hooks: tuple[str, ...]) -> Binder:
        binders = self._plan.binders
        binder = binders.get(hooks)
        if binder is None:
            plan, impls = self._plan, self._impls
            binder = binders[hooks] = compile_binder([(hook, plan.argnames[hook], plan.styles[hook], impls[hook]) for hook in hooks])
        return binder

    def _compiled(self, hook: str) -> Callable[..., Any] | None:
        """The caller ``callers`` lacks for ``hook`` (None: no spec declares it)."""
        if hook not in self._styles:
            return None
        me, argnames = weakref.ref(self), self._plan.argnames[hook]
        if hook not in self._now:  # an implementation is async, or calls are measured: it waits

            def waiting(*arguments: Any) -> Any:
                return me()._run(hook, dict(zip(argnames, arguments, strict=True)))  # type: ignore[union-attr]  # called through the registry

            return waiting
        found = Callers(me)
        self._binder((hook,))(found, me, self._impls, self.plugins)
        return found[hook]

    def _style(self, hook: str) -> CallStyle:
        style = self._styles.get(hook)
        if style is None:
            raise PluginError(f"no active or installed plugin declares a hook named {hook!r}", hook=hook)
        return style

    async def _run(self, hook: str, kwargs: dict[str, Any], impls: tuple[Impl, ...] | None = None, results: list[Any] | None = None) -> Any:
        """Call every implementation of ``hook`` in order, awaiting what has to wait: an async
        one's answer, or a coroutine a plain function answered. From ``now``, ``impls`` and
        ``results`` are where it stopped: the implementations left and the answers so far."""
        style = self._styles[hook]
        calls = style.calls
        # Unmeasured (the default), a sync implementation is called without a coroutine of its
        # own: most hook calls of a run are sync, and a coroutine per call was the facade's cost.
        direct, plugins = self._direct, self.plugins
        if impls is None:
            impls = self._impls[hook]
            results = [] if calls is _COLLECTING else None
        for impl in impls:
            try:
                if direct:
                    result = start(impl, hook, kwargs, plugins)
                    if impl.is_async or type(result) is types.CoroutineType:
                        try:  # awaited here, not in _finish: one coroutine less per async call
                            result = await result
                        except Exception as exc:
                            raise_named(exc, impl, hook)
                else:
                    result = await self._invoke(impl, hook, kwargs)
            except PluginError as exc:
                if calls is not _OBSERVING:
                    raise
                _log.warning("%s (observer errors are not fatal)", exc)
                continue
            if result is None or calls is _OBSERVING:
                continue
            if calls is _FIRST:
                return result
            if calls is _CHAINED:
                if style.ends_with is not None and isinstance(result, style.ends_with):
                    return result
                chained: str = style.chains  # type: ignore[assignment]
                if style.fold is None:
                    kwargs[chained] = result
                else:
                    try:
                        kwargs[chained] = style.fold(kwargs[chained], result)
                    except Exception as exc:
                        raise_named(exc, impl, hook)
            else:
                results.append(result)  # type: ignore[union-attr]  # collecting: a list
        if calls is _CHAINED:
            return kwargs[style.chains]  # type: ignore[index]
        return results

    # -------- one typed method per core hook
    # Each hands back ``_run``'s coroutine rather than awaiting it in one of its own: the caller
    # awaits it the same way, and a run makes a dozen hook calls.

    def before_turn(self, run: RunContext) -> Awaitable[Stop | None]:
        return self._run("before_turn", {"run": run})

    def before_provider_call(self, run: RunContext, request: ModelRequest) -> Awaitable[ModelRequest]:
        return self._run("before_provider_call", {"run": run, "request": request})

    def before_tool_execution(self, run: RunContext, call: ToolCall, tool: Tool, arguments: dict[str, Any]) -> Awaitable[Refuse | Respond | None]:
        return self._run("before_tool_execution", {"run": run, "call": call, "tool": tool, "arguments": arguments})

    def after_tool_execution(self, run: RunContext, call: ToolCall, tool: Tool | None, result: ToolResult) -> Awaitable[ToolResult]:
        return self._run("after_tool_execution", {"run": run, "call": call, "tool": tool, "result": result})

    def tool_result_ready(self, run: RunContext, result: ToolResult) -> Awaitable[None]:
        return self._run("tool_result_ready", {"run": run, "result": result})

    def after_turn(self, run: RunContext, turn: Turn) -> Awaitable[None]:
        return self._run("after_turn", {"run": run, "turn": turn})

    def should_stop(self, run: RunContext, turn: Turn) -> Awaitable[Stop | None]:
        return self._run("should_stop", {"run": run, "turn": turn})

    def compact_history(self, run: RunContext, request: ModelRequest, window: int | None) -> Awaitable[Compacted | None]:
        return self._run("compact_history", {"run": run, "request": request, "window": window})

    def retry_delay(self, run: RunContext, error: Exception, attempt: int) -> Awaitable[Retry | None]:
        return self._run("retry_delay", {"run": run, "error": error, "attempt": attempt})

    def wrap_up(self, run: RunContext, stop: Stop) -> Awaitable[Message | None]:
        return self._run("wrap_up", {"run": run, "stop": stop})

    def check_answer(self, run: RunContext, answer: FinalAnswer) -> Awaitable[FinalAnswer | SendBack]:
        return self._run("check_answer", {"run": run, "answer": answer})

    def system_prompt_sections(self, run: RunContext) -> Awaitable[list[str]]:
        return self._run("system_prompt_sections", {"run": run})

    def before_run(self, run: RunContext) -> Awaitable[None]:
        return self._run("before_run", {"run": run})

    def after_run(self, run: RunContext, result: RunResult) -> Awaitable[None]:
        return self._run("after_run", {"run": run, "result": result})

    def on_event(self, run: RunContext | None, event: Event) -> Awaitable[None]:
        return self._run("on_event", {"run": run, "event": event})

    def agent_closed(self, agent: Agent[Any, Any]) -> Awaitable[None]:
        return self._run("agent_closed", {"agent": agent})

    def agent_created(self, agent: Agent[Any, Any]) -> None:
        self.now("agent_created", {"agent": agent})

    def check_tools(self, agent: Agent[Any, Any], tools: Mapping[str, Tool]) -> None:
        self.now("check_tools", {"agent": agent, "tools": tools})

    def redact_text(self, agent: Agent[Any, Any], text: str) -> str:
        redact = self.text_redaction
        if redact is not None:  # stores call this for every string they keep: straight
            return redact(text)
        answer: str = self.now("redact_text", {"agent": agent, "text": text})
        return answer

    def register_tools(self, agent: Agent[Any, Any]) -> list[Tool]:
        return [t for tools in self.now("register_tools", {"agent": agent}) for t in tools]

    def register_providers(self, register: Callable[..., None]) -> None:
        self._each_isolated(hookspecs.register_providers, register=register)

    def session_plugin(self, session_id: str, path: str | None) -> object | None:
        answer: object | None = self.now("session_plugin", {"session_id": session_id, "path": path})
        return answer

    def register_commands(self, subparsers: Any) -> None:
        self._each_isolated(hookspecs.register_commands, subparsers=subparsers)

    def _each_isolated(self, spec: Callable[..., Any], /, **kwargs: Any) -> None:
        """Process-wide registration runs for every command and model string: a plugin that
        raises here is skipped with a one-line warning naming it, and the others go on
        (DESIGN §4: one broken plugin never breaks the others)."""
        import warnings

        from .plugins import PluginImportWarning

        hook = spec.__name__
        self._style(hook)
        for impl in self._impls[hook]:
            try:
                self._invoke_sync(impl, hook, dict(kwargs))
            except Exception as exc:
                cause = exc.__cause__ if isinstance(exc, PluginError) and exc.__cause__ is not None else exc
                warnings.warn(f"plugin {impl.plugin!r} skipped: its {hook} raised {type(cause).__name__}: {cause}", PluginImportWarning, stacklevel=2)


def _rank(entry: tuple[bool, int, int, object]) -> tuple[bool, int, int]:
    """Policy packs first (whatever the others declare), then tryfirst/normal/trylast, then the
    later-registered first (earlier-registered first among trylast, as pluggy does)."""
    return entry[0], entry[1], entry[2]


@functools.cache
def _known_specs() -> SpecModules:
    """The core's hookspecs and those every installed plugin publishes."""
    return tuple(dict.fromkeys([hookspecs, *installed_hookspecs()]))


def forget_declarations() -> None:
    """Drop what was learned about plugin classes (``refresh_plugins`` calls this)."""
    _known.clear()
    _plans.clear()
    _styles.cache_clear()
    _known_specs.cache_clear()
    registration_hooks.cache_clear()


@functools.cache
def registration_hooks() -> Hooks:
    """Process-wide hooks over every importable installed plugin (class or module): providers, commands."""
    loaded = [entry.load() for entry in installed_plugins().values()]
    return Hooks((plugin for plugin in loaded if plugin is not None), process_wide=True)
