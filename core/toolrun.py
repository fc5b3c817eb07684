"""Running the tools the model asked for: authorise the calls in order, run the authorised
ones together, answer every call in call order. Failures the model can fix become error
results; refusals are results too, never exceptions.
"""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path
from types import CoroutineType
from typing import TYPE_CHECKING, Any

import attrs

from . import hookspecs
from .decisions import Refuse, Respond
from .errors import ToolError
from .events import ToolAnswered, ToolEnd, ToolRefused, ToolStart
from .masking import mask_error_message
from .messages import Message, ToolCall, ToolResult
from .tools import ArgumentsError, Tool

if TYPE_CHECKING:
    from .context import RunContext

__all__ = ["ToolAborted", "cut_off", "invoke_tool", "run_tools", "unique_call_ids"]

log = logging.getLogger("bandoneon.loop")


class ToolAborted(Exception):
    """A tool raised a ``BaseException`` (``SystemExit``, ``KeyboardInterrupt``...).

    Carried as an ordinary exception so it cannot escape the event loop half-way (asyncio
    re-raises those two out of ``run_until_complete`` and leaves the run's tasks pending);
    the loop cancels the sibling calls, answers every call, ends the run, then raises
    ``original``.
    """

    def __init__(self, original: BaseException):
        super().__init__(f"a tool raised {type(original).__name__}")
        self.original = original


def unique_call_ids(message: Message) -> Message:
    """The message with every tool-call id unique: a second call under an id already used in
    the message gets ``<id>_2`` (``_3``...), so each result answers exactly one call."""
    calls = message.tool_calls
    if len(calls) < 2 or len({c.id for c in calls}) == len(calls):
        return message
    seen: set[str] = set()
    renamed = []
    for call in calls:
        if call.id in seen:
            number = 2
            while f"{call.id}_{number}" in seen or any(c.id == f"{call.id}_{number}" for c in calls):
                number += 1
            call = attrs.evolve(call, id=f"{call.id}_{number}")
        seen.add(call.id)
        renamed.append(call)
    return attrs.evolve(message, tool_calls=tuple(renamed))


def cut_off(call: ToolCall) -> ToolResult:
    return ToolResult(
        call,
        f"Your call to {call.name} was cut off: the reply hit the output length limit before the "
        "arguments were complete, so it did not run. Call it again with shorter arguments.",
        is_error=True,
    )


async def run_tools(run: RunContext, calls: tuple[ToolCall, ...]) -> tuple[ToolResult, ...]:
    """Authorise the calls in order, run the authorised ones concurrently, answer in call order."""
    hooks = run.agent.hooks
    results: list[ToolResult | None] = [None] * len(calls)
    # Each result, once final (``_after``), is kept here too: a run that ends before this turn's
    # results reach the history (cancelled while another call runs) answers each call with its
    # own result, as stores that took it at ``tool_result_ready`` have it, not "did not run".
    pending = run.loop_state.pending_results
    pending.clear()
    to_run: list[tuple[int, ToolCall, Tool, dict[str, Any]]] = []
    for index, call in enumerate(calls):
        tool = run.tools.get(call.name)
        if tool is None:
            available = ", ".join(sorted(run.tools)) or "none"
            results[index] = await _answered(run, ToolResult(call, f"There is no tool named {call.name!r}. Available tools: {available}.", is_error=True), None)
            continue
        try:
            arguments = tool.validate(call.arguments, run.agent.json_limits)
        except ArgumentsError as exc:
            results[index] = await _answered(run, ToolResult(call, str(exc), is_error=True), tool)
            continue
        decision = hooks.callers["before_tool_execution"](run, call, tool, arguments) if hooks.implements(hookspecs.before_tool_execution) else None
        if type(decision) is CoroutineType:
            decision = await decision
        if decision is None and tool.needs_approval and not run.agent.handles_approvals:
            decision = Refuse(
                f"{tool.name} needs a person's approval and no approval channel is active in this agent, "
                "so it did not run. Do it another way or tell the user."
            )
        if decision is None:
            to_run.append((index, call, tool, arguments))
            continue
        if isinstance(decision, Refuse):
            if run.wants_events and (delivering := run._emit(run, ToolRefused(run.run_id, call, decision.reason))) is not None:
                await delivering
            results[index] = await _after(run, ToolResult(call, decision.reason, is_error=True, arguments=arguments, was_refused=True), tool)
        elif isinstance(decision, Respond):
            results[index] = await _answered(run, ToolResult(call, decision.content, is_error=decision.is_error, arguments=arguments), tool)
        else:
            raise TypeError(f"before_tool_execution must return None, Refuse or Respond, got {decision!r}")
    if len(to_run) == 1:
        index, call, tool, arguments = to_run[0]
        results[index] = await _run_one(run, call, tool, arguments, in_thread=False)
    elif to_run:
        for (index, *_), outcome in zip(to_run, await _run_together(run, to_run), strict=True):
            results[index] = outcome
    for finished in results:
        assert finished is not None
        run.append(finished.to_message())
    pending.clear()
    return tuple(results)  # type: ignore[arg-type]  # every slot is filled (asserted above)


async def _run_together(run: RunContext, to_run: list[tuple[int, ToolCall, Tool, dict[str, Any]]]) -> list[ToolResult]:
    """Run several calls at once (sync tools on worker threads, so they overlap too). If one
    fails the run (a hook raised), the others are cancelled before the error goes up."""
    limit = run.agent.max_tool_concurrency
    semaphore = asyncio.Semaphore(limit) if limit else None

    async def bounded(call: ToolCall, tool: Tool, arguments: dict[str, Any]) -> ToolResult:
        if semaphore is None:
            return await _run_one(run, call, tool, arguments, in_thread=True)
        async with semaphore:
            return await _run_one(run, call, tool, arguments, in_thread=True)

    tasks = [asyncio.ensure_future(bounded(call, tool, arguments)) for _, call, tool, arguments in to_run]
    try:
        return await asyncio.gather(*tasks)
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


async def _run_one(run: RunContext, call: ToolCall, tool: Tool, arguments: dict[str, Any], *, in_thread: bool) -> ToolResult:
    """One authorised call: run it (``invoke_tool``), pass the result through the hooks."""
    if run.wants_events and (delivering := run._emit(run, ToolStart(run.run_id, call, arguments))) is not None:
        await delivering
    started = time.perf_counter()
    try:
        content, is_error = await invoke_tool(run, tool, arguments, in_thread=in_thread)
    except asyncio.CancelledError:
        raise
    except BaseException as exc:
        raise ToolAborted(exc) from None
    result = ToolResult(call, content, is_error=is_error, arguments=arguments, duration=time.perf_counter() - started)
    result = await _after(run, result, tool)
    if run.wants_events and (delivering := run._emit(run, ToolEnd(run.run_id, call, result.content, result.is_error, result.duration))) is not None:
        await delivering
    return result


async def invoke_tool(run: RunContext, tool: Tool, arguments: dict[str, Any], *, in_thread: bool = False) -> tuple[str, bool]:
    """Run one authorised call as the loop does, and answer ``(content, is_error)``: within the
    tool's ``timeout`` (else the agent's ``tool_timeout``), a sync tool on a worker thread when
    ``in_thread`` or a time limit applies (so the limit can cut it), and a failure turned into
    the sentence the model reads: a ``ToolError``'s message, a timeout said as one, any other
    exception's message masked (``mask_error_message``; the traceback goes to the log). For
    whatever runs a tool outside a turn (``bandoneon mcp serve``) and must answer as a run would."""
    timeout = tool.timeout if tool.timeout is not None else run.agent.tool_timeout
    # Under a run deadline a sync tool runs on a worker thread too, so the deadline can cut it.
    in_thread = in_thread or timeout is not None or run.agent.run_timeout is not None
    deadline = None
    try:
        if timeout is None:
            return await tool.invoke(arguments, run, in_thread=in_thread), False
        async with asyncio.timeout(timeout) as deadline:
            return await tool.invoke(arguments, run, in_thread=True), False
    except ToolError as exc:
        return str(exc), True
    except Exception as exc:
        if isinstance(exc, TimeoutError) and deadline is not None and deadline.expired():
            return f"{tool.name} took longer than {timeout:g} seconds and was stopped. Try a smaller request.", True
        log.warning("tool %s raised", tool.name, exc_info=True)  # the full message and traceback stay here
        message = mask_error_message(str(exc), project=run.agent.cwd or Path.cwd())
        return (f"{tool.name} failed: {message}" if message else f"{tool.name} failed ({type(exc).__name__})."), True


async def _answered(run: RunContext, result: ToolResult, tool: Tool | None) -> ToolResult:
    """A call answered without running (see ``ToolAnswered``): its result through the hooks,
    then announced."""
    result = await _after(run, result, tool)
    if run.wants_events and (delivering := run._emit(run, ToolAnswered(run.run_id, result.call, result.content, result.is_error))) is not None:
        await delivering
    return result


async def _after(run: RunContext, result: ToolResult, tool: Tool | None) -> ToolResult:
    """The result through the ``after_tool_execution`` chain, then announced as final."""
    hooks = run.agent.hooks
    if hooks.implements(hookspecs.after_tool_execution):
        answer = hooks.callers["after_tool_execution"](run, result.call, tool, result)
        result = await answer if type(answer) is CoroutineType else answer
    run.loop_state.pending_results[result.call.id] = result
    if hooks.implements(hookspecs.tool_result_ready) and type(ready := hooks.callers["tool_result_ready"](run, result)) is CoroutineType:
        await ready
    return result
