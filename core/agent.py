"""The Agent: a model, tools, a system prompt, plugins, and the history it carries across runs."""

from __future__ import annotations

import inspect
import os
import random
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Self, overload

import attrs

from . import hookspecs
from .config import OPTION_RANGES, Config, configured_base_url, configured_model, load_config
from .context import RunContext
from .errors import ConfigError, RunInProgress
from .files import stat_if_present
from .hooks import Hooks
from .hooktiming import HookProfile
from .jsonlimits import DEFAULT_JSON_LIMITS, JsonLimits
from .logs import deferred_logger
from .messages import NO_USAGE, Message, ToolSpec, Usage, map_texts
from .output import OutputMode, OutputSpec, is_plain_text, output_spec
from .parts import Part, Prompt, part_kinds, split_prompt
from .plugins import PluginsArgument, activate, configured_plugins
from .providers.base import OPENAI_PREFIXES, Provider, resolve_model
from .providers.windows import known_window
from .result import OutputT, RunResult
from .tools import Tool, tool

if TYPE_CHECKING:  # asyncio is imported when a run starts: `import bandoneon` (a CLI, a config check) does not pay for it
    import asyncio

    from typing_extensions import TypeVar

    from .events import Event

    DepsT = TypeVar("DepsT", default=Any)  # see result.py: defaults exist for type checkers only
    _LoopEntry = tuple[Callable[[], asyncio.Task[Any] | None], Callable[[RunContext], Awaitable[RunResult[Any]]]]
else:
    from typing import TypeVar

    DepsT = TypeVar("DepsT")

#: The output type of one run that overrides the agent's.
RunOutputT = TypeVar("RunOutputT")
#: The class of a plugin asked for with ``agent.plugin(Class)``.
PluginT = TypeVar("PluginT")

__all__ = ["Agent"]

log = deferred_logger("bandoneon.agent")

DEFAULT_CONTEXT_FILES = ("AGENTS.md", "CLAUDE.md")
_DEFAULT_CONTEXT_PATHS = tuple(map(Path, DEFAULT_CONTEXT_FILES))  # paths are immutable: one tuple for every agent


class Agent(Generic[DepsT, OutputT]):
    """A model with tools and a history, extended by plugins.

    ``model`` is a provider object or a model string (``"openai:gpt-4o-mini"``,
    ``"ollama:llama3.1"``, ``"openai-compatible:MODEL@http://host:port/v1"``, ``"local:"``);
    when None it comes from ``bandoneon.toml``, then ``$BANDONEON_MODEL`` /
    ``$BANDONEON_BASE_URL``, then the embedded local model if ``bandoneon-local`` is installed.
    A list (``["vllm:big", "ollama:small"]``) is the model and its fallbacks: when a model call
    keeps failing on retryable errors after its retries, the next model takes over for the
    rest of the run (``model_fallback`` event; ``RunResult.usage_by_model``).

    ``plugins=None`` activates the installed recommended defaults; ``plugins=[]`` none;
    a list of instances or names, or ``{"name": {options}}``. Installed policy packs are
    always active. ``context_files`` (default: AGENTS.md and CLAUDE.md of ``cwd``) are
    re-read on every run and appended to the system prompt; ``False`` turns them off.
    ``json_limits`` bounds the depth and size of the model's tool arguments (default 100
    levels, 64 MiB; see ``JsonLimits``). ``hook_timeout`` (off by default) fails a run whose
    async hook hangs longer than that many seconds with a ``PluginError`` naming the plugin and
    the hook; ``agent.profile_hooks()`` times every hook call per plugin.

    ``output_type`` asks for a typed answer (an attrs class, a dataclass, a TypedDict, a
    primitive, ``list[...]``, a ``Literal`` or a union of these): ``RunResult.output`` is then
    that value, checked; ``output_mode`` says how it is asked for (``auto``, ``native``,
    ``tool``; see ``bandoneon.output``) and ``output_retries`` how many answers that do not fit
    are sent back before the run ends with ``stop="invalid_output"``. ``deps_type`` types the
    ``deps`` of ``run`` (``Agent[Deps, Output]`` for type checkers; checked when it is a class).
    ``max_send_backs`` bounds how often ``check_answer`` hooks may send an answer back before
    the run ends with ``stop="answer_refused"``.
    """

    # Slots: an agent has some forty attributes, past the thirty an instance's shared-key dict
    # holds, so each new agent built a dict of its own (~1.5 KB, the slowest attribute reads
    # on every step of the loop). ``__dict__`` stays: a subclass or a test may add its own.
    __slots__ = (
        "__dict__",
        "__weakref__",
        "_cancel_requested",
        "_context_cache",
        "_fallbacks",
        "_history_resets",
        "_init_arguments",
        "_listeners",
        "_messages",
        "_output_specs",
        "_redacts",
        "_running",
        "_task",
        "_tool_specs",
        "_transcript",
        "_window",
        "_window_known",
        "append_system_prompt",
        "config",
        "context_files",
        "cwd",
        "deps_type",
        "hook_profile",
        "hook_timeout",
        "hooks",
        "json_limits",
        "max_send_backs",
        "max_tool_concurrency",
        "max_turns",
        "name",
        "output_mode",
        "output_retries",
        "output_type",
        "provider",
        "run_timeout",
        "settings",
        "system_prompt",
        "tool_choice",
        "tool_timeout",
        "tools",
        "turn_timeout",
        "usage",
    )

    @overload
    def __init__(
        self,
        model: str | Provider | Sequence[str | Provider] | None = None,
        *,
        tools: Iterable[Tool | Callable[..., Any]] = (),
        system_prompt: str | None = None,
        append_system_prompt: str = "",
        context_files: bool | Sequence[str | os.PathLike[str]] = True,
        max_turns: int | None = None,
        plugins: PluginsArgument = None,
        run_timeout: float | None = None,
        tool_timeout: float | None = None,
        turn_timeout: float | None = None,
        hook_timeout: float | None = None,
        max_tool_concurrency: int | None = None,
        tool_choice: str | dict[str, Any] | None = None,
        settings: dict[str, Any] | None = None,
        context_window: int | None = None,
        cwd: str | os.PathLike[str] | None = None,
        config: Config | str | os.PathLike[str] | None = None,
        name: str = "agent",
        json_limits: JsonLimits = DEFAULT_JSON_LIMITS,
        output_type: type[OutputT] | None = None,
        output_mode: OutputMode = "auto",
        output_retries: int = 2,
        deps_type: type[DepsT] | None = None,
        max_send_backs: int = 2,
    ) -> None: ...
    # A Literal or a union is not a ``type`` to type checkers (until PEP 747's TypeForm): the agent
    # is then Agent[Any, Any]; annotate it (``agent: Agent[None, Cat | Dog] = Agent(...)``) to type it.
    @overload
    def __init__(
        self: Agent[Any, Any],
        model: str | Provider | Sequence[str | Provider] | None = None,
        *,
        tools: Iterable[Tool | Callable[..., Any]] = (),
        system_prompt: str | None = None,
        append_system_prompt: str = "",
        context_files: bool | Sequence[str | os.PathLike[str]] = True,
        max_turns: int | None = None,
        plugins: PluginsArgument = None,
        run_timeout: float | None = None,
        tool_timeout: float | None = None,
        turn_timeout: float | None = None,
        hook_timeout: float | None = None,
        max_tool_concurrency: int | None = None,
        tool_choice: str | dict[str, Any] | None = None,
        settings: dict[str, Any] | None = None,
        context_window: int | None = None,
        cwd: str | os.PathLike[str] | None = None,
        config: Config | str | os.PathLike[str] | None = None,
        name: str = "agent",
        json_limits: JsonLimits = DEFAULT_JSON_LIMITS,
        output_type: object,
        output_mode: OutputMode = "auto",
        output_retries: int = 2,
        deps_type: type[Any] | None = None,
        max_send_backs: int = 2,
    ) -> None: ...
    def __init__(
        self,
        model: str | Provider | Sequence[str | Provider] | None = None,
        *,
        tools: Iterable[Tool | Callable[..., Any]] = (),
        system_prompt: str | None = None,
        append_system_prompt: str = "",
        context_files: bool | Sequence[str | os.PathLike[str]] = True,
        max_turns: int | None = None,
        plugins: PluginsArgument = None,
        run_timeout: float | None = None,
        tool_timeout: float | None = None,
        turn_timeout: float | None = None,
        hook_timeout: float | None = None,
        max_tool_concurrency: int | None = None,
        tool_choice: str | dict[str, Any] | None = None,
        settings: dict[str, Any] | None = None,
        context_window: int | None = None,
        cwd: str | os.PathLike[str] | None = None,
        config: Config | str | os.PathLike[str] | None = None,
        name: str = "agent",
        json_limits: JsonLimits = DEFAULT_JSON_LIMITS,
        output_type: Any = None,
        output_mode: OutputMode = "auto",
        output_retries: int = 2,
        deps_type: type[Any] | None = None,
        max_send_backs: int = 2,
    ):
        self._init_arguments = dict(locals())
        del self._init_arguments["self"]
        self.config = config if isinstance(config, Config) else load_config(config)
        self.name = name
        self.cwd = Path(cwd) if cwd is not None else None
        arguments = self._init_arguments
        for option in _UNSET_WHEN_NONE:
            value = arguments[option]
            if value is not None:
                OPTION_RANGES[option].check(option, value)
        OPTION_RANGES["output_retries"].check("output_retries", output_retries)
        self.max_turns = max_turns if max_turns is not None else (self.config.max_turns or 25)
        self.run_timeout = run_timeout if run_timeout is not None else self.config.run_timeout
        self.tool_timeout = tool_timeout if tool_timeout is not None else self.config.tool_timeout
        self.turn_timeout = turn_timeout
        self.hook_timeout = hook_timeout
        self.hook_profile: HookProfile | None = None
        self.max_tool_concurrency = max_tool_concurrency
        self.json_limits = json_limits
        self.tool_choice = tool_choice
        self.settings = dict(settings or {})
        self.system_prompt = system_prompt if system_prompt is not None else (self.config.system_prompt or "")
        self.append_system_prompt = append_system_prompt
        if context_files is True:
            self.context_files: tuple[Path, ...] = _DEFAULT_CONTEXT_PATHS
        elif context_files is False:
            self.context_files = ()
        else:
            self.context_files = tuple(Path(f) for f in context_files)
        self._context_cache: dict[str, tuple[tuple[int, int], str]] = {}
        configured_window = context_window or self.config.context_window
        #: The model's window once known (configured, or learned on first use): the loop reads
        #: it per request without a coroutine while ``_window_known`` says it is known.
        self._window: int | None = configured_window or None
        self._window_known = bool(configured_window)
        fallbacks: Sequence[str | Provider] = ()
        if isinstance(model, Sequence) and not isinstance(model, str):
            if not model:
                raise ConfigError("model is an empty list; give one model, or a list whose first entry is the model and the rest its fallbacks")
            model, *fallbacks = model
        chosen_model, provider_options = self._model_choice(model)
        self._fallbacks: list[Provider] = []
        try:
            self.provider = resolve_model(chosen_model, **provider_options)
        except ConfigError as exc:
            if model is None and chosen_model == "local:":
                raise ConfigError(
                    "no model is configured: pass Agent(model=...) or --model, set BANDONEON_MODEL "
                    "(e.g. ollama:llama3.1) or `model` in bandoneon.toml, or install bandoneon-local "
                    "for the embedded default model"
                ) from None
            if model is None and self.config.model:  # the file's model: say which file
                raise ConfigError(f"{self.config.source}: {exc}") from None
            raise
        for fallback in fallbacks:
            self.add_fallback(fallback)
        if plugins is None and self.config.plugins:
            plugins = configured_plugins(self.config.plugins, source=self.config.source)
        self.hooks = Hooks(activate(plugins))  # None: the installed defaults (and the policy packs)
        self._redacts = self.hooks.implements(hookspecs.redact_text)
        OPTION_RANGES["max_send_backs"].check("max_send_backs", max_send_backs)
        self.max_send_backs = max_send_backs
        if hook_timeout is not None:
            self.hooks.measure(timeout=hook_timeout, profile=None)
        self.output_type = output_type
        self.output_mode = output_mode
        self.output_retries = output_retries
        self.deps_type = deps_type
        self.tools: dict[str, Tool] = {}
        self._tool_specs: tuple[ToolSpec, ...] = ()
        built: dict[str, Tool] = {}
        for item in [*tools, *self.hooks.register_tools(self)]:
            new = _as_tool(item, built)
            built[new.name] = new
        self.hooks.check_tools(self, built)
        self._set_tools(built)
        self._output_specs: dict[tuple[Any, bool, int], OutputSpec | None] = {}
        self._output_spec(output_type)  # a type no model can fill in fails here, not mid-run
        self._messages: list[Message] = []
        self._transcript: list[Message] = []
        self._history_resets = 0
        self._listeners: dict[str, list[Callable[[Event], Any]]] = {}
        self._running = False
        self._cancel_requested = False
        self._task: asyncio.Task[Any] | None = None
        self.usage = NO_USAGE
        self.hooks.agent_created(self)

    # ---------------------------------------------------------------- configuration

    def _model_choice(self, model: str | Provider | None) -> tuple[str | Provider, dict[str, Any]]:
        return choose_model(self.config, model)

    def add_fallback(self, model: str | Provider) -> Provider:
        """One more model to try, after the others, when a model call keeps failing on errors
        worth retrying (429, 5xx, network) once its retries are spent. Returns its provider."""
        chosen, options = self._model_choice(model)
        provider = resolve_model(chosen, **options)
        self._fallbacks.append(provider)
        return provider

    @property
    def models(self) -> tuple[Provider, ...]:
        """The model and its fallbacks, in the order they are tried."""
        return (self.provider, *self._fallbacks)

    def add_tool(self, item: Tool | Callable[..., Any]) -> Tool:
        """Give the built agent one more tool (a ``Tool`` or a typed function).

        This is the one way to add a tool after the agent exists (a plugin that learns its
        tools late, such as an MCP client, goes through it too): every plugin's
        ``check_tools`` sees the new tool set first, so a policy (the lethal trifecta) holds
        as it did when the agent was built. A refusal raises ``ConfigError`` and the tool is
        not added. The next model request offers the tool.
        """
        new = _as_tool(item, self.tools)
        tools = {**self.tools, new.name: new}
        self.hooks.check_tools(self, tools)
        self._set_tools(tools)
        return new

    def remove_tool(self, name: str) -> Tool:
        """Take the tool ``name`` off the built agent (a plugin whose source stopped offering it,
        such as an MCP server that no longer lists it); the next model request no longer offers
        it, and a call the model still makes is answered as an unknown tool. Every plugin's
        ``check_tools`` sees the smaller set. ``KeyError`` if the agent has no such tool."""
        removed = self.tools[name]
        tools = {key: tool for key, tool in self.tools.items() if key != name}
        self.hooks.check_tools(self, tools)
        self._set_tools(tools)
        return removed

    def _set_tools(self, tools: dict[str, Tool]) -> None:
        # In place: a run in progress holds this very mapping (``RunContext.tools``).
        self.tools.clear()
        self.tools.update(tools)
        self._tool_specs = tuple(t.spec for t in self.tools.values())

    @property
    def redacts(self) -> bool:
        """Does any active plugin mask what stores keep (``redact_text``)? Stores may skip work when not."""
        return self._redacts  # an agent's plugins are fixed when it is built

    def redact(self, value: Any) -> Any:
        """``value`` as a store may keep it: every plugin's ``redact_text`` rules (the guard's,
        the policy packs') applied to each string inside it (a ``Message``'s words, tool calls,
        thinking and text parts; dicts, lists, tuples). Other values pass unchanged; with no
        rules in force, ``value`` itself comes back, and so does a message no rule changed.
        Stores call this before they write; what the model reads and what tools receive are
        not affected.
        """
        if not self._redacts:
            return value
        if isinstance(value, str):  # most calls (a trace attribute, a line): no walk, no closure
            return self.hooks.redact_text(self, value)
        return _redacted(value, lambda text: self.hooks.redact_text(self, text))

    @property
    def text_redaction(self) -> Callable[[str], str] | None:
        """``redact`` for one string, as a function that holds the rules' plugins but not the
        agent: for a store that redacts later, after the agent may be gone (tracing redacts a
        trace when it is first read). None when some rule takes the agent (its ``redact_text``
        names ``agent``): such a store must redact now, with ``redact``."""
        return self.hooks.text_redaction

    @property
    def plugins(self) -> tuple[object, ...]:
        """The active plugin instances, in registration order."""
        return self.hooks.plugins

    def profile_hooks(self, *, keep_calls: bool = False) -> HookProfile:
        """Time every hook call of this agent's plugins from now on, per plugin and per hook
        (``agent.hook_profile``). ``keep_calls`` also keeps each call for whoever takes them
        (the tracing plugin's ``hook_timing`` puts them on its spans). Off until asked: then the
        loop calls hooks without measuring them."""
        if self.hook_profile is None:
            self.hook_profile = HookProfile(keep_calls=keep_calls)
        elif keep_calls:
            self.hook_profile.keep_calls = True
        self.hooks.measure(timeout=self.hook_timeout, profile=self.hook_profile)
        return self.hook_profile

    @overload
    def plugin(self, which: type[PluginT]) -> PluginT: ...
    @overload
    def plugin(self, which: str) -> Any: ...
    def plugin(self, which: type[PluginT] | str) -> PluginT | Any:
        """The active plugin: by class (``agent.plugin(Human).steer(...)``, typed) or by name.

        ``KeyError`` if it is not active in this agent.
        """
        if isinstance(which, str):
            found = self.hooks.get(which)
            if found is None:
                raise KeyError(f"plugin {which!r} is not active in this agent")
            return found
        for plugin in self.hooks.plugins:
            if isinstance(plugin, which):
                return plugin
        raise KeyError(f"no {which.__name__} plugin is active in this agent")

    @property
    def tool_specs(self) -> tuple[ToolSpec, ...]:
        """The tools as the model is told about them, in the order they were added."""
        return self._tool_specs

    @property
    def cancel_requested(self) -> bool:
        """``cancel()`` was called during the current run."""
        return self._cancel_requested

    @property
    def handles_approvals(self) -> bool:
        """An active plugin asks people about ``needs_approval`` tools (``Plugin.handles_approvals``);
        without one the core refuses those calls."""
        return self.hooks.handles_approvals

    async def context_window(self) -> int | None:
        """The model's window in tokens: configured; for a hosted model, from the dated table of
        known windows (``[context_windows]`` in ``bandoneon.toml`` overrides it); else learned
        from the server once. Never assumed."""
        if not self._window_known:
            name, model = getattr(self.provider, "name", ""), getattr(self.provider, "model", "")
            known = known_window(name, model, self.config.context_windows) if isinstance(name, str) and isinstance(model, str) else None
            self._window = known or await self.provider.context_window()
            self._window_known = True
        return self._window

    def _system_prompt(self) -> str:
        """The prompt, the appended part and the context files as they are now (read per run)."""
        parts = [self.system_prompt] if self.system_prompt else []
        if self.append_system_prompt:
            parts.append(self.append_system_prompt)
        if self.context_files:
            base = os.fspath(self.cwd) if self.cwd is not None else os.getcwd()  # cwd may change between runs
            for path in self.context_files:
                text = self._read_context_file(os.path.join(base, path))  # an absolute path stays as it is
                if text:
                    parts.append(f"# {path.name}\n\n{text}")
        return "\n\n".join(parts)

    def _read_context_file(self, full: str) -> str:
        stat = stat_if_present(full)  # per run; most folders have neither file
        if stat is None:
            return ""
        key = (stat.st_mtime_ns, stat.st_size)
        cached = self._context_cache.get(full)
        if cached is None or cached[0] != key:
            try:
                with open(full, encoding="utf-8") as handle:
                    cached = (key, handle.read().strip())
            except (OSError, UnicodeDecodeError) as exc:
                log.warning("context file %s cannot be read: %s", full, exc)
                return ""
            self._context_cache[full] = cached
        return cached[1]

    # ---------------------------------------------------------------- history

    @property
    def messages(self) -> list[Message]:
        """The working history (what the model is sent; compaction may have shortened it)."""
        return list(self._messages)

    @property
    def transcript(self) -> list[Message]:
        """Everything that happened, never compacted."""
        return list(self._transcript)

    @property
    def history_resets(self) -> int:
        """How many times the history was replaced (``clear``, ``load_history``). What saves the
        transcript a piece at a time compares it between saves: a history that was replaced
        may be as long as before and even end with the same message object."""
        return self._history_resets

    def fork(self, **changes: Any) -> Agent[DepsT, OutputT]:
        """A new agent with the same setup and a copy of this one's history; ``changes``
        replace some of the arguments it was built with (``fork(model="ollama:qwen3")``).

        Plugins given as instances are copied (``attrs.evolve``: same options, fresh state) when
        they are attrs classes, so the two agents do not share per-agent plugin state; other
        plugin objects are shared.
        """
        arguments = {**self._init_arguments, **changes}
        plugins = arguments.get("plugins")
        if plugins is not None and not isinstance(plugins, Mapping):
            arguments["plugins"] = [attrs.evolve(p) if attrs.has(type(p)) else p for p in plugins]
        other = Agent(**arguments)
        other._messages = list(self._messages)
        other._transcript = list(self._transcript)
        return other

    def load_history(self, messages: Iterable[Message], *, usage: Usage | None = None) -> None:
        """Replace the history (working history and transcript), e.g. with a saved session."""
        if self._running:
            raise RunInProgress(f"agent {self.name!r} is running; load a history between runs")
        self._messages[:] = list(messages)
        self._transcript[:] = self._messages
        self._history_resets += 1
        if usage is not None:
            self.usage = usage

    def clear(self) -> None:
        """Forget the history: the next run starts a new conversation."""
        self._messages.clear()
        self._transcript.clear()
        self._history_resets += 1

    # ---------------------------------------------------------------- events

    def on(self, name: str, listener: Callable[[Event], Any] | None = None) -> Any:
        """Call ``listener(event)`` (sync or async) for every event ``name`` (``"*"``: all).

        Usable as a decorator. Unknown names are an error, so a typo is not silence. A listener
        added while a run is going is heard from the next run on (that run may not reach it).
        """
        from .events import event_names  # the events load with the first run or listener (issue #19)

        if name != "*" and name not in event_names():
            raise ValueError(f"unknown event {name!r}; known events: {', '.join(sorted(event_names()))}")

        def add(fn: Callable[[Event], Any]) -> Callable[[Event], Any]:
            self._listeners.setdefault(name, []).append(fn)
            return fn

        return add(listener) if listener is not None else add

    def off(self, name: str, listener: Callable[[Event], Any]) -> None:
        self._listeners.get(name, []).remove(listener)

    async def emit(self, event: Event, *, run: RunContext | None = None) -> None:
        """Publish an event to this agent's listeners and plugins, also outside a run
        (a heartbeat tick, a steering note). Listener errors are logged, never raised."""
        pending = self._emit(run, event)
        if pending is not None:
            await pending

    def _emit(self, run: RunContext | None, event: Event) -> Awaitable[None] | None:
        """Deliver ``event`` now when nothing needs awaiting (no listeners, every ``on_event``
        sync and unmeasured: the common case), and return None; else the coroutine that delivers it."""
        if not self._listeners:
            return self.hooks.deliver(run, event)
        return self._emit_awaiting(run, event)

    async def _emit_awaiting(self, run: RunContext | None, event: Event) -> None:
        for key in (event.name, "*") if self._listeners else ():
            for listener in self._listeners.get(key, ()):
                try:
                    outcome = listener(event)
                    if inspect.iscoroutine(outcome):
                        await outcome
                except Exception:
                    log.exception("event listener %r failed on %s (listeners are isolated)", listener, event.name)
        if self.hooks.implements(hookspecs.on_event):
            await self.hooks.on_event(run, event)

    # ---------------------------------------------------------------- running

    def new_run(self, prompt: Prompt, *, deps: Any = None, parent: RunContext | None = None, output_type: Any = None) -> RunContext:
        """The context of a run that has not started (used by ``run``; public for plugins).

        ``output_type`` overrides the agent's for this run (``str`` asks for plain text).
        A prompt with images or files the provider cannot take is a ``ConfigError`` here,
        before anything is sent or added to the history.
        """
        text, parts = split_prompt(prompt)
        if parts:
            self._check_parts(parts)
        if deps is not None and isinstance(self.deps_type, type) and not isinstance(deps, self.deps_type):
            raise ConfigError(f"deps must be a {self.deps_type.__name__} (deps_type of agent {self.name!r}), got {type(deps).__name__}")
        wanted = output_type if output_type is not None else self.output_type
        listeners = self._listeners
        run = RunContext(
            agent=self,
            run_id=_run_id(),
            prompt=text,
            prompt_parts=parts,
            messages=self._messages,
            transcript=self._transcript,
            provider=self.provider,
            tools=self.tools,
            deps=deps,
            parent=parent,
            wants_events=bool(listeners) or self.hooks.implements(hookspecs.on_event),
            wants_deltas=bool(listeners) and any(listeners.get(name) for name in _DELTA_EVENTS),
            system_prompt=self._system_prompt(),
            output=self._output_spec(wanted),
        )
        # A run delivers to the listeners there were when it started (as wants_events and
        # wants_deltas say): with none, straight to the plugins' compiled on_event, one call
        # less per event; with no plugin watching either, to nobody (the default).
        if listeners:
            run._emit = self._emit
        elif run.wants_events:
            run._emit = self.hooks.callers["on_event"]
        return run

    def _check_parts(self, parts: tuple[Part, ...]) -> None:
        """Every model of the list must read the parts: a fallback may take over mid-run."""
        for provider in self.models:
            accepted = frozenset(getattr(provider, "input_kinds", ()))
            missing = sorted(part_kinds(parts) - accepted)
            if missing:
                name = f"{getattr(provider, 'name', type(provider).__name__)}:{getattr(provider, 'model', '')}"
                role = "" if provider is self.provider else "fallback "
                kinds = " or ".join(f"{kind}s" for kind in missing)
                raise ConfigError(
                    f"the {role}model {name} cannot take {kinds} (it takes {', '.join(sorted(accepted)) or 'text only'}); "
                    "send text, or use a provider that reads them"
                )

    def _output_spec(self, output_type: Any) -> OutputSpec | None:
        """The spec for ``output_type``, made once per type (and per tools / fallbacks present)."""
        if is_plain_text(output_type):  # most runs: no key to build
            return None
        key = (output_type, bool(self.tools), len(self._fallbacks))
        try:
            if key in self._output_specs:
                return self._output_specs[key]
        except TypeError:  # an unhashable type argument: worked out every time
            return output_spec(output_type, self.output_mode, self.output_retries, self.models, has_tools=key[1], limits=self.json_limits)
        spec = self._output_specs[key] = output_spec(output_type, self.output_mode, self.output_retries, self.models, has_tools=key[1], limits=self.json_limits)
        return spec

    @overload
    async def run(self, prompt: Prompt, *, deps: DepsT | None = None, parent: RunContext | None = None, output_type: None = None) -> RunResult[OutputT]: ...
    @overload
    async def run(self, prompt: Prompt, *, deps: DepsT | None = None, parent: RunContext | None = None, output_type: type[RunOutputT]) -> RunResult[RunOutputT]: ...
    @overload
    async def run(self, prompt: Prompt, *, deps: DepsT | None = None, parent: RunContext | None = None, output_type: object) -> RunResult[Any]: ...

    async def run(self, prompt: Prompt, *, deps: Any = None, parent: RunContext | None = None, output_type: Any = None) -> RunResult[Any]:
        """Run the loop on ``prompt`` until an exit; the history carries over to the next run.

        ``prompt`` is a string, or a list of strings, ``ImagePart`` and ``FilePart`` in order.

        ``output_type`` overrides the agent's output type for this run.
        Raises ``RunInProgress`` if this agent is already running; ``ProviderError`` and
        ``PluginError`` for what nobody can fix (the history is left valid).
        """
        current_task, run_loop = _LOOP_ENTRY or _loop_entry()
        if self._running:
            raise RunInProgress(f"agent {self.name!r} is already running; await that run, or fork() the agent to run in parallel")
        self._running = True
        self._cancel_requested = False
        self._task = current_task()
        try:
            run = self.new_run(prompt, deps=deps, parent=parent, output_type=output_type)
            result = await run_loop(run)
            self.usage = self.usage + result.usage
            return result
        finally:
            self._running = False
            self._task = None

    async def aclose(self) -> None:
        """Close what the provider and the plugins hold open (HTTP connections, session locks);
        plugins hear it through ``agent_closed``. The agent stays usable."""
        for provider in self.models:
            close = getattr(provider, "aclose", None)
            if close is not None:
                await close()
        if self.hooks.implements(hookspecs.agent_closed):
            await self.hooks.agent_closed(self)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def close(self) -> None:
        """``aclose`` for scripts that use ``run_sync``."""
        _sync_loop().run_until_complete(self.aclose())

    def cancel(self) -> None:
        """Stop the current run: the model request and running tools are cancelled; the run
        returns with ``stop="cancelled"``. Safe to call from any thread."""
        task = self._task
        if task is None:
            return
        self._cancel_requested = True
        task.get_loop().call_soon_threadsafe(task.cancel)

    @overload
    def run_sync(self, prompt: Prompt, *, deps: DepsT | None = None, output_type: None = None) -> RunResult[OutputT]: ...
    @overload
    def run_sync(self, prompt: Prompt, *, deps: DepsT | None = None, output_type: type[RunOutputT]) -> RunResult[RunOutputT]: ...
    @overload
    def run_sync(self, prompt: Prompt, *, deps: DepsT | None = None, output_type: object) -> RunResult[Any]: ...

    def run_sync(self, prompt: Prompt, *, deps: Any = None, output_type: Any = None) -> RunResult[Any]:
        """``run`` for scripts. Reuses one event loop per thread rather than paying for a new one.

        Ctrl-C (SIGINT, in the main thread) cancels the run as ``cancel()`` does, so the model
        stops generating and running tools are cancelled, then raises ``KeyboardInterrupt``;
        the history stays valid. A second Ctrl-C while it winds down interrupts at once.
        """
        loop = _sync_loop()
        task = loop.create_task(_stopping_when_done(loop, self.run(prompt, deps=deps, output_type=output_type)))
        interrupt = _Interrupt.install(self, task)
        try:
            loop.run_forever()
        finally:
            if interrupt is not None:
                interrupt.uninstall()
        if interrupt is not None and interrupt.happened:
            if task.done() and not task.cancelled():
                task.exception()  # a failure while winding down: taken, the interrupt says what happened
            raise KeyboardInterrupt
        if not task.done():
            raise RuntimeError("the event loop was stopped before the run ended (loop.stop() inside a run_sync run)")
        result: RunResult[Any] = task.result()
        return result

    async def stream(self, prompt: Prompt, *, deps: Any = None, output_type: Any = None) -> AsyncIterator[Event]:
        """Run, yielding every event as it happens (``text_delta`` included); ends after ``run_end``.

        Breaking out of the iteration cancels the run.
        """
        import asyncio

        queue: asyncio.Queue[Event | None] = asyncio.Queue()
        self.on("*", queue.put_nowait)
        task = asyncio.create_task(self.run(prompt, deps=deps, output_type=output_type))
        task.add_done_callback(lambda _: queue.put_nowait(None))
        try:
            while (event := await queue.get()) is not None:
                yield event
            await task
        finally:
            self.off("*", queue.put_nowait)
            if not task.done():
                self._cancel_requested = True
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)


#: Events that exist only when the reply streams: a listener for one of them turns streaming on.
_DELTA_EVENTS = ("text_delta", "thinking_delta", "tool_call_delta", "output_delta", "*")


def _redacted(value: Any, mask: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return mask(value)
    if isinstance(value, Message):
        return map_texts(value, mask)
    if isinstance(value, dict):
        return {key: _redacted(item, mask) for key, item in value.items()}
    if isinstance(value, list):
        return [_redacted(item, mask) for item in value]
    if isinstance(value, tuple):
        return tuple(_redacted(item, mask) for item in value)
    return value


def _as_tool(item: Tool | Callable[..., Any], existing: Mapping[str, Tool]) -> Tool:
    new = item if isinstance(item, Tool) else tool(item)
    if new.name in existing:
        raise ConfigError(f"two tools are named {new.name!r}; tool names must be unique in one agent")
    return new


def choose_model(config: Config, model: str | Provider | None) -> tuple[str | Provider, dict[str, Any]]:
    """The model an agent uses and the provider options from ``config``: ``model`` when given;
    else ``bandoneon.toml``, ``$BANDONEON_MODEL`` / ``$BANDONEON_BASE_URL``, then ``local:``.
    ``bandoneon plugins`` asks it which provider an ``Agent()`` here would use."""
    options: dict[str, Any] = {}
    if config.api_key_env:
        options["api_key"] = os.environ.get(config.api_key_env)
        if not options["api_key"]:
            raise ConfigError(f"{config.source}: api_key_env names {config.api_key_env}, which is not set in the environment")
    if model is not None:
        return model, options
    base_url = configured_base_url(config)
    chosen = configured_model(config)
    if chosen and ":" in chosen:
        if base_url and chosen.partition(":")[0] in OPENAI_PREFIXES and "@" not in chosen:
            chosen = f"{chosen}@{base_url}"  # the named server's protocol, at the configured address
        return chosen, options
    if base_url:
        return f"openai-compatible:{chosen or 'default'}@{base_url}", options
    if chosen:
        where = f"{config.source}: " if config.model else ""
        raise ConfigError(f"{where}model {chosen!r} has no provider prefix; write it as 'PROVIDER:MODEL', e.g. 'ollama:{chosen}'")
    return "local:", options

_thread_state = threading.local()

#: ``asyncio.current_task`` and ``loop.run_loop``, bound by the first run: both bring asyncio,
#: which ``import bandoneon`` does without. Not import statements in ``run``: on Python 3.11 a
#: ``from .loop import ...`` there cost about 11 k instructions a run (the import system looks
#: for the module's ``__path__`` and builds the AttributeError it does not find).
_LOOP_ENTRY: _LoopEntry | None = None


def _loop_entry() -> _LoopEntry:
    global _LOOP_ENTRY
    import asyncio

    from .loop import run_loop

    _LOOP_ENTRY = (asyncio.current_task, run_loop)
    return _LOOP_ENTRY


def _run_id() -> str:
    """16 hex digits, unique, not secret: the random module's generator (reseeded in a forked
    child) costs no system call, where ``os.urandom`` made one per run."""
    return f"{random.getrandbits(64):016x}"


#: Numeric options of ``Agent()`` for which None means "unset" (each checked only when given).
_UNSET_WHEN_NONE = ("max_turns", "run_timeout", "tool_timeout", "turn_timeout", "hook_timeout", "max_tool_concurrency", "context_window")


async def _stopping_when_done(loop: asyncio.AbstractEventLoop, run: Awaitable[RunResult[Any]]) -> RunResult[Any]:
    """``run``, then ``loop.stop()``: ``run_sync``'s ``run_forever`` ends in the iteration the
    run ends in. (``run_until_complete`` stops through a done callback, one more iteration and
    one more select call; a run on an in-process model needs only one.) The task's first step
    always comes before a Ctrl-C's cancel (both go through the loop's queue, in order), so the
    ``finally`` always runs."""
    try:
        return await run
    finally:
        loop.stop()


class _Interrupt:
    """While ``run_sync``'s loop runs, the first SIGINT cancels the agent's run instead of
    raising where it lands (which would leave the model generating on its worker thread);
    ``happened`` says it did. Only in the main thread, and only when SIGINT still has Python's
    default handler (an application's own handler is left alone)."""

    __slots__ = ("agent", "happened", "task")

    def __init__(self, agent: Agent[Any, Any], task: asyncio.Task[Any]):
        self.agent = agent
        self.task = task
        self.happened = False

    @classmethod
    def install(cls, agent: Agent[Any, Any], task: asyncio.Task[Any]) -> _Interrupt | None:
        # The C module, not ``signal``: its wrappers convert every handler through an Enum,
        # which cost more than the rest of a reused agent's run_sync.
        import _signal as signal

        if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
            return None
        interrupt = cls(agent, task)
        signal.signal(signal.SIGINT, interrupt._on_signal)
        return interrupt

    def uninstall(self) -> None:
        import _signal as signal

        signal.signal(signal.SIGINT, signal.default_int_handler)

    def _on_signal(self, signum: int, frame: Any) -> None:
        if self.happened:
            raise KeyboardInterrupt
        self.happened = True
        self.agent._cancel_requested = True
        self.task.get_loop().call_soon_threadsafe(self.task.cancel)  # wakes the loop out of its wait


def _sync_loop() -> asyncio.AbstractEventLoop:
    import asyncio

    # _get_running_loop answers None where get_running_loop raises: no exception per call.
    if asyncio._get_running_loop() is not None:
        raise RuntimeError("run_sync() cannot be called from a running event loop; use `await agent.run(...)`")
    loop = getattr(_thread_state, "loop", None)
    if loop is None or loop.is_closed():
        loop = asyncio.new_event_loop()
        _thread_state.loop = loop
    return loop
