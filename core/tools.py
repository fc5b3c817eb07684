"""Tools: a typed function, the card the model reads, and the checks between the two.

``@tool`` takes the name from the function, the description from the docstring, the
parameters from the signature. The model's JSON is structured with cattrs before the
function runs; every problem comes back to the model as one short sentence.
"""

from __future__ import annotations

import inspect
import json
import typing
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar, overload

import attrs

from .context import RunContext
from .jsonlimits import DEFAULT_JSON_LIMITS, JsonLimitError, JsonLimits, loads_bounded
from .logs import deferred_logger
from .messages import ToolSpec
from .schema import is_optional, object_schema, parse_docstring, unwrap_annotated
from .structuring import StructureError, describe_value, structurer, unstructure
from .text import as_unicode

__all__ = ["CAPABILITIES", "ArgumentsError", "Tool", "tool"]

log = deferred_logger("bandoneon.tools")

#: Capabilities a tool may declare, read by policy plugins (the lethal trifecta of level 14).
CAPABILITIES = frozenset({"reads_private", "untrusted_output", "sends_out", "runs_code", "changes_world"})

F = TypeVar("F", bound=Callable[..., Any])


class ArgumentsError(Exception):
    """The model's arguments do not fit the tool. The message is written for the model."""


def _examples(items: Iterable[Mapping[str, Any]]) -> tuple[Mapping[str, Any], ...]:
    """The converter of ``Tool.examples`` (the builtin ``tuple`` has no item type for mypy)."""
    return tuple(items)


@attrs.frozen(eq=False)
class Tool:
    """A function the model may call, with the card it reads.

    Flags, read by plugins: ``terminal`` (a correct call ends the run, its input is the
    answer), ``needs_approval`` (a person says yes first), ``untrusted_output`` (its result is
    outside text), ``capabilities`` (for policy), ``timeout`` (seconds, overrides the agent's
    ``tool_timeout``), ``rerunnable`` (False: its results are never truncated by compaction).
    ``examples`` are sample arguments ``bandoneon tools check`` runs the tool on, to measure how
    much of the model's context window one result takes (level 3: measure the output).
    ``source_name``: the name the tool's source gave it, when the agent offers it under another
    (an MCP server's ``book_ticket`` beside a local one becomes ``rail_book_ticket``): a policy
    about that name must still hold for it, so plugins match rules against every one of
    ``names``.
    """

    name: str
    description: str
    parameters: Mapping[str, Any]
    function: Callable[..., Any]
    terminal: bool = False
    needs_approval: bool = False
    untrusted_output: bool = False
    capabilities: frozenset[str] = frozenset()
    timeout: float | None = None
    rerunnable: bool = True
    examples: tuple[Mapping[str, Any], ...] = attrs.field(default=(), converter=_examples)
    source_name: str | None = attrs.field(default=None, kw_only=True)
    _arguments_class: type | None = None
    _context_parameter: str | None = None
    _is_async: bool = False
    #: The card, made once: every new agent lists the specs of its tools.
    _spec: ToolSpec = attrs.field(init=False, repr=False)
    _names: tuple[str, ...] = attrs.field(init=False, repr=False)
    #: The model's arguments to the function's, made at the first call (``_arguments_reader``).
    _read_arguments: Callable[[dict[str, Any]], dict[str, Any]] | None = attrs.field(default=None, init=False, repr=False)

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "_spec", ToolSpec(self.name, self.description, self.parameters))
        source = self.source_name
        object.__setattr__(self, "_names", (self.name,) if source is None or source == self.name else (self.name, source))

    @property
    def spec(self) -> ToolSpec:
        return self._spec

    @property
    def names(self) -> tuple[str, ...]:
        """Its name, then the name its source gave it if that is another (``source_name``)."""
        return self._names

    def validate(self, raw_arguments: str, limits: JsonLimits = DEFAULT_JSON_LIMITS) -> dict[str, Any]:
        """Decode (within ``limits``) and structure the model's arguments; raise
        ``ArgumentsError`` with a sentence for the model."""
        try:
            data = loads_bounded(raw_arguments, limits) if raw_arguments and raw_arguments.strip() else {}
        except JsonLimitError as exc:
            raise ArgumentsError(f"The arguments for {self.name} were refused: {exc}. Send a smaller, flatter JSON object.") from None
        except json.JSONDecodeError as exc:
            raise ArgumentsError(
                f"The arguments for {self.name} are not valid JSON ({exc.msg} at character {exc.pos}). "
                f"Send one JSON object{_fields_hint(self.parameters)}."
            ) from None
        if not isinstance(data, dict):
            raise ArgumentsError(
                f"The arguments for {self.name} must be a JSON object, got {describe_value(data)}. "
                f"Send one JSON object{_fields_hint(self.parameters)}."
            )
        read = self._read_arguments
        if read is None:
            if self._arguments_class is None:
                return data
            read = self._arguments_reader(self._arguments_class)
        try:
            return read(data)
        except StructureError as exc:
            raise ArgumentsError(f"Invalid arguments for {self.name}: " + " ".join(exc.problems)) from None

    def _arguments_reader(self, arguments_class: type) -> Callable[[dict[str, Any]], dict[str, Any]]:
        """The arguments checked against ``arguments_class``, as keyword arguments; made once
        (a tool is called many times) and kept (the tool is frozen: set past its ``__setattr__``)."""
        structured: Callable[[Any], Any] = structurer(arguments_class)
        names = tuple(f.name for f in attrs.fields(arguments_class))

        def read(data: dict[str, Any]) -> dict[str, Any]:
            arguments = structured(data)
            return {name: getattr(arguments, name) for name in names}

        object.__setattr__(self, "_read_arguments", read)
        return read

    async def invoke(self, arguments: Mapping[str, Any], run: RunContext | None, *, in_thread: bool = False) -> str:
        """Run the function and turn what it returns into the text the model reads.

        A sync function runs on the event loop's thread (the fast path), or on a worker
        thread when ``in_thread`` (the loop does that when a timeout applies, so the wait
        can be cut). Python cannot kill a thread: one that outlives its timeout finishes in
        the background, on a daemon thread, so it never keeps the process alive.
        """
        kwargs = dict(arguments)
        if self._context_parameter:
            kwargs[self._context_parameter] = run
        if self._is_async:
            value = await self.function(**kwargs)
        else:
            if in_thread:
                value = await _in_daemon_thread(self.function, kwargs)
            else:
                value = self.function(**kwargs)
            if inspect.isawaitable(value):
                value = await value
        return to_text(value)


async def _in_daemon_thread(function: Callable[..., Any], kwargs: dict[str, Any]) -> Any:
    """``asyncio.to_thread`` on a daemon thread of its own: the executor's threads are joined
    when the interpreter exits, so a tool that hangs past its timeout would hold the process."""
    import asyncio  # already loaded by the running loop; kept out of `import bandoneon`
    import contextvars
    import threading

    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()
    context = contextvars.copy_context()

    def settle(value: Any, error: BaseException | None) -> None:
        if future.done():  # the caller stopped waiting (timeout, cancel)
            return
        if error is None:
            future.set_result(value)
        else:
            future.set_exception(error)

    def work() -> None:
        try:
            value, error = context.run(function, **kwargs), None
        except BaseException as exc:  # handed to the awaiting task, which decides
            value, error = None, exc
        try:
            loop.call_soon_threadsafe(settle, value, error)
        except RuntimeError:  # the loop is closed: nobody waits for this result any more
            pass

    threading.Thread(target=work, name=f"bandoneon-tool-{getattr(function, '__name__', 'tool')}", daemon=True).start()
    return await future


def to_text(value: Any) -> str:
    """What a tool returned, as the text that joins the history (``as_unicode``: a file name
    that is not UTF-8 must not fail the stores that keep the result)."""
    if isinstance(value, str):
        return as_unicode(value)
    if attrs.has(type(value)):
        value = unstructure(value)
    return as_unicode(json.dumps(value, ensure_ascii=False, default=str))


@overload
def tool(
    function: F,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    terminal: bool = False,
    needs_approval: bool = False,
    untrusted_output: bool = False,
    capabilities: Iterable[str] = (),
    timeout: float | None = None,
    rerunnable: bool = True,
    examples: Iterable[Mapping[str, Any]] = (),
) -> Tool: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    terminal: bool = False,
    needs_approval: bool = False,
    untrusted_output: bool = False,
    capabilities: Iterable[str] = (),
    timeout: float | None = None,
    rerunnable: bool = True,
    examples: Iterable[Mapping[str, Any]] = (),
) -> Callable[[F], Tool]: ...


def tool(function: Callable[..., Any] | None = None, /, **options: Any) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Turn a typed function (sync or async) into a ``Tool``.

    Parameter descriptions come from ``Annotated[T, "description"]`` or the docstring's
    ``Args:`` section. A parameter typed ``RunContext`` receives the run and is hidden from
    the model. Usable bare (``@tool``) or with options (``@tool(terminal=True)``).
    """
    if function is None:
        return lambda fn: make_tool(fn, **options)
    return make_tool(function, **options)


def make_tool(
    function: Callable[..., Any],
    *,
    name: str | None = None,
    description: str | None = None,
    terminal: bool = False,
    needs_approval: bool = False,
    untrusted_output: bool = False,
    capabilities: Iterable[str] = (),
    timeout: float | None = None,
    rerunnable: bool = True,
    examples: Iterable[Mapping[str, Any]] = (),
) -> Tool:
    examples = tuple(examples)
    for example in examples:
        if not isinstance(example, Mapping):
            raise TypeError(f"tool {function.__name__}: each of examples= is the arguments of one call, as a dict; got {example!r}")
    capabilities = frozenset(capabilities)
    unknown = capabilities - CAPABILITIES
    if unknown:
        raise ValueError(f"unknown tool capabilities {sorted(unknown)}; known: {sorted(CAPABILITIES)}")
    if untrusted_output:
        capabilities |= {"untrusted_output"}
    card = _card(function)
    return Tool(
        name=name or function.__name__,
        description=(description or card.description).strip(),
        parameters=card.parameters,
        function=function,
        terminal=terminal,
        needs_approval=needs_approval,
        untrusted_output=untrusted_output,
        capabilities=capabilities,
        timeout=timeout,
        rerunnable=rerunnable,
        examples=examples,
        arguments_class=card.arguments_class,
        context_parameter=card.context_parameter,
        is_async=card.is_async,
    )


@attrs.frozen
class _Card:
    """What a function's signature and docstring say about it as a tool."""

    description: str
    parameters: Mapping[str, Any]
    arguments_class: type | None
    context_parameter: str | None
    is_async: bool


#: Cards by what determines them (see ``_card_key``): plugins build their tools as closures or
#: bound methods anew for every agent, and reading the signature and making the arguments
#: class cost about 0.5 ms a tool. Bounded: cleared when full.
_cards: dict[tuple[Any, ...], _Card] = {}
_CARDS_KEPT = 1024


def _card(function: Callable[..., Any]) -> _Card:
    key = _card_key(function)
    card = _cards.get(key) if key is not None else None
    if card is None:
        card = _read_card(function)
        if key is not None:
            if len(_cards) >= _CARDS_KEPT:
                _cards.clear()
            _cards[key] = card
    return card


def _card_key(function: Callable[..., Any]) -> tuple[Any, ...] | None:
    """Everything the card is read from: the code, where its string annotations resolve, the
    name, docstring, defaults and annotations, and whether ``self`` is bound. Two closures of
    one ``def`` (a plugin's tool, made per agent) share a key; a callable object or a function
    with unhashable defaults has none and is read every time."""
    target = getattr(function, "__func__", function)
    code = getattr(target, "__code__", None)
    if code is None or not inspect.isfunction(target):
        return None
    kwdefaults = target.__kwdefaults__
    key = (
        code,
        target.__module__,
        target.__name__,
        target.__doc__,
        target.__defaults__,
        tuple(sorted(kwdefaults.items())) if kwdefaults else None,
        tuple(target.__annotations__.items()),
        target is not function,
    )
    try:
        hash(key)
    except TypeError:
        return None
    return key


def _read_card(function: Callable[..., Any]) -> _Card:
    doc_description, doc_params = parse_docstring(function.__doc__)
    hints = typing.get_type_hints(function, include_extras=True)
    fields: dict[str, tuple[Any, bool]] = {}
    attrs_fields: dict[str, Any] = {}
    context_parameter = None
    for param in inspect.signature(function).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(f"tool {function.__name__}: *args and **kwargs cannot be described to a model")
        annotation = hints.get(param.name, Any)
        if _is_run_context(annotation):
            context_parameter = param.name
            continue
        required = param.default is inspect.Parameter.empty
        fields[param.name] = (annotation, required)
        base_type = unwrap_annotated(annotation)[0]
        attrs_fields[param.name] = attrs.field(
            type=base_type, default=attrs.NOTHING if required else param.default, kw_only=True
        )
    return _Card(
        description=doc_description,
        parameters=object_schema(fields, descriptions=doc_params),
        # Made for a function without parameters too: arguments it does not take are refused
        # to the model as for any other tool, not passed on to fail the call.
        arguments_class=attrs.make_class(f"{function.__name__}_arguments", attrs_fields, frozen=True),
        context_parameter=context_parameter,
        is_async=inspect.iscoroutinefunction(function),
    )


def _is_run_context(annotation: Any) -> bool:
    base = unwrap_annotated(annotation)[0]
    return base is RunContext or (is_optional(base) and RunContext in typing.get_args(base))


def _fields_hint(parameters: Mapping[str, Any]) -> str:
    names = list(parameters.get("properties", {}))
    return f" with the fields {', '.join(names)}" if names else ""
