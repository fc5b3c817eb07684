"""The two markers of the plugin contract: ``hookspec`` declares a hook and how it is called,
``hookimpl`` marks an implementation.

The calling style is declared once, on the spec, and read by everything that needs it: the
hook facade (``bandoneon.hooks``), the generator of ``docs/hooks.md`` and the meta-tests. A
plugin publishing hooks of its own uses the same ``hookspec``.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Any, TypeVar

import attrs
import pluggy

__all__ = ["PROJECT", "CallStyle", "Calls", "call_style", "hookimpl", "hookspec", "hookspecs_in"]

#: The project name: pluggy's marker name, the entry-point group and the plugin-manager name.
PROJECT = "bandoneon"

hookimpl = pluggy.HookimplMarker(PROJECT)
_pluggy_hookspec = pluggy.HookspecMarker(PROJECT)

_F = TypeVar("_F", bound=Callable[..., Any])


class Calls(enum.Enum):
    """How the answers of a hook's implementations are combined."""

    #: The first non-None answer in call order wins; the rest are not called.
    FIRST = "first answer"
    #: Each implementation receives the previous one's answer in place of one argument.
    CHAINED = "chained"
    #: Every implementation is called; the non-None answers are gathered in call order.
    COLLECTING = "collecting"
    #: Every implementation is called for its effect; a failure is logged, never raised.
    OBSERVING = "observing"


@attrs.frozen
class CallStyle:
    """Everything the facade needs to know to call one hook."""

    calls: Calls
    #: For chained hooks: the argument each answer replaces for the next implementation.
    chains: str | None = None
    #: For chained hooks whose answer is only part of the chained argument: how an answer is
    #: folded into it (``after_tool_execution`` answers text; the chained value is the result).
    #: It may refuse an answer by raising: the error names the plugin that answered.
    fold: Callable[[Any, Any], Any] | None = None
    #: Implementations must be plain functions (the hook is called outside the event loop);
    #: an ``async def`` implementation is refused when the plugin is registered.
    is_sync: bool = False
    #: Called once per process on the plugin *class* (or module), before any agent exists.
    #: Implementations may be plain methods: the facade calls them without an instance.
    is_process_wide: bool = False
    #: For chained hooks: an answer of this type ends the chain and is the hook's answer
    #: (``check_answer``'s ``SendBack``); the implementations after it are not called.
    ends_with: type | None = None

    @property
    def short(self) -> str:
        """The style in a few words, as ``bandoneon plugins`` lists it: ``first answer``,
        ``chained on text, sync``, ``collecting, process-wide``."""
        words = f"{self.calls.value} on {self.chains}" if self.chains else self.calls.value
        if self.ends_with is not None:
            words += f" until a {self.ends_with.__name__}"
        if self.is_process_wide:
            return f"{words}, process-wide"
        return f"{words}, sync" if self.is_sync else words


def hookspec(
    calls: Calls,
    *,
    chains: str | None = None,
    fold: Callable[[Any, Any], Any] | None = None,
    sync: bool = False,
    process_wide: bool = False,
    ends_with: type | None = None,
) -> Callable[[_F], _F]:
    """Declare a hook and its calling style (``@hookspec(Calls.FIRST)``).

    Plugins publishing hooks of their own put such specs in a module and name it in their
    ``hookspecs`` class attribute; other plugins implement them with ``@hookimpl``.
    """
    if (calls is Calls.CHAINED) != (chains is not None):
        raise ValueError("chains= names the argument of a chained hook, and only of a chained hook")
    if ends_with is not None and calls is not Calls.CHAINED:
        raise ValueError("ends_with= ends the chain of a chained hook, and only of a chained hook")
    style = CallStyle(calls, chains, fold, sync or process_wide, process_wide, ends_with)

    def mark(function: _F) -> _F:
        if chains is not None and chains not in function.__code__.co_varnames[: function.__code__.co_argcount]:
            raise ValueError(f"hookspec {function.__name__}: chains={chains!r} is not one of its arguments")
        marked = _pluggy_hookspec(function)
        marked.bandoneon_style = style  # type: ignore[attr-defined]
        return marked

    return mark


def call_style(spec: Callable[..., Any]) -> CallStyle:
    """The calling style declared on ``spec`` (``TypeError`` if it is not a bandoneon hookspec)."""
    style = getattr(spec, "bandoneon_style", None)
    if not isinstance(style, CallStyle):
        raise TypeError(f"{spec!r} is not declared with bandoneon.hookspec(...)")
    return style


def hookspecs_in(module: object) -> dict[str, Callable[..., Any]]:
    """The hooks a spec module (or class) declares, by name, in the order it declares them."""
    return {name: spec for name, spec in vars(module).items() if callable(spec) and hasattr(spec, f"{PROJECT}_spec")}
