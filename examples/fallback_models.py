"""Fallback models: when the big model's server keeps failing, a smaller one answers.

``Agent(model=[...])`` lists the model and its fallbacks. Errors worth retrying (429, 5xx, a
dropped connection) are retried first (the retry plugin); once a model's retries are spent the
next one takes over for the rest of the run. A 4xx never falls back: another model would be
asked the same wrong thing. Events, traces and ``RunResult.usage_by_model`` say who answered.

Run it with your models, the first one and its fallbacks (without any, vLLM's Qwen on
localhost:8000, then Ollama's llama3.1)::

    python examples/fallback_models.py vllm:Qwen2.5-72B-Instruct ollama:llama3.1
"""

from __future__ import annotations

import sys

import bandoneon


def build_agent(models: list[str] | None = None) -> bandoneon.Agent:
    return bandoneon.Agent(
        models or ["vllm:Qwen2.5-72B-Instruct", "ollama:llama3.1"],
        system_prompt="Answer in one line.",
        plugins={"retry": {"max_attempts": 2, "base_delay": 0.2}},
        max_turns=3,
        context_files=False,
    )


def main(models: list[str] | None = None) -> bandoneon.RunResult:
    agent = build_agent(models)
    agent.on("model_fallback", lambda e: print(f"{e.from_model} failed ({e.error}); {e.to_model} takes over"))
    result = agent.run_sync("What is the capital of Uruguay?")
    print(f"answer: {result.text}")
    for model, usage in result.usage_by_model.items():
        print(f"  {model}: {usage.requests} call(s), {usage.total_tokens} tokens")
    return result


if __name__ == "__main__":
    main(sys.argv[1:] or None)
