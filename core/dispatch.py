"""Each hook's call, compiled for one agent's implementations (``Hooks.callers``).

``hooks.callers["compact_history"](run, request, window)`` answers what ``Hooks.now`` answers
for those arguments, written out for the implementations this agent has: each is called by
name with the arguments it takes, and the answers are combined as the hook's style says, with
no arguments dict, no generic loop and no frame per implementation. On this code path, the
loop's most frequent, the generic call cost four times what the plugin's own method did
(issue #19). The source is generated, as attrs generates ``__init__``: once per process for
each shape of an agent's hooks (which hooks, how many implementations each, which arguments each
takes, bound or shared), so a new agent only binds its plugins, in one call, to a compiled binder.
"""

from __future__ import annotations

import types
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

import attrs

from .errors import BandoneonError, PluginError
from .logs import deferred_logger
from .markers import Calls, CallStyle

if TYPE_CHECKING:
    from .hooks import Hooks

__all__ = ["Binder", "Callers", "Entry", "Impl", "compile_binder", "not_a_coroutine", "raise_named", "start"]

_log = deferred_logger("bandoneon.hooks")


@attrs.define(eq=False)
class Impl:
    """One implementation as ``start`` calls it: ``function`` with the instance of the plugin at
    ``position`` in the agent's plugins first (a function shared by every agent of a plan), or,
    with ``position`` -1, ``function`` bound to one agent's plugin already. Plain slots (a frozen
    class pays ``object.__setattr__`` per field); never changed."""

    plugin: str
    function: Callable[..., Any]
    position: int
    shape: int  # see _Declaration.shape
    pick: Callable[[dict[str, Any]], Any] | None
    argnames: tuple[str, ...]
    kwargnames: tuple[str, ...]
    is_async: bool


def raise_named(exc: Exception, impl: Impl, hook: str) -> NoReturn:
    """Raise what ``named`` makes of ``exc`` (the error itself, or a ``PluginError`` from it)."""
    error = named(exc, impl, hook)
    if error is exc:
        raise exc
    raise error from exc


def named(exc: Exception, impl: Impl, hook: str) -> Exception:
    """The error a plugin raised, with the plugin named: a bandoneon error keeps its type (a note
    says where it came from), anything else becomes a ``PluginError``."""
    if isinstance(exc, BandoneonError):
        exc.add_note(f"raised by plugin {impl.plugin!r} in {hook}")
        return exc
    return PluginError(f"plugin {impl.plugin!r} failed in {hook}: {type(exc).__name__}: {exc}", plugin=impl.plugin, hook=hook)


def not_a_coroutine(result: Any, impl: Impl, hook: str) -> Any:
    """``result``, unless a plain function answered a coroutine where nothing can await it (a
    hook declared sync): refused, naming the plugin."""
    if isinstance(result, types.CoroutineType):
        result.close()
        raise PluginError(f"plugin {impl.plugin!r}: {hook} must not be async (it returned a coroutine)", plugin=impl.plugin, hook=hook)
    return result


def resumed(impl: Impl, waiting: Any, impls: tuple[Impl, ...]) -> tuple[Impl, ...]:
    """The calls ``_run`` has left when ``impl``, called on the spot by a compiled caller,
    answered the coroutine ``waiting``: awaiting it (as if ``impl`` were async, so errors name
    it), then the implementations after ``impl``."""
    pending = Impl(impl.plugin, lambda: waiting, -1, 0, None, (), (), True)
    return (pending, *impls[impls.index(impl) + 1 :])


def start(impl: Impl, hook: str, kwargs: dict[str, Any], plugins: tuple[object, ...]) -> Any:
    """Call ``impl`` with the arguments it names (after the agent's instance of its plugin, for a
    shared function): its result, or the awaitable of an async one. How the general path
    (``Hooks._run``: what waits, measured calls) calls an implementation; the compiled callers
    write the same call out for each implementation."""
    try:
        shape = impl.shape
        if shape:
            arguments = impl.pick(kwargs) if shape == 2 else (impl.pick(kwargs),)  # type: ignore[misc]
            if impl.position < 0:
                return impl.function(*arguments)
            return impl.function(plugins[impl.position], *arguments)
        positional = [kwargs[a] for a in impl.argnames]
        if impl.position >= 0:
            positional.insert(0, plugins[impl.position])
        return impl.function(*positional, **{a: kwargs[a] for a in impl.kwargnames})
    except Exception as exc:
        raise_named(exc, impl, hook)


class Callers(dict[str, Callable[..., Any]]):
    """One agent's hook callers by hook name (``hooks.callers["before_turn"](run)``): those of
    the hooks its plugins implement all bound at the first call of any (in one call: an agent
    that never runs binds nothing), any other built when first asked for; ``KeyError`` for a
    hook no spec declares. Built again when the registry starts or stops measuring its calls
    (``Hooks.measure``). A dict: a caller costs one lookup in C."""

    __slots__ = ("_hooks", "_is_bound")

    def __init__(self, hooks: weakref.ref[Hooks]):  # no dict.__init__ call: it would only add a frame per agent
        # A weak reference, as in every caller: the registry holds its callers, and a cycle
        # would leave each agent to the cycle collector instead of freeing it when dropped.
        self._hooks = hooks
        self._is_bound = False

    def __missing__(self, hook: str) -> Callable[..., Any]:
        hooks = self._hooks()
        assert hooks is not None, "a registry's callers outlived it"
        if not self._is_bound:
            self._is_bound = True
            hooks._bind(self)
            if hook in self:
                return self[hook]
        caller = hooks._compiled(hook)
        if caller is None:
            raise KeyError(f"no active or installed plugin declares a hook named {hook!r}")
        self[hook] = caller
        return caller


#: What a binder is compiled from: per hook, its name, its arguments, its style and its implementations.
Entry = tuple[str, tuple[str, ...], CallStyle, Sequence[Impl]]
#: A compiled binder: ``binder(callers, hooks, impls, plugins)`` puts into ``callers`` the caller
#: of each hook it was compiled for, bound to this agent's ``impls`` (``Hooks._impls``) and
#: ``plugins``; ``hooks`` is a weak reference to the registry (its ``_run`` awaits what must wait).
Binder = Callable[[Callers, "weakref.ref[Hooks]", Mapping[str, Sequence[Impl]], Sequence[object]], None]

_binders: dict[tuple[Any, ...], Binder] = {}


def compile_binder(entries: Sequence[Entry]) -> Binder:
    """The binder of these hooks' callers, compiled once per process for each shape of them
    (which hooks, how many implementations each, which arguments each takes, bound or shared)."""
    key = tuple((hook, argnames, style, tuple((i.argnames, i.kwargnames, i.position >= 0) for i in impls)) for hook, argnames, style, impls in entries)
    binder = _binders.get(key)
    if binder is None:
        binder = _binders[key] = _compile(key)
    return binder


def _compile(shapes: tuple[tuple[str, tuple[str, ...], CallStyle, tuple[tuple[tuple[str, ...], tuple[str, ...], bool], ...]], ...]) -> Binder:
    """The binder's source, compiled: one nested function per hook, its names prefixed with
    ``_b_h<n>_``. A hook's arguments are its function's parameters ``_b_a0``, ``_b_a1``... in
    the spec's order, and every other name starts with ``_b_`` too, so no argument name of a
    published hook can clash with them."""
    source = ["def binder(_b_callers, _b_hooks, _b_all, _b_plugins):"]
    namespace: dict[str, Any] = {
        "_b_raise_named": raise_named,
        "_b_not_a_coroutine": not_a_coroutine,
        "_b_resumed": resumed,
        "_b_Coroutine": types.CoroutineType,
        "_b_PluginError": PluginError,
        "_b_log": _log,
    }
    for number, (hook, argnames, style, impls) in enumerate(shapes):
        source += _indented(_hook_source(f"_b_h{number}", hook, argnames, style, impls))
        namespace[f"_b_h{number}_fold"], namespace[f"_b_h{number}_ends"] = style.fold, style.ends_with
    source.append("    pass")
    exec(compile("\n".join(source), f"<bandoneon hook callers: {', '.join(hook for hook, *_ in shapes) or 'none'}>", "exec"), namespace)  # noqa: S102  # our own source, built above
    binder: Binder = namespace["binder"]
    return binder


def _hook_source(name: str, hook: str, argnames: tuple[str, ...], style: CallStyle, shapes: tuple[tuple[tuple[str, ...], tuple[str, ...], bool], ...]) -> list[str]:
    """The lines that bind one hook's caller (called ``name``) and store it in ``_b_callers``."""
    calls = style.calls
    local = {argument: f"_b_a{index}" for index, argument in enumerate(argnames)}
    as_dict = "{" + ", ".join(f"{argument!r}: {local[argument]}" for argument in argnames) + "}"
    so_far = "_b_results" if calls is Calls.COLLECTING else "None"
    chained = local[style.chains] if style.chains is not None else ""
    # The functions to call and the instances they take (shared functions), taken out of the
    # agent's implementations once per agent. The implementations themselves (errors name them,
    # a wait resumes after them) are looked up only on those rare paths: a closure's cell less each.
    impls = f"_b_hooks()._impls[{hook!r}]"
    taken = []
    body = ["_b_results = []"] if calls is Calls.COLLECTING else []
    for index, (positional, keywords, is_shared) in enumerate(shapes):
        impl, function, instance = f"{impls}[{index}]", f"{name}_f{index}", f"{name}_s{index}"
        taken.append(f"{function} = _b_all[{hook!r}][{index}].function")
        if is_shared:
            taken.append(f"{instance} = _b_plugins[_b_all[{hook!r}][{index}].position]")
        arguments = [instance] if is_shared else []
        arguments += [local[argument] for argument in positional]
        arguments += [f"{argument}={local[argument]}" for argument in keywords]
        call = ["try:", f"    _b_r = {function}({', '.join(arguments)})", "except Exception as _b_exc:", f"    _b_raise_named(_b_exc, {impl}, {hook!r})"]
        if style.is_sync:  # nothing can await it: refused, naming the plugin
            waiting = ["if type(_b_r) is _b_Coroutine:", f"    _b_not_a_coroutine(_b_r, {impl}, {hook!r})"]
        else:  # it has to wait, and the calls after it with it
            waiting = ["if type(_b_r) is _b_Coroutine:", f"    return _b_hooks()._run({hook!r}, {as_dict}, _b_resumed({impl}, _b_r, {impls}), {so_far})"]
        if calls is Calls.OBSERVING:  # an observer's error is logged, and the others go on
            body += ["try:", *_indented(call), "    if _b_r is not None:", *_indented(waiting, 2)]
            body += ["except _b_PluginError as _b_exc:", "    _b_log.warning('%s (observer errors are not fatal)', _b_exc)"]
            continue
        body += [*call, "if _b_r is not None:", *_indented(waiting)]
        if calls is Calls.FIRST:
            body.append("    return _b_r")
        elif calls is Calls.CHAINED:
            if style.ends_with is not None:
                body += [f"    if isinstance(_b_r, {name}_ends):", "        return _b_r"]
            if style.fold is None:
                body.append(f"    {chained} = _b_r")
            else:  # a fold that refuses the answer names its plugin, as the call's error does
                fold = ["try:", f"    {chained} = {name}_fold({chained}, _b_r)", "except Exception as _b_exc:", f"    _b_raise_named(_b_exc, {impl}, {hook!r})"]
                body += _indented(fold)
        else:
            body.append("    _b_results.append(_b_r)")
    body.append(f"return {chained or so_far}")
    return [*taken, f"def {name}({', '.join(local.values())}):", *_indented(body), f"_b_callers[{hook!r}] = {name}"]


def _indented(lines: list[str], levels: int = 1) -> list[str]:
    return [" " * (4 * levels) + line for line in lines]
