"""Token counting: how big a request is, estimated well enough to decide when to compact.

The default is the track's rule of thumb, four characters per token. A real tokenizer plugs in
as any ``count_tokens(text) -> int`` callable, or as a ``"module:function"`` import path (what
``bandoneon.toml`` can hold).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

import bandoneon

__all__ = ["IMAGE_TOKENS", "MESSAGE_OVERHEAD", "TokenCount", "estimate_tokens", "fixed_tokens", "message_tokens", "resolve_counter"]

TokenCount = Callable[[str], int]

#: Tokens a message costs beyond its text (role, separators), as chat templates spend them.
MESSAGE_OVERHEAD = 4
#: What one image is counted as: OpenAI bills a 512x512 tile at 170 tokens plus 85, and a
#: photo is a few tiles; Anthropic's (width x height / 750) lands in the same range.
IMAGE_TOKENS = 765


def estimate_tokens(text: str) -> int:
    """About four characters per token, rounded up: the default counter."""
    return -(-len(text) // 4)


def resolve_counter(option: Any) -> TokenCount:
    """The counter an option names: None (the default), a callable, or ``"module:function"``."""
    if option is None:
        return estimate_tokens
    if callable(option):
        return option
    if isinstance(option, str) and ":" in option:
        found = bandoneon.import_object(option, what="compaction: count_tokens")
        if not callable(found):
            raise bandoneon.ConfigError(f"compaction: count_tokens={option!r} is not callable")
        return found
    raise bandoneon.ConfigError(
        f"compaction: count_tokens must be a callable count_tokens(text) -> int or a 'module:function' path, got {option!r}"
    )


def message_tokens(message: bandoneon.Message, count: TokenCount) -> int:
    """What one message costs: its text, its tool calls, its reasoning, its images and files
    (``IMAGE_TOKENS`` each; a file's bytes at four per token), and a fixed overhead."""
    tokens = MESSAGE_OVERHEAD + (count(message.content) if message.content else 0)
    for call in message.tool_calls:
        tokens += count(call.name) + count(call.arguments) + MESSAGE_OVERHEAD
    for block in message.thinking:
        tokens += count(block.text)
    for part in message.parts:  # the words are already counted in content
        if isinstance(part, bandoneon.ImagePart):
            tokens += IMAGE_TOKENS
        elif isinstance(part, bandoneon.FilePart):
            tokens += -(-len(part.data) // 4)
    return tokens


def fixed_tokens(request: bandoneon.ModelRequest, count: TokenCount) -> int:
    """What every request carries besides the history: the system prompt and the tool schemas."""
    return system_tokens(request.system_prompt, count) + tool_tokens(request.tools, count)


def system_tokens(system_prompt: str, count: TokenCount) -> int:
    return count(system_prompt) + MESSAGE_OVERHEAD if system_prompt else 0


def tool_tokens(tools: Iterable[bandoneon.ToolSpec], count: TokenCount) -> int:
    return sum(_spec_tokens(spec, count) for spec in tools)


#: What each tool card costs, by card and counter: a tool's card is one object for every agent
#: it is given to, and a new agent per run would otherwise encode every schema again. Keyed by
#: ids (a counter may be an unhashable object's method); the card and the counter are kept with
#: the count, so their ids cannot be reused while the entry lives. Cleared when full.
_spec_sizes: dict[tuple[int, int], tuple[bandoneon.ToolSpec, TokenCount, int]] = {}
_SPEC_SIZES_KEPT = 1024


def _spec_tokens(spec: bandoneon.ToolSpec, count: TokenCount) -> int:
    key = (id(spec), id(count))
    found = _spec_sizes.get(key)
    if found is not None and found[0] is spec and found[1] is count:
        return found[2]
    schema = json.dumps(spec.parameters, separators=(",", ":"), sort_keys=True, default=str)
    tokens = count(spec.name) + count(spec.description) + count(schema) + MESSAGE_OVERHEAD
    if len(_spec_sizes) >= _SPEC_SIZES_KEPT:
        _spec_sizes.clear()
    _spec_sizes[key] = (spec, count, tokens)
    return tokens
