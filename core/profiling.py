"""``bandoneon plugins --profile PROMPT``: one scripted run, and what each plugin's hooks cost in it.

The run needs no model: a scripted one asks for one tool call and then answers, so the loop's
every hook point is passed (turns, the provider call, the tool call, the run's start and end).
"""

from __future__ import annotations

from collections.abc import Sequence

from .agent import Agent
from .config import load_config
from .hooktiming import HookProfile
from .plugins import build_plugin, configured_plugins, load_plugin
from .tools import tool

__all__ = ["profile_plugins"]


def _script(request: object) -> object:
    from .testing import call

    messages = getattr(request, "messages", ())
    if not any(message.role == "tool" for message in messages):
        return call("echo", text=messages[-1].content if messages else "")
    return "Profiled: the prompt went through one tool call and back."


@tool
def echo(text: str) -> str:
    """Say the text back (the profile run's one tool call).

    Args:
        text: any text
    """
    return text


def profile_plugins(prompt: str, *, also: Sequence[str] = (), config: str | None = None) -> HookProfile:
    """Run ``prompt`` once with a scripted model, the plugins an agent gets by default (and the
    configuration's, and ``also``), and return the hook time per plugin."""
    from .testing import FunctionModel

    settings = load_config(config)
    plugins = configured_plugins(settings.plugins, source=settings.source)
    plugins += [build_plugin(load_plugin(name)) for name in also]
    # A window, so that a compaction plugin does its real work instead of switching itself off.
    agent = Agent(FunctionModel(_script, model="profile", context_window=32_000), tools=[echo], plugins=plugins, context_files=False, config=settings)
    profile = agent.profile_hooks()
    agent.run_sync(prompt)
    return profile
