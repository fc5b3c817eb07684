"""Images in a prompt: ask about a picture, and a document beside it.

The image travels inline (base64) to an OpenAI-compatible server or Anthropic; a model that
cannot read images is refused before anything is sent. Run it against a vision model
(``BANDONEON_MODEL=ollama:llava``, ``openai:gpt-4o-mini``) with a picture of your own::

    BANDONEON_MODEL=ollama:llava python examples/images.py receipt.png
"""

from __future__ import annotations

import sys
from pathlib import Path

import bandoneon


def build_agent(model=None) -> bandoneon.Agent:
    return bandoneon.Agent(
        model,
        system_prompt="You read receipts. Answer with the total and the shop, in one line.",
        max_turns=2,
        context_files=False,
    )


def main(model=None, picture: str | Path = "receipt.png") -> bandoneon.RunResult:
    agent = build_agent(model)
    result = agent.run_sync(["What is the total on this receipt, and from which shop?", bandoneon.ImagePart.from_path(picture)])
    sent = agent.messages[0]
    for part in sent.parts:
        print(f"sent: {bandoneon.describe_part(part)}")
    print(f"answer: {result.text}")
    return result


if __name__ == "__main__":
    main(picture=sys.argv[1] if len(sys.argv) > 1 else "receipt.png")
