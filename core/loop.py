"""The agent loop: model call → run the tools it asked for → feed the results back → repeat.

With ``toolrun`` (the tools of one turn), the only place that calls the loop's hooks. Every
exit goes through ``run_loop``'s one ``finally``, which leaves the history valid: every tool
call the model made has a result.
"""

from __future__ import annotations

import asyncio
import logging
from types import CoroutineType
from typing import TYPE_CHECKING, Any

import attrs

from . import hookspecs
from .decisions import Compacted, Stop
from .errors import ContextTooLong, ProviderError, StreamInterrupted
from .events import (
    AssistantMessage,
    CompactionDone,
    ModelFallback,
    ProviderRequest,
    ProviderRetry,
    RunEnd,
    RunStart,
    TurnEnd,
    TurnStart,
)
from .answers import (
    NO_ANSWER,
    Rounds,
    check_answer,
    check_wrap_up,
    count_invalid,
    final_text,
    take_answer,
    wrapped_up_output,
)
from .deltas import DeltaForwarder
from .messages import Message, ModelReply, ModelRequest, ToolResult, Turn, map_texts
from .output import OUTPUT_TOOL, OutputInvalid
from .result import RunResult
from .toolrun import ToolAborted, cut_off, run_tools, unique_call_ids
from .text import as_unicode, plural

if TYPE_CHECKING:
    from .context import RunContext
    from .providers.base import Provider

__all__ = ["call_model", "run_loop"]

log = logging.getLogger("bandoneon.loop")

#: Seconds a wrap-up may take after the run already ran out of run_timeout (turn_timeout, when
#: set, is used instead): the best answer from what was found is worth one short call.
WRAP_UP_GRACE = 10.0


async def run_loop(run: RunContext) -> RunResult:
    """Run turns until an exit; return how the run ended. Raises only what nobody can fix."""
    agent = run.agent
    hooks = agent.hooks
    first_new = len(run.transcript)
    run.append(Message.user(run.prompt, run.prompt_parts))
    if run.wants_events and (delivering := run._emit(run, RunStart(run.run_id, run.prompt, run.parent.run_id if run.parent else None))) is not None:
        await delivering
    stop: Stop | None = None
    error: BaseException | None = None
    deadline = None if agent.run_timeout is None else asyncio.get_running_loop().time() + agent.run_timeout
    timer: asyncio.Timeout | None = None
    try:
        if hooks.implements(hookspecs.before_run) and type(ran := hooks.callers["before_run"](run)) is CoroutineType:
            await ran
        try:
            if deadline is None:
                stop = await _turns(run)
            else:
                async with asyncio.timeout_at(deadline) as timer:
                    stop = await _turns(run)
        except _TurnTimeout:
            stop = Stop("timeout", f"a model call took longer than turn_timeout={agent.turn_timeout}s")
        except TimeoutError:
            # Only the run's own timer is a timeout exit: a TimeoutError a provider raised (a
            # blocking SDK's socket timeout) is an error, as any other exception.
            if timer is None or not timer.expired():
                raise
            stop = Stop("timeout", f"the run took longer than run_timeout={agent.run_timeout}s")
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if not agent.cancel_requested or task is None:
                raise
            task.uncancel()
            stop = Stop("cancelled", "agent.cancel() was called")
    except ToolAborted as exc:
        error = exc.original
        raise error from None
    except BaseException as exc:
        error = exc
        raise
    finally:
        _answer_every_call(run, stop.reason if stop else f"error: {type(error).__name__}")
        if error is not None:
            await _finish(run, _failed(run, first_new, error))
    assert stop is not None
    text = final_text(run, stop)
    # Only an exit that delivers an answer has an output: an answer sent back, refused or
    # broken by a rewrite stays in loop_state but must not reach the caller.
    output: Any = (run.loop_state.output if stop.is_answer else None) if run.output is not None else text
    answer = stop.answer
    rewritten = run.loop_state.rewritten_answer
    if rewritten is not None:
        text, output, answer = rewritten.text, rewritten.output, rewritten.answer
    detail = stop.detail
    if not stop.is_answer and stop.reason != "cancelled" and hooks.implements(hookspecs.wrap_up):
        try:
            message = await _wrap_up(run, stop, deadline)
            if message is not None and message.tool_calls:  # the run is over: a call would never get its result
                message = attrs.evolve(message, tool_calls=()) if message.content else None
            if message is not None:
                run.append(message)
                text = message.content or None
                output = wrapped_up_output(run.output, text)
                if hooks.implements(hookspecs.check_answer):
                    text, output, detail = await check_wrap_up(run, stop, text, output)
        except BaseException as exc:
            # Past the loop's finally (a check_answer that raised, a cancel from outside): the
            # run still ends with run_end and after_run, as after any other failure.
            await _finish(run, _failed(run, first_new, exc))
            raise
    result: RunResult[Any] = RunResult(
        stop=stop.reason,
        text=text,
        answer=answer,
        ok=stop.is_answer,
        turns=run.turn,
        usage=run.usage,
        usage_by_model=dict(run.usage_by_model),
        messages=tuple(run.transcript[first_new:]),
        detail=detail,
        run_id=run.run_id,
        output=output,
        output_type=run.output.type if run.output is not None else None,
    )
    await _finish(run, result)
    return result


def _failed(run: RunContext, first_new: int, error: BaseException) -> RunResult[Any]:
    return RunResult(
        stop="error",
        text=None,
        turns=run.turn,
        usage=run.usage,
        usage_by_model=dict(run.usage_by_model),
        messages=tuple(run.transcript[first_new:]),
        detail=f"{type(error).__name__}: {error}",
        run_id=run.run_id,
        error=error,
    )


async def _wrap_up(run: RunContext, stop: Stop, deadline: float | None) -> Message | None:
    """The best-effort final message, within what is left of run_timeout (or a short grace
    when the run ran out of it). Whatever goes wrong, the limit's result stands."""
    agent = run.agent
    loop = asyncio.get_running_loop()
    if deadline is not None and deadline <= loop.time():
        deadline = loop.time() + (agent.turn_timeout or WRAP_UP_GRACE)
    try:
        async with asyncio.timeout_at(deadline):
            return await agent.hooks.wrap_up(run, stop)
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if not agent.cancel_requested or task is None:
            raise
        task.uncancel()
        log.info("wrap-up cancelled by agent.cancel(); keeping the %s result", stop.reason)
    except TimeoutError:
        log.warning("wrap-up ran out of time; keeping the %s result", stop.reason)
    except Exception:
        log.warning("wrap_up failed; keeping the %s result", stop.reason, exc_info=True)
    return None


async def _finish(run: RunContext, result: RunResult) -> None:
    hooks = run.agent.hooks
    if run.wants_events:
        error = result.detail if result.error is not None else None
        delivering = run._emit(run, RunEnd(run.run_id, result.stop, result.turns, result.usage, error))
        if delivering is not None:
            await delivering
    if hooks.implements(hookspecs.after_run) and type(ran := hooks.callers["after_run"](run, result)) is CoroutineType:
        await ran


async def _turns(run: RunContext) -> Stop:
    """Turns until one ends the run; an answer passes ``check_answer`` first."""
    agent = run.agent
    hooks = agent.hooks
    rounds = Rounds()
    while True:
        if run.turn >= agent.max_turns:
            return Stop("max_turns", f"no answer after {plural(agent.max_turns, 'turn')} (max_turns={agent.max_turns})")
        if agent.cancel_requested:
            raise asyncio.CancelledError
        stop = await _turn(run, rounds)
        if stop is not None and stop.is_answer and hooks.implements(hookspecs.check_answer):
            judged: Any = check_answer(run, stop, rounds)
            stop = await judged if type(judged) is CoroutineType else judged
        if stop is not None:
            return stop


async def _turn(run: RunContext, rounds: Rounds) -> Stop | None:
    """One model call and the tools it asked for; the exit it leads to, or None to go on."""
    agent = run.agent
    hooks = agent.hooks
    spec = run.output
    run.turn += 1
    if hooks.implements(hookspecs.before_turn):
        answer = hooks.callers["before_turn"](run)
        stop: Stop | None = await answer if type(answer) is CoroutineType else answer
        if stop is not None:
            return stop
    if run.wants_events and (delivering := run._emit(run, TurnStart(run.run_id, run.turn))) is not None:
        await delivering
    request = run.last_request = await _build_request(run)
    try:
        reply = await call_model(run, request)
    except ContextTooLong as exc:
        reply = await _call_refitted(run, exc)
    if len(reply.message.tool_calls) > 1:
        reply = attrs.evolve(reply, message=unique_call_ids(reply.message))
    reply = _as_unicode_reply(reply)
    message = reply.message
    run.append(message)
    if run.wants_events and (delivering := run._emit(run, AssistantMessage(run.run_id, run.turn, message, reply.finish_reason, reply.model))) is not None:
        await delivering
    results: tuple[ToolResult, ...] = ()
    answered: Any = NO_ANSWER
    problem = ""
    if message.tool_calls:
        if reply.finish_reason == "length":
            results = tuple(cut_off(call) for call in message.tool_calls)
            for result in results:
                run.append(result.to_message())
        elif spec is not None and spec.mode == "tool" and any(c.name == OUTPUT_TOOL for c in message.tool_calls):
            others = tuple(c for c in message.tool_calls if c.name != OUTPUT_TOOL)
            results = await run_tools(run, others) if others else ()
            for call in message.tool_calls:
                if call.name == OUTPUT_TOOL:
                    result, answered, problem = take_answer(spec, call, answered, problem)
                    run.append(result.to_message())
                    results += (result,)
        else:
            results = await run_tools(run, message.tool_calls)
    turn = Turn(run.turn, reply, results)
    if hooks.implements(hookspecs.after_turn) and type(ran := hooks.callers["after_turn"](run, turn)) is CoroutineType:
        await ran
    if run.wants_events and (delivering := run._emit(run, TurnEnd(run.run_id, run.turn, reply.usage))) is not None:
        await delivering
    if spec is None:
        if not message.tool_calls:
            return Stop("end_turn", is_answer=True)
    elif answered is not NO_ANSWER:
        run.loop_state.output = answered
        return Stop("end_turn", is_answer=True)
    elif not message.tool_calls and reply.finish_reason != "length":
        if spec.mode == "tool":
            problem = spec.missing_tool_prompt()
            run.append(Message.user(problem))
        else:
            try:
                run.loop_state.output = spec.parse_text(message.content)
                return Stop("end_turn", is_answer=True)
            except OutputInvalid as exc:
                problem = str(exc)
                run.append(Message.user(spec.repair_prompt(problem)))
    elif not message.tool_calls:
        problem = "The answer was cut off by the output length limit."
        run.append(Message.user(spec.repair_prompt(problem + " Give it again, shorter.")))
    if problem:
        return count_invalid(run, rounds, problem)
    if not hooks.implements(hookspecs.should_stop):
        return None
    answer = hooks.callers["should_stop"](run, turn)
    stop = await answer if type(answer) is CoroutineType else answer
    if stop is not None and spec is not None and stop.is_answer:
        try:
            run.loop_state.output = spec.check_tool_input(stop.answer)
        except OutputInvalid as exc:
            problem = f"{exc} (the input of the tool that ends the run is the answer)"
            run.append(Message.user(spec.repair_prompt(problem)))
            return count_invalid(run, rounds, problem)
    return stop


async def _build_request(run: RunContext) -> ModelRequest:
    agent = run.agent
    hooks = agent.hooks
    system_prompt = run.system_prompt
    if hooks.implements(hookspecs.system_prompt_sections):
        answer = hooks.callers["system_prompt_sections"](run)
        sections: list[str] = await answer if type(answer) is CoroutineType else answer
        if sections:
            system_prompt = "\n\n".join([system_prompt, *sections]) if system_prompt else "\n\n".join(sections)
    spec = run.output
    request = ModelRequest(
        messages=tuple(run.messages),
        system_prompt=system_prompt,
        tools=(*agent.tool_specs, spec.tool) if spec is not None and spec.mode == "tool" else agent.tool_specs,
        tool_choice=agent.tool_choice,
        settings=agent.settings,
        stream=run.wants_deltas,
        output_schema=spec.schema if spec is not None and spec.mode == "native" else None,
    )
    if hooks.implements(hookspecs.compact_history):
        # The window once known, without a coroutine per request (compaction is a default plugin).
        window = agent._window if agent._window_known else await agent.context_window()
        answer = hooks.callers["compact_history"](run, request, window)
        compacted: Compacted | None = await answer if type(answer) is CoroutineType else answer
        if compacted is not None:
            run.messages[:] = compacted.messages
            request = attrs.evolve(request, messages=tuple(compacted.messages))
            if run.wants_events and (delivering := run._emit(run, CompactionDone(run.run_id, compacted.tokens_before, compacted.tokens_after, compacted.removed))) is not None:
                await delivering
    if hooks.implements(hookspecs.before_provider_call):
        answer = hooks.callers["before_provider_call"](run, request)
        request = await answer if type(answer) is CoroutineType else answer
    return request


async def _call_refitted(run: RunContext, error: ContextTooLong) -> ModelReply:
    """After a request longer than a window nobody knew: learn the window the server named,
    rebuild the request (``compact_history`` shrinks the history to it) and call once more.
    Any other case fails as it came, or, with no window to learn, saying how to give one."""
    agent = run.agent
    if agent._window is not None or not agent.hooks.implements(hookspecs.compact_history):
        raise error  # a known window (the history was already kept under it), or nothing to shrink it
    window = error.window
    if window is None:
        raise ContextTooLong(
            f"{error}. The model's context window is unknown and this error does not say it: set context_window = TOKENS "
            "in bandoneon.toml or pass Agent(context_window=...) so that the history is shrunk to fit it",
            status=error.status,
            provider=error.provider,
        ) from error
    log.warning(
        "%s: the server named its context window in an error (none was known): the history is shrunk to %d tokens from now "
        "on; context_window = %d in bandoneon.toml or Agent(context_window=...) skips this refused request next time",
        model_id(run.provider),
        window,
        window,
    )
    agent._window, agent._window_known = window, True
    request = run.last_request = await _build_request(run)
    try:
        return await call_model(run, request)
    except ContextTooLong as again:
        raise ContextTooLong(
            f"{again}. The history was shrunk to the {window:,}-token window the server named and still did not fit (what "
            "compaction keeps is too long, or its token count is low for this model): set a smaller context_window = TOKENS "
            "in bandoneon.toml or pass Agent(context_window=...)",
            window=again.window,
            status=again.status,
            provider=again.provider,
        ) from again


async def call_model(run: RunContext, request: ModelRequest, *, side: bool = False) -> ModelReply:
    """Call the provider, retrying as the ``retry_delay`` hook says; count the usage.
    ``side``: a plugin's call for the run, not a turn's (``RunContext.call_model``)."""
    agent = run.agent
    hooks = agent.hooks
    attempt = 0
    while True:
        attempt += 1
        if run.wants_events and (delivering := run._emit(run, ProviderRequest(run.run_id, run.turn, request, attempt, side))) is not None:
            await delivering
        streamed = DeltaForwarder(run) if request.stream else None
        try:
            call = run.provider.complete(request, on_delta=streamed)
            if agent.turn_timeout is None:
                reply = await call
            else:
                try:
                    async with asyncio.timeout(agent.turn_timeout) as timer:
                        reply = await call
                except TimeoutError:
                    if not timer.expired():
                        raise  # the provider's own TimeoutError: an error, not turn_timeout
                    raise _TurnTimeout from None
        except ProviderError as exc:
            if streamed is not None and streamed.delivered and not isinstance(exc, StreamInterrupted):
                raise StreamInterrupted(f"the reply stream broke after part of it was shown: {exc}", partial_text=streamed.text) from exc
            decision = await hooks.retry_delay(run, exc, attempt) if hooks.implements(hookspecs.retry_delay) else None
            if decision is None:
                following = _next_model(run, exc)
                if following is None:
                    raise
                if run.wants_events and (delivering := run._emit(run, ModelFallback(run.run_id, run.turn, model_id(run.provider), model_id(following), str(exc)))) is not None:
                    await delivering
                log.warning("%s failed after %d attempt(s) (%s); falling back to %s", model_id(run.provider), attempt, exc, model_id(following))
                run.provider, attempt = following, 0
                continue
            if run.wants_events and (delivering := run._emit(run, ProviderRetry(run.run_id, run.turn, attempt, decision.max_attempts, decision.delay, str(exc)))) is not None:
                await delivering
            await asyncio.sleep(decision.delay)
            continue
        if streamed is not None and streamed.unparsed:
            await streamed.finish()
        run.usage = run.usage + reply.usage
        key = model_id(run.provider)
        earlier = run.usage_by_model.get(key)
        run.usage_by_model[key] = reply.usage if earlier is None else earlier + reply.usage
        return reply


def _as_unicode_reply(reply: ModelReply) -> ModelReply:
    """``reply`` with no lone surrogate in its text (``as_unicode``; the same reply when it has
    none). JSON from a server has them replaced as it is parsed, but a provider of another kind
    (an embedded model, a third party's, a test double) may hand one over, and no store could
    write the history then."""
    message = reply.message
    if message.content.isascii() and not message.thinking and all(c.arguments.isascii() for c in message.tool_calls):
        return reply  # every turn but a rare one: nothing to look at, nothing built
    cleaned = map_texts(message, as_unicode)
    return reply if cleaned is message else attrs.evolve(reply, message=cleaned)


def model_id(provider: object) -> str:
    """``name:model`` of a provider, as events, logs and ``usage_by_model`` name it."""
    return f"{getattr(provider, 'name', type(provider).__name__)}:{getattr(provider, 'model', '')}"


def _next_model(run: RunContext, error: ProviderError) -> Provider | None:
    """The model after the current one, for an error a retry might fix (never a 4xx or a
    broken reply: another model would be asked the same wrong thing)."""
    if not error.retryable:
        return None
    models = run.agent.models
    for index, provider in enumerate(models[:-1]):
        if provider is run.provider:
            return models[index + 1]
    return None


class _TurnTimeout(TimeoutError):
    """One model call outlived ``turn_timeout``: the watchdog ends the run as a timeout."""


def _answer_every_call(run: RunContext, reason: str) -> None:
    """Keep the history valid after any exit: give every unanswered tool call a result."""
    pending = run.loop_state.pending_results
    for index in range(len(run.messages) - 1, -1, -1):
        message = run.messages[index]
        if message.role == "assistant":
            break
    else:
        return
    if not message.tool_calls:
        return
    # Only the results after this message count: servers that number calls per message
    # (call_0, call_1...) reuse ids across turns.
    answered = {m.tool_call_id for m in run.messages[index + 1 :] if m.role == "tool"}
    for call in message.tool_calls:
        if call.id in answered:
            continue
        done = pending.get(call.id)
        if done is None:
            done = ToolResult(call, f"{call.name} did not run: the run ended first ({reason}).", is_error=True)
        run.append(done.to_message())
