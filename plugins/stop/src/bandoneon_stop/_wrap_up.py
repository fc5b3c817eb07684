"""The wrap-up: one last model call, tools off, asking for the best answer from what was found.

The partial work of a run that hit a limit is the reason to have run at all; a wrap-up turns
it into text the caller can show, while ``RunResult.stop`` still names the limit.
"""

from __future__ import annotations

import logging

import attrs

import bandoneon

log = logging.getLogger("bandoneon_stop")

_LIMITS = {
    "max_turns": "you have used all the turns you were given",
    "budget": "the run has used its budget",
    "timeout": "the run has run out of time",
    "error_streak": "the tools kept failing",
}


def wrap_up_request(run: bandoneon.RunContext, last: bandoneon.ModelRequest | None, stop: bandoneon.Stop, instruction: str) -> bandoneon.ModelRequest:
    """The run's working history plus the instruction, with no tools offered.

    ``last`` is the last request the run sent (its system prompt carries every plugin's
    sections and the context files); without one the agent's own prompt is used.
    """
    why = _LIMITS.get(stop.reason, f"the run hit a limit ({stop.reason})")
    ask = bandoneon.Message.user(f"[{why}] {instruction}")
    messages = (*run.messages, ask)
    if last is None:
        agent = run.agent
        system_prompt = "\n\n".join(p for p in (agent.system_prompt, agent.append_system_prompt) if p)
        return bandoneon.ModelRequest(messages=messages, system_prompt=system_prompt, settings=agent.settings, stream=run.wants_deltas)
    return attrs.evolve(last, messages=messages, tools=(), tool_choice=None)


async def wrap_up_message(run: bandoneon.RunContext, request: bandoneon.ModelRequest) -> bandoneon.Message | None:
    """Ask once; return the assistant's text as a message, or None when there is none.

    A failure here must not cost the run its result: the limit is reported either way, so a
    provider error is logged and the run ends without the wrap-up. Tool calls in the reply are
    dropped (no tools were offered, and a call without a result would break the history).
    """
    try:
        reply = await run.call_model(request)
    except Exception as exc:  # the run's own result matters more than the wrap-up
        log.warning("wrap-up call failed, the run ends without it: %s: %s", type(exc).__name__, exc)
        return None
    text = reply.message.content.strip()
    if not text:
        return None
    return bandoneon.Message.assistant(text)
