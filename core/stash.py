"""Typed per-run state for plugins: ``run.stash[KEY]`` with ``KEY = StashKey[T]()`` (pytest's idea).

A plugin creates its keys once, at import; nobody else can collide with them or read them by
accident, and a type checker knows what each holds. The core keeps its own state in fields of
``RunContext``, never in the stash.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Generic, TypeVar, overload

__all__ = ["Stash", "StashKey"]

T = TypeVar("T")
D = TypeVar("D")


class StashKey(Generic[T]):
    """A key of ``Stash`` whose values are ``T``. Compared by identity; ``name`` is for messages."""

    __slots__ = ("name",)

    def __init__(self, name: str = "") -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"StashKey({self.name!r})" if self.name else f"<StashKey at {id(self):#x}>"


class Stash:
    """What plugins keep for the length of one run, under typed keys."""

    __slots__ = ("_values", "get")

    def __init__(self) -> None:
        self._values: dict[StashKey[Any], Any] = {}
        # ``get`` is the dict's own: plugins read the stash on every event and hook call (a
        # tracer a dozen times a run), and a method of ours would add a Python call to each.
        self.get = self._values.get  # type: ignore[method-assign,assignment]

    def __setitem__(self, key: StashKey[T], value: T) -> None:
        self._values[key] = value

    def __getitem__(self, key: StashKey[T]) -> T:
        try:
            value: T = self._values[key]
        except KeyError:
            raise KeyError(f"nothing is stashed under {key!r} in this run") from None
        return value

    if TYPE_CHECKING:  # at run time, the instance's ``get`` (see ``__init__``)

        @overload
        def get(self, key: StashKey[T]) -> T | None: ...
        @overload
        def get(self, key: StashKey[T], default: D) -> T | D: ...
        def get(self, key: StashKey[T], default: object = None) -> object: ...

    def setdefault(self, key: StashKey[T], default: T) -> T:
        value: T = self._values.setdefault(key, default)
        return value

    @overload
    def pop(self, key: StashKey[T]) -> T | None: ...
    @overload
    def pop(self, key: StashKey[T], default: D) -> T | D: ...
    def pop(self, key: StashKey[T], default: object = None) -> object:
        return self._values.pop(key, default)

    def __delitem__(self, key: StashKey[T]) -> None:
        del self._values[key]

    def __contains__(self, key: object) -> bool:
        return key in self._values

    def __len__(self) -> int:
        return len(self._values)
