"""The Compaction plugin class: what it hooks and its options (the package docstring says what it is for)."""

from __future__ import annotations

import logging
import warnings
from collections.abc import Coroutine
from typing import Any, ClassVar

import attrs

import bandoneon

from ._cut import head_and_tail
from ._shrink import Shrunk, shrink_history
from ._summary import summarise
from ._tokens import (
    MESSAGE_OVERHEAD,
    TokenCount,
    fixed_tokens,
    message_tokens,
    resolve_counter,
    system_tokens,
    tool_tokens,
)

log = logging.getLogger("bandoneon_compaction")


@attrs.define
class _Counted:
    """The history counted so far in a run (its leading messages) and their tokens."""

    messages: tuple[bandoneon.Message, ...]
    tokens: int


class _LastSizes:
    """The tokens of the last tool set and system prompt seen, kept across runs (one agent,
    one tool set, mostly)."""

    __slots__ = ("system", "tools")

    def __init__(self) -> None:
        self.tools: tuple[Any, int] | None = None
        self.system: tuple[str, int] | None = None


_COUNTED = bandoneon.StashKey[_Counted]("compaction.counted")  # the running count of this run's history
_WARNED = bandoneon.StashKey[set[str]]("compaction.warned")  # what this run was already warned about
#: The tokens one request leaves for its history (the line less the system prompt and tool
#: schemas), as of this run's last request: what a single tool result may never exceed.
_ROOM = bandoneon.StashKey[int]("compaction.room")


class WindowUnknownWarning(UserWarning):
    """Compaction is off for an agent because nobody knows its model's context window."""


#: Said once per process at most: a script that builds an agent per request, or a test suite,
#: would otherwise repeat it for every agent (the first one says all there is to say).
_unknown_window_warned = False


@attrs.define
class Compaction(bandoneon.Plugin):
    """Keep each request under ``threshold × window`` tokens, oldest parts first.

    The window is the model's (``Agent(context_window=...)``, ``bandoneon.toml`` or what the
    server reports); ``window`` here sets a smaller budget (the smaller of the two wins).
    With no window at all, the plugin does nothing and warns (once per process): it never
    guesses one.
    """

    name: ClassVar[str] = "compaction"
    is_default: ClassVar[bool] = True

    threshold: float = attrs.field(default=0.8, validator=bandoneon.in_range(above=0, at_most=1))
    keep_recent_turns: int = attrs.field(default=2, validator=bandoneon.in_range(at_least=1, integer=True))
    window: int | None = attrs.field(default=None, validator=bandoneon.in_range(at_least=256, unit="tokens", integer=True, optional=True))
    preview_chars: int = attrs.field(default=150, validator=bandoneon.in_range(at_least=0, integer=True))
    summarize: bool = False
    summary_tokens: int = attrs.field(default=500, validator=bandoneon.in_range(at_least=1, integer=True))
    #: None (4 characters per token), a callable ``count_tokens(text) -> int``, or "module:function".
    count_tokens: Any = None

    # Not options: set by attrs' __init__ directly, where an assignment would go through the
    # option-validating __setattr__ (the sizes change in every new agent's first run: they
    # are the fields of an object of their own).
    _counter: TokenCount = attrs.field(init=False, repr=False, eq=False, default=attrs.Factory(lambda self: resolve_counter(self.count_tokens), takes_self=True))
    _sizes: _LastSizes = attrs.field(init=False, repr=False, eq=False, factory=_LastSizes)

    def budget(self, window: int | None) -> int | None:
        """The window to fit in: the model's, or this plugin's ``window`` when smaller or alone."""
        if window and self.window:
            return min(window, self.window)
        return window or self.window or None

    @bandoneon.hookimpl
    def compact_history(
        self, run: bandoneon.RunContext, request: bandoneon.ModelRequest, window: int | None
    ) -> Coroutine[Any, Any, bandoneon.Compacted | None] | None:
        """None when the request fits (every request but a few: answered on the spot, no
        coroutine); otherwise the coroutine that shrinks the history (a summary waits on the model)."""
        budget = self.budget(window)
        if budget is None:
            self._warn_unknown(run)
            return None
        limit = int(budget * self.threshold)
        if self._fits(run, request, limit):
            return None
        return self._compacted(run, request, limit, budget)

    # Neither tryfirst nor trylast: after the redactions marked tryfirst, before the guard's
    # marking (trylast), so the untrusted wrapper goes around the cut text, whole.
    @bandoneon.hookimpl
    def after_tool_execution(self, run: bandoneon.RunContext, call: bandoneon.ToolCall, tool: bandoneon.Tool | None, result: bandoneon.ToolResult) -> str | None:
        """A result bigger than a whole request can hold could never be sent: cut it when it
        arrives, to its start and its end in half that room, with a note between them. Cut
        here, the megabytes never reach the history, the guard, the traces or a saved session,
        and the model reads more of it than the one-line note compaction would leave.
        Results of tools that are not re-runnable stay whole, as everywhere in this plugin."""
        room = run.stash.get(_ROOM)
        content = result.content
        # A token is at least a character for the default count and for real tokenizers on most
        # text; a counter that gives more is still caught before the request, by shrink_history.
        if room is None or room <= 0 or len(content) <= room or (tool is not None and not tool.rerunnable):
            return None
        tokens = MESSAGE_OVERHEAD + self._counter(content)
        if tokens <= room:
            return None
        name = call.name

        def note(cut: int) -> str:
            return (
                f"[Cut to fit the context window: {cut:,} of the {len(content):,} characters of this result were left "
                f"out here; its start and its end are kept. Ask {name} for less if you need the rest.]"
            )

        log.info("compaction: the result of %s was ~%d tokens, more than a request can hold (%d): its start and end were kept", name, tokens, room)
        return head_and_tail(content, tokens, max(0, room // 2 - MESSAGE_OVERHEAD), self._counter, note)

    async def _compacted(self, run: bandoneon.RunContext, request: bandoneon.ModelRequest, limit: int, budget: int) -> bandoneon.Compacted | None:
        count = self._counter

        def keeps_result(tool_name: str | None) -> bool:
            found = run.tools.get(tool_name) if tool_name else None
            return found is not None and not found.rerunnable

        shrunk = shrink_history(
            request.messages,
            limit=limit,
            fixed_tokens=fixed_tokens(request, count),
            keep_recent_turns=self.keep_recent_turns,
            keeps_result=keeps_result,
            count_tokens=count,
            preview_chars=self.preview_chars,
            summary_room=self.summary_tokens if self.summarize else 0,
        )
        self._report_problems(run, shrunk, limit, budget)
        if not shrunk.changed:
            return None
        messages = list(shrunk.messages)
        removed = list(shrunk.removed)
        after = shrunk.tokens_after
        if self.summarize and shrunk.dropped:
            summary = await summarise(
                run, shrunk.dropped, max_tokens=self.summary_tokens, input_chars=max(1_000, 4 * (limit - self.summary_tokens) - 1_000)
            )
            if summary is not None:
                summary = self._clip(summary)
            if summary is not None:
                size = message_tokens(summary, count)
                if after + size <= limit:
                    messages.insert(shrunk.summary_at, summary)
                    after += size
                    removed.append(f"summarised the {len(shrunk.dropped)} dropped message(s) in {size:,} tokens")
        return bandoneon.Compacted(messages=tuple(messages), tokens_before=shrunk.tokens_before, tokens_after=after, removed=tuple(removed))

    def _fits(self, run: bandoneon.RunContext, request: bandoneon.ModelRequest, limit: int) -> bool:
        """The common case, cheaply: a running count per run, so a request that fits costs only
        its new messages' count, not the whole history's again. Notes the room a request leaves
        for its history on the way."""
        counted = run.stash.get(_COUNTED)
        messages = request.messages
        if counted is None or messages[: len(counted.messages)] != counted.messages:
            # First call of the run, or the history was rewritten (compacted, an answer masked):
            # count it all again. Equal messages count the same, so equal-but-new ones are kept.
            counted = _Counted((), 0)
            run.stash[_COUNTED] = counted
        for message in messages[len(counted.messages) :]:
            counted.tokens += message_tokens(message, self._counter)
        counted.messages = tuple(messages)  # a tuple already; a list a plugin passed is copied
        sizes = self._sizes
        tools = sizes.tools
        if tools is None or tools[0] is not request.tools:  # the agent's tool schemas rarely change
            tools = sizes.tools = (request.tools, tool_tokens(request.tools, self._counter))
        system = sizes.system
        if system is None or system[0] != request.system_prompt:  # rebuilt per turn, mostly the same text
            system = sizes.system = (request.system_prompt, system_tokens(request.system_prompt, self._counter))
        run.stash[_ROOM] = limit - tools[1] - system[1]  # for after_tool_execution, this turn's results
        return counted.tokens + tools[1] + system[1] <= limit

    def _clip(self, summary: bandoneon.Message) -> bandoneon.Message | None:
        """A model that ignores ``max_tokens`` must not blow the budget the summary was given.
        Measured with the plugin's own counter (four characters per token was wrong for any
        other counter, and the marker and overhead came on top): the longest start that fits,
        found in a few counts; None when not even the marker fits."""
        count, budget = self._counter, self.summary_tokens
        if message_tokens(summary, count) <= budget:
            return summary
        text = summary.content

        def clipped(length: int) -> bandoneon.Message:
            return bandoneon.Message.assistant(text[:length] + " [...]")

        if message_tokens(clipped(0), count) > budget:
            return None
        fits, too_long = 0, len(text)
        while too_long - fits > 1:
            middle = (fits + too_long) // 2
            if message_tokens(clipped(middle), count) <= budget:
                fits = middle
            else:
                too_long = middle
        return clipped(fits)

    def _warn_unknown(self, run: bandoneon.RunContext) -> None:
        global _unknown_window_warned
        if _unknown_window_warned:
            return
        _unknown_window_warned = True
        model = getattr(run.provider, "model", None) or getattr(run.provider, "name", "this model")
        warnings.warn(
            f"compaction is off for agent {run.agent.name!r}: the context window of {model!r} is unknown. "
            "Set context_window = TOKENS in bandoneon.toml (for the bandoneon command: ./bandoneon.toml, --config FILE "
            "or $BANDONEON_CONFIG), pass Agent(context_window=...), or give the compaction plugin a window option; it "
            "never assumes one.",
            WindowUnknownWarning,
            stacklevel=2,
        )

    def _report_problems(self, run: bandoneon.RunContext, shrunk: Shrunk, limit: int, budget: int) -> None:
        warned = run.stash.setdefault(_WARNED, set())
        if shrunk.orphan_results and "orphans" not in warned:
            warned.add("orphans")
            log.warning("compaction: the history holds %d tool result(s) with no call before them; providers usually reject that", shrunk.orphan_results)
        if not shrunk.fits and "no_fit" not in warned:
            warned.add("no_fit")
            log.warning(
                "compaction: the request is still %d tokens, over the line of %d (%.0f%% of a %d-token window): "
                "what is left is protected (first request, recent turns, results that cannot be fetched again)",
                shrunk.tokens_after,
                limit,
                100 * self.threshold,
                budget,
            )
