"""Every hook of the core. Only hookspecs live here.

Each spec declares how it is called (``@hookspec(Calls.FIRST)``...); the facade
(``bandoneon.hooks.Hooks``), ``docs/hooks.md`` (``python -m bandoneon.hookdocs``) and the
meta-tests read that declaration. What the styles mean:

- Implementations may be plain functions or ``async def``; the core awaits what needs
  awaiting, including a coroutine a plain function answers (a hook that only sometimes has to
  wait: no coroutine per call the rest of the time). ``sync`` hooks run outside the event
  loop: an ``async def`` implementation is refused when the plugin is registered, and a
  coroutine answered by a plain one when it is called.
- *First answer* hooks take the first non-None answer in call order and do not call the
  rest. They are deliberately **not** pluggy ``firstresult`` hooks: a coroutine is never None,
  so pluggy could not tell "no answer" from "an answer still to be awaited".
- *Chained* hooks pass each implementation's answer to the next (None keeps the value).
- *Collecting* hooks call every implementation and gather the non-None answers.
- *Observing* hooks call every implementation; a failure is logged, never fatal.
- Call order is pluggy's: later-registered first, ``tryfirst``/``trylast`` to pin a place.
  Policy packs run before every other plugin, whatever ``tryfirst`` the others declare.
  Hook wrappers are refused.
- Arguments are passed as pluggy passes them: an implementation names the ones it needs, and
  a parameter with a default receives the caller's value.
- A hook that raises fails the run with ``PluginError`` naming the plugin and the hook; the
  history is left valid.
- ``process_wide`` hooks (``register_providers``, ``register_commands``) run once per process
  on the plugin class or module, before any agent exists; a plain method works (the facade
  passes no instance), ``@staticmethod`` is not needed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from .decisions import FinalAnswer, SendBack
from .markers import Calls, hookspec

if TYPE_CHECKING:
    from .agent import Agent
    from .context import RunContext
    from .decisions import Compacted, Refuse, Respond, Retry, Stop
    from .events import Event
    from .messages import Message, ModelRequest, ToolCall, ToolResult, Turn
    from .result import RunResult
    from .tools import Tool


def _with_content(result: ToolResult, text: str) -> ToolResult:
    """How an ``after_tool_execution`` answer (text) is folded into the chained result."""
    return attrs.evolve(result, content=text)


def _checked_answer(answer: FinalAnswer, verdict: object) -> FinalAnswer:
    """A ``check_answer`` rewrite, which must be a ``FinalAnswer`` (a ``SendBack`` has ended
    the chain before this)."""
    if not isinstance(verdict, FinalAnswer):
        raise TypeError(f"check_answer must return None, a FinalAnswer or SendBack, got {verdict!r}")
    return verdict


# ---------------------------------------------------------------- loop points


@hookspec(Calls.FIRST)
def before_turn(run: RunContext) -> Stop | None:
    """At the start of every turn, before anything is sent.

    :param run: the run; ``run.turn`` is the number of the turn about to start (1-based).
    :return: None to go on, or a ``Stop`` to end the run before the model is called.
        First answer wins.

    .. versionadded:: 0.1
    """


@hookspec(Calls.CHAINED, chains="request")
def before_provider_call(run: RunContext, request: ModelRequest) -> ModelRequest | None:
    """Right before a request goes to the model: change what this one call sends.

    :param run: the run.
    :param request: the request as built so far (messages, system prompt, tools, tool_choice).
    :return: None to send it as is, or a changed copy (``attrs.evolve``). Chained: each
        implementation receives the previous one's request. The change is for this call
        only; the history itself is untouched.

    .. versionadded:: 0.1
    """


@hookspec(Calls.FIRST)
def before_tool_execution(run: RunContext, call: ToolCall, tool: Tool, arguments: dict[str, Any]) -> Refuse | Respond | None:
    """After the model asks for a tool and its arguments are valid, before it runs.

    :param run: the run.
    :param call: the call as the model wrote it.
    :param tool: the tool that would run.
    :param arguments: the validated arguments.
    :return: None to let it run; ``Refuse(reason)`` to refuse (the model reads the reason as
        an error result); ``Respond(content)`` to answer without running it. First answer
        wins: policy packs should be ``tryfirst`` so they refuse before a person is asked.
        Refusals are results, never exceptions.

    .. versionadded:: 0.1
    """


@hookspec(Calls.CHAINED, chains="result", fold=_with_content)
def after_tool_execution(run: RunContext, call: ToolCall, tool: Tool | None, result: ToolResult) -> str | None:
    """After a tool ran (or failed, or was refused), before its result joins the history.

    :param run: the run.
    :param call: the call.
    :param tool: the tool, or None when the model named a tool that does not exist.
    :param result: the result so far; ``result.content`` already carries earlier rewrites.
    :return: None to keep the text, or the text the model will read instead. Chained:
        redaction should run before untrusted marking (``tryfirst`` for redaction).

    .. versionadded:: 0.1
    """


@hookspec(Calls.COLLECTING)
def tool_result_ready(run: RunContext, result: ToolResult) -> None:
    """A tool call's result is final (every ``after_tool_execution`` rewrite done), as soon as
    that call is answered and before the turn ends. Observe or persist: the sessions plugin
    writes each result here, so a process that dies later in the turn has not lost it.

    :param run: the run.
    :param result: the result as the model will read it (``result.to_message()`` joins the
        history when every call of the turn is answered, in call order).
    :return: nothing. Called for every result ``after_tool_execution`` sees, in the order the
        calls finish (calls of one turn may run together).

    .. versionadded:: 0.3
    """


@hookspec(Calls.COLLECTING)
def after_turn(run: RunContext, turn: Turn) -> None:
    """Once the model's reply and its tool results are in the history. Observe or persist.

    :param run: the run.
    :param turn: the turn: the reply and the tool results, in call order.

    .. versionadded:: 0.1
    """


# ---------------------------------------------------------------- extension points
# The stop, compaction, retry, wrap-up and answer points. Skills and memory reach the model
# through system_prompt_sections and register_tools; how other plugins contribute skills,
# memory stores or session stores is published by those plugins (their hookspecs modules).


@hookspec(Calls.FIRST)
def should_stop(run: RunContext, turn: Turn) -> Stop | None:
    """After each turn that asked for tools: should the run end here?

    Terminal tools, error streaks and budgets live here. The core's own ``max_turns`` is
    checked after this hook and always has the last word.

    :param run: the run.
    :param turn: the turn that just ended.
    :return: None to go on, or a ``Stop``. First answer wins.

    .. versionadded:: 0.1
    """


@hookspec(Calls.FIRST)
def compact_history(run: RunContext, request: ModelRequest, window: int | None) -> Compacted | None:
    """Before each model call: shrink the working history if it does not fit.

    :param run: the run; ``run.messages`` is the working history.
    :param request: the request that would be sent (system prompt and tool schemas count too).
    :param window: the model's context window in tokens, or None when nobody knows it.
    :return: None to keep the history, or ``Compacted`` whose ``messages`` replace the working
        history (``agent.transcript`` keeps everything). First answer wins.

    .. versionadded:: 0.1
    """


@hookspec(Calls.FIRST)
def retry_delay(run: RunContext, error: Exception, attempt: int) -> Retry | None:
    """A model call failed with a ``ProviderError``: wait and try again?

    :param run: the run.
    :param error: the error; ``error.retryable`` tells whether the server may recover.
    :param attempt: how many attempts were made so far (1 after the first failure).
    :return: None to give up (the error is raised), or ``Retry(delay, max_attempts)``: the
        core waits ``delay`` seconds (cancellably), emits ``provider_retry`` and calls again.
        First answer wins.

    .. versionadded:: 0.1
    """


@hookspec(Calls.FIRST)
def wrap_up(run: RunContext, stop: Stop) -> Message | None:
    """The run is ending on a limit, without an answer. Offer a best-effort final message.

    :param run: the run; ``run.call_model(request)`` makes one more model call.
    :param stop: the limit that ended the run (max_turns, budget, timeout, ...).
    :return: None, or an assistant message that joins the history; its text becomes
        ``RunResult.text``. ``RunResult.stop`` still names the limit. First answer wins.

    .. versionadded:: 0.1
    """


@hookspec(Calls.CHAINED, chains="answer", fold=_checked_answer, ends_with=SendBack)
def check_answer(run: RunContext, answer: FinalAnswer) -> FinalAnswer | SendBack | None:
    """The run has its final answer, before ``RunResult`` is made: accept, rewrite or send back.

    Output guardrails live here: a link that would carry data out, a policy on what answers
    may say, redaction of the final text. Called for every answer (``end_turn``,
    ``terminal_tool``) and for a wrap-up's text after a limit.

    :param run: the run; its history ends with the message that gave the answer.
    :param answer: the answer so far (``text``, ``output``, ``stop``, ``can_send_back``);
        earlier implementations' rewrites are already in it.
    :return: None to accept it; a changed copy (``attrs.evolve``) to rewrite it (the text
        in the history is rewritten too; for a typed run a changed ``text`` is checked
        against the output type again); or ``SendBack(reason)``: the model reads the reason
        and answers again, at most ``Agent(max_send_backs=...)`` times (default 2), after
        which the run ends with ``stop="answer_refused"``. Chained in call order; the first
        ``SendBack`` ends the chain. On a wrap-up (``can_send_back`` false) a ``SendBack``
        withholds the text: ``RunResult.text`` is None and ``detail`` gives the reason.

    .. versionadded:: 0.2
    """


# ---------------------------------------------------------------- the agent and the run


@hookspec(Calls.COLLECTING, sync=True)
def agent_created(agent: Agent) -> None:
    """An agent was built with this plugin active. Check its tools, warn, or raise ``ConfigError``.

    :param agent: the new agent (its tools, plugins and provider are in place).
    :return: nothing; raise ``ConfigError`` to refuse to build the agent. Must not be async.

    .. versionadded:: 0.1
    """


@hookspec(Calls.COLLECTING, sync=True)
def check_tools(agent: Agent, tools: Mapping[str, Tool]) -> None:
    """The agent's tool set is about to become ``tools``: check it (the lethal trifecta), warn,
    or raise ``ConfigError``.

    Called once when the agent is built (its own tools and every plugin's ``register_tools``,
    just before ``agent_created``) and again on every later ``agent.add_tool`` (tools that
    arrive late, such as an MCP server's), so a check cannot be skipped by adding a tool after
    the agent exists.

    :param agent: the agent (while it is built, its ``tools`` may not be filled in yet).
    :param tools: every tool the agent will have, by name, the new one included.
    :return: nothing; raise ``ConfigError`` to refuse: the agent is not built, or the tool is
        not added. Must not be async.

    .. versionadded:: 0.2
    """


@hookspec(Calls.COLLECTING)
def agent_closed(agent: Agent) -> None:
    """``agent.aclose()`` was called: release what the plugin holds for this agent (locks,
    files, HTTP clients). May be async. The agent itself stays usable.

    :param agent: the agent being closed.
    :return: nothing.

    .. versionadded:: 0.1
    """


@hookspec(Calls.CHAINED, chains="text", sync=True)
def redact_text(agent: Agent, text: str) -> str | None:
    """Mask in ``text`` what this plugin's rules say no store may keep (keys, IDs).

    Stores call it through ``agent.redact(...)`` before they write: session files, memory
    notes, trace spans, eval reports, audit records. The model and the tools are not affected
    (a tool still gets its real arguments); only what is kept is masked.

    Leave ``agent`` out of the signature when the rule does not need it: a rule of the text
    alone can be kept by a store that redacts later, after the agent is gone
    (``Agent.text_redaction``; tracing redacts a trace when it is first read). A rule that
    takes the agent makes such stores redact at once instead.

    :param agent: the agent whose rules apply.
    :param text: the text about to be stored (already masked by earlier implementations).
    :return: None to keep ``text`` as it is, or the masked text. Chained in call order
        (policy packs first). Must not be async: stores call it from synchronous code.

    .. versionadded:: 0.2
    """


@hookspec(Calls.COLLECTING, sync=True)
def register_tools(agent: Agent) -> Sequence[Tool] | None:
    """Tools this plugin adds to the agent (``load_skill``, ``remember``, ``run_code``...).

    :param agent: the agent being built (its own tools are not added yet).
    :return: None or a sequence of ``Tool``. Collected from every plugin, once per agent.
        Must not be async.

    .. versionadded:: 0.1
    """


@hookspec(Calls.COLLECTING)
def system_prompt_sections(run: RunContext) -> str | None:
    """Text to append to the system prompt of every request of this run.

    :param run: the run; ``run.turn`` says which request this is.
    :return: None or a section. Collected in call order, joined with blank lines.

    .. versionadded:: 0.1
    """


@hookspec(Calls.COLLECTING)
def before_run(run: RunContext) -> None:
    """A run starts; the prompt is in ``run.prompt`` and already in ``run.messages``.

    :param run: the run, before its first turn.
    :return: nothing; raise to refuse the run (it fails with ``PluginError``).

    .. versionadded:: 0.1
    """


@hookspec(Calls.COLLECTING)
def after_run(run: RunContext, result: RunResult) -> None:
    """A run ended, however it ended (also when it raised: ``result.error`` says so).

    :param run: the run.
    :param result: how it ended (``stop``, ``text``, ``usage``, this run's ``messages``).
    :return: nothing.

    .. versionadded:: 0.1
    """


@hookspec(Calls.OBSERVING)
def on_event(run: RunContext, event: Event) -> None:
    """Every event of the run. Observers only: an exception here is logged, never fatal.

    :param run: the run the event belongs to, or None for an event published outside a run
        (``agent.emit``).
    :param event: the event (see ``bandoneon.events``).
    :return: nothing.

    .. versionadded:: 0.1
    """


# ---------------------------------------------------------------- process-wide registration


@hookspec(Calls.COLLECTING, process_wide=True)
def register_providers(register: Callable[[str, Callable[..., Any]], None]) -> None:
    """Contribute model providers. Runs once per process, on the plugin class.

    :param register: ``register(prefix, factory)``: the model string ``"prefix:rest"``
        resolves to ``factory(rest, **options)``.
    :return: nothing.

    .. versionadded:: 0.1
    """


@hookspec(Calls.FIRST, process_wide=True)
def session_plugin(session_id: str, path: str | None) -> object | None:
    """``bandoneon chat --session ID``: the plugin instance that keeps and resumes this
    conversation. Runs on the plugin class, before the agent exists.

    :param session_id: the session to resume (or start).
    :param path: ``--session-path``: where sessions are kept, or None for the plugin's default.
    :return: None if this plugin does not keep sessions; else the plugin instance the chat's
        agent gets besides the configured plugins. First answer wins.

    .. versionadded:: 0.2
    """


@hookspec(Calls.COLLECTING, process_wide=True)
def register_commands(subparsers: Any) -> None:
    """Add ``bandoneon`` CLI subcommands. Runs once per process, on the plugin class.

    :param subparsers: the argparse subparsers of the ``bandoneon`` command; each parser must
        ``set_defaults(handler=fn)`` where ``fn(args) -> int`` is the exit code.
    :return: nothing.

    .. versionadded:: 0.1
    """
