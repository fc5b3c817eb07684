"""The optional third step: the model writes a summary to stand in for the dropped exchanges.

A summary keeps the meaning but can quietly lose the one number that mattered, so the prompt
names what must survive: ids, numbers, decisions. The summary is an assistant message right
after the first request (a user message would count as a request for ``keep_recent_turns``).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import bandoneon

__all__ = ["SUMMARY_PREFIX", "SUMMARY_PROMPT", "summarise"]

log = logging.getLogger("bandoneon_compaction")

SUMMARY_PREFIX = "[Summary of the earlier conversation, written to save context]\n"

SUMMARY_PROMPT = """\
Summarise the part of a conversation below. Your summary replaces those messages, so the \
assistant will only know what you keep. Keep, exactly as written: every id and reference \
(orders, parts, accounts, files, tickets), every number, amount, date and quantity, every \
decision taken and every promise made, and what each tool result established. Say what is \
still open. Leave out greetings, small talk and reasoning. Write short factual lines, no \
preamble."""


#: The summariser reads at most this much of each tool result: the start is where the facts are.
RESULT_CHARS = 2_000


def render(messages: Sequence[bandoneon.Message], max_chars: int) -> str:
    """The dropped messages as plain text for the summariser, the newest part clipped if too long."""
    lines = []
    for message in messages:
        if message.role == "tool":
            content = message.content if len(message.content) <= RESULT_CHARS else message.content[:RESULT_CHARS] + " [...]"
            lines.append(f"tool {message.name or ''} result: {content}")
            continue
        text = f"{message.role}: {message.content}" if message.content else f"{message.role}:"
        for call in message.tool_calls:
            text += f" [called {call.name}({call.arguments})]"
        lines.append(text)
    transcript = "\n".join(lines)
    return transcript if len(transcript) <= max_chars else transcript[:max_chars] + "\n[...]"


async def summarise(
    run: bandoneon.RunContext, dropped: Sequence[bandoneon.Message], *, max_tokens: int, input_chars: int
) -> bandoneon.Message | None:
    """Ask the run's model for the summary; None (and a log line) when the call fails.

    A failure covers provider errors that retrying did not fix and the agent's
    ``turn_timeout`` cutting this call: either way the exchanges go without a summary and
    the run goes on, rather than the whole run failing for a side call.
    """
    request = bandoneon.ModelRequest(
        messages=(bandoneon.Message.user(SUMMARY_PROMPT + "\n\n<conversation>\n" + render(dropped, input_chars) + "\n</conversation>"),),
        system_prompt="You write faithful summaries of conversations for an assistant's memory.",
        settings={"max_tokens": max_tokens},
    )
    try:
        reply = await run.call_model(request)
    except (bandoneon.ProviderError, TimeoutError) as exc:
        reason = str(exc) or f"it took longer than turn_timeout={run.agent.turn_timeout}s"
        log.warning("compaction: the summary call failed (%s); the old exchanges are dropped without a summary", reason)
        return None
    text = reply.message.content.strip()
    if not text:
        return None
    return bandoneon.Message.assistant(SUMMARY_PREFIX + text)
