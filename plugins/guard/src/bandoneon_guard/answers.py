"""The final answer's text as ``check_answer`` cleans it (redactions, off-list links).

A typed answer's text is JSON: each string in it is cleaned on its own, so a replacement
cannot break the JSON and the checked object carries the cleaned text.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import bandoneon

__all__ = ["clean_answer"]


def clean_answer(text: str, clean: Callable[[str], str], *, is_typed: bool) -> str:
    """``clean`` applied to the answer: to every string value of a typed answer's JSON (the
    whole text when it is not JSON), else to the whole text. Unchanged text is returned as is."""
    if not is_typed:
        return clean(text)
    try:
        document = bandoneon.loads_bounded(text)  # the model's text: it may nest without end
    except ValueError:
        return clean(text)
    changed = False

    def walk(value: Any) -> Any:
        nonlocal changed
        if isinstance(value, str):
            cleaned = clean(value)
            changed = changed or cleaned != value
            return cleaned
        if isinstance(value, list):
            return [walk(item) for item in value]
        if isinstance(value, dict):
            return {key: walk(item) for key, item in value.items()}
        return value

    cleaned = walk(document)
    return json.dumps(cleaned, ensure_ascii=False) if changed else text
