"""Reasoning models: see what the model thought, apart from what it answered.

vLLM, llama.cpp and DeepSeek send the reasoning in ``reasoning_content``, Ollama in
``reasoning``, and some servers leave a ``<think>...</think>`` block at the start of the text.
bandoneon keeps all three as the message's ``thinking``, streams them as ``thinking_delta``
events, and does not send them back (most servers refuse them). Try it with
``BANDONEON_MODEL=ollama:qwen3`` or ``vllm:deepseek-r1``.
"""

from __future__ import annotations

import asyncio

import bandoneon


async def main(model=None) -> bandoneon.Agent:
    agent = bandoneon.Agent(model, system_prompt="Answer in one line.", max_turns=2, context_files=False)
    async for event in agent.stream("Is 1001 a prime number?"):
        if event.name == "thinking_delta":
            print(f"\033[2m{event.text}\033[0m", end="", flush=True)
        elif event.name == "text_delta":
            print(event.text, end="", flush=True)
    print()
    answer = agent.messages[-1]
    print(f"thought {sum(len(t.text) for t in answer.thinking)} characters; answered: {answer.content!r}")
    return agent


if __name__ == "__main__":
    asyncio.run(main())
